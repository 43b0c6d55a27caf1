"""How a sweep's benchmark processes are launched: one node or many (a DeepSpeed hostfile), the
DeepSpeed launcher or none for one GPU, and which GPUs each process gets. Pure functions of the
settings; sweep/plan.py plans with them."""
import re


def parse_hostfile(text: str) -> list[tuple[str, int]]:
    """[(host, slots)] from DeepSpeed's hostfile format; ValueError names the bad line."""
    hosts = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"(\S+)\s+slots\s*=\s*(\d+)", line)
        if not match or int(match.group(2)) < 1:
            raise ValueError(f"line {number} {raw.strip()!r}: expected 'hostname slots=N'")
        hosts.append((match.group(1), int(match.group(2))))
    if not hosts:
        raise ValueError("no hosts in it")
    return hosts


def gpus_problem(requested: int, visible: int, dry_run: bool, multi_node: bool, cpu_count: int) -> str | None:
    """GPUS above what this node sees, or without a GPU (the launcher then runs CPU ranks over
    gloo) above its cores; only checkable for a real run on this node."""
    if dry_run or multi_node:
        return None
    if visible == 0:
        return None if requested <= cpu_count else (
            f"GPUS={requested}: no GPU here, so {requested} CPU ranks, on {cpu_count} cores; "
            f"use at most {cpu_count}")
    if requested <= visible:
        return None
    return f"GPUS={requested}: only {visible} GPU(s) visible on this node"


def launch_argv(python: str, script: str, gpus: int, hostfile: str, master_addr: str,
                master_port: int | None, include: str | None) -> list[str]:
    """The command of one benchmark process: `deepspeed [--hostfile H --master_addr A]
    --num_gpus N [--master_port P] benchmark.py`, with the launcher run as a module of this
    interpreter (the venv's) rather than whichever `deepspeed` is first on PATH.

    One GPU on one node needs no launcher: benchmark.py makes a world of one itself.
    """
    if not hostfile and gpus == 1:
        return [python, "-u", script]
    argv = [python, "-u", "-m", "deepspeed.launcher.runner"]
    if hostfile:
        argv += ["--hostfile", hostfile]
        if master_addr:
            argv += ["--master_addr", master_addr]
    if include:
        argv += ["--include", include]
    elif gpus:
        argv += ["--num_gpus", str(gpus)]
    if master_port:
        argv += ["--master_port", str(master_port)]
    return argv + [script]


def select_devices(visible: str | None, gpus: int) -> tuple[str | None, str | None]:
    """(launcher --include, child CUDA_VISIBLE_DEVICES) honouring the user's
    CUDA_VISIBLE_DEVICES on one node.

    The launcher given --num_gpus N drops CUDA_VISIBLE_DEVICES and takes GPUs 0..N-1, so
    the chosen GPUs go to --include instead and the child's variable is removed ("").
    With one GPU (no launcher) the variable is kept, cut to its first entry. Fewer entries
    than GPUs (a DRY_RUN for a bigger node): --num_gpus as asked.
    """
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if len(entries) < max(gpus, 1):
        return None, None
    entries = entries[:gpus]
    if gpus == 1:
        return None, entries[0]
    if not all(e.isdigit() for e in entries):
        raise ValueError(f"CUDA_VISIBLE_DEVICES={visible!r}: the DeepSpeed launcher takes GPU "
                         f"indices, not UUIDs")
    return "localhost:" + ",".join(entries), ""
