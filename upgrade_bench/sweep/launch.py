"""How a sweep's benchmark processes are launched: one node or many (a DeepSpeed hostfile), the
launcher of the run's ENGINE (DeepSpeed's for deepspeed, torchrun for fsdp2) or none for one GPU,
and which GPUs each process gets. Pure functions of the settings; sweep/plan.py plans with them."""
import re
import shlex


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
    """The command of one benchmark process on DeepSpeed: `deepspeed [--hostfile H --master_addr A]
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


# pdsh's fan-out, as DeepSpeed's own pdsh runner sets it: every node at once.
PDSH_FAN_OUT = 1024
# Variables a pdsh-started torchrun gets from this node besides the settings, as DeepSpeed's pdsh
# runner forwards them (its EXPORT_ENVS): NCCL's, Python's and UCX's.
FORWARDED_PREFIXES = ("NCCL", "PYTHON", "UCX")


def torchrun_argv(python: str, script: str, gpus: int, hosts: list, master_addr: str, master_port: int | None,
                  node_env: list, cwd: str) -> list[str]:
    """The command of one benchmark process on FSDP2: torchrun (`torch.distributed.run`, a module
    of this interpreter) with `gpus` ranks per node. One node: `--standalone` (torchrun finds a
    free port) or the port given. Several (`hosts` of a hostfile): pdsh starts torchrun on each
    host, as DeepSpeed's launcher starts its own there (pdsh + passwordless ssh, a shared
    filesystem), with the `node_env` lines exported and pdsh's %n as the node's rank.

    One GPU on one node needs no launcher: benchmark.py makes a world of one itself.
    """
    if not hosts and gpus == 1:
        return [python, "-u", script]
    run = [python, "-u", "-m", "torch.distributed.run", "--nnodes", str(max(len(hosts), 1)),
           "--nproc-per-node", str(gpus)]
    if not hosts:
        return run + (["--master-port", str(master_port)] if master_port else ["--standalone"]) + [script]
    run += ["--node-rank", "%n", "--master-addr", master_addr or hosts[0][0],
            "--master-port", str(master_port or 29500), script]
    exports = "".join(f"export {shlex.quote(line)}; " for line in node_env)
    remote = f"{exports}cd {shlex.quote(cwd)}; " + " ".join(a if a == "%n" else shlex.quote(a) for a in run)
    return ["pdsh", "-S", "-f", str(PDSH_FAN_OUT), "-w", ",".join(host for host, _ in hosts), remote]


# torchrun's summary of a failed rank: "  exitcode  : 3 (pid: 22711)"
TORCHRUN_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")


def rank_exit_code(exit_code: int | None, stderr_tail: list) -> int | None:
    """The exit code of a torchrun-launched process as its ranks meant it: torchrun itself ends
    with 1 whatever they ended with (3 for an OOM, 2 for bad input, ...), and names each failed
    rank's code in its summary, the root cause's last."""
    codes = [int(m.group(1)) for line in stderr_tail if (m := TORCHRUN_EXITCODE.match(line))]
    return codes[-1] if exit_code == 1 and codes and codes[-1] > 0 else exit_code


def torchrun_hosts_problem(hosts: list, gpus: int) -> str | None:
    """torchrun starts the same number of ranks on every node: GPUS=0 takes the hostfile's slots,
    which must then agree."""
    slots = {n for _, n in hosts}
    if gpus or len(slots) <= 1:
        return None
    return (f"HOSTFILE: slots {', '.join(map(str, sorted(slots)))} differ between hosts, and torchrun "
            f"(ENGINE=fsdp2) starts as many ranks on each; set GPUS to the GPUs per node")


def select_devices(visible: str | None, gpus: int, engine: str = "deepspeed") -> tuple[str | None, str | None]:
    """(launcher --include, child CUDA_VISIBLE_DEVICES) honouring the user's
    CUDA_VISIBLE_DEVICES on one node.

    DeepSpeed's launcher given --num_gpus N drops CUDA_VISIBLE_DEVICES and takes GPUs 0..N-1, so
    the chosen GPUs go to --include instead and the child's variable is removed ("");
    torchrun keeps it (local rank i takes the i-th), so its child gets the chosen ones.
    With one GPU (no launcher) the variable is kept, cut to its first entry. Fewer entries
    than GPUs (a DRY_RUN for a bigger node): --num_gpus as asked.
    """
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if len(entries) < max(gpus, 1):
        return None, None
    entries = entries[:gpus]
    if gpus == 1:
        return None, entries[0]
    if engine != "deepspeed":
        return None, ",".join(entries)
    if not all(e.isdigit() for e in entries):
        raise ValueError(f"CUDA_VISIBLE_DEVICES={visible!r}: the DeepSpeed launcher takes GPU "
                         f"indices, not UUIDs")
    return "localhost:" + ",".join(entries), ""
