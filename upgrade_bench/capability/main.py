"""check_capabilities.py: can this GPU, with this software stack, do X? (the guide's first question)

Probes GPU 0 of this node with tiny real operations, not spec tables, and answers every
item with ok | unsupported_hardware | unsupported_stack | unavailable | error. The first
two differ for a purchase decision: hardware support no update will bring; stack
support an upgrade may (the error text says what failed).

  dtype         matmul in bf16, fp16, tf32, fp8 e4m3/e5m2 (torch._scaled_mm with per-tensor
                and row-wise scales), MX block-scaled fp8/fp4 and NVFP4
  attention     FA4, FA3, FA2 and the SDPA backends: installed, and a causal GQA fwd+bwd
                that matches an fp32 reference
  memory        HBM total, the largest single allocation, and the largest sequence length
                the guide's long-context config should fit (from a `capacity` record in
                CAPACITY_LOG, else the guide's estimate, labelled as such)
  interconnect  GPU count, NVLink/PCIe topology (NVML, nvidia-smi topo -m), NCCL version
  health        through NVML, every GPU of the node: power limit against its default, the PCIe
                link under load against its maximum, uncorrected ECC errors, remapped rows or
                retired pages, clocks-event reasons and application clocks (the report's node
                check names what it finds as a likely cause of a shortfall)

Writes a `header` and one `capability` record per item (JSON lines), a table on stderr.
The memory probe briefly allocates nearly all free GPU memory: run it on an idle GPU.
Two nodes' logs side by side: python plot_results.py caps_h200.jsonl caps_b200.jsonl

    python check_capabilities.py
    OUTPUT=results/caps_h200.jsonl CAPACITY_LOG=results/sweep_h200.jsonl python check_capabilities.py
"""
import os
import sys
import time

from ..kernels.attention import backends as attn_backends
from ..hardware import fingerprint
from ..log import header
from .. import settings
from . import health
from . import verdicts as caps
from ..hardware import precisions
from ..faults import BadInput
from ..log.records import RecordWriter, read_log
from ..settings import Settings

SCRIPT = "check_capabilities.py"
VARS = [
    settings.Var("CAPACITY_LOG", "str", "", "a JSONL log with a `capacity` record (run_sweep's "
                 "max-seqlen search) of this GPU: its max_fit_seq_len replaces the estimate"),
    settings.Var("SKIP_MEMORY_PROBE", "bool", False, "skip the largest-allocation bisection (for a "
                 "GPU in use); the sequence-length estimate then uses total HBM"),
    settings.Var("MEMORY_PROBE_S", "float", 20.0, "time bound of the largest-allocation bisection, "
                 "seconds", min=1),
    settings.OUTPUT,
    settings.Var("NOTES", "str", "", "free text copied into the header"),
]


def load_capacity_log(path: str):
    """Records of CAPACITY_LOG (None when unset); BadInput if it cannot be read."""
    if path and not os.path.exists(path):
        raise BadInput(f"CAPACITY_LOG={path!r}: no such file")
    return read_log(path, "CAPACITY_LOG") if path else None


# torch's own kernels first, separately installed (beta) packages last.
ATTENTION_ORDER = sorted(attn_backends.KERNELS.values(), key=lambda b: b.package is not None)


def attention_verdict(backend: attn_backends.Backend, device: fingerprint.Device, dev) -> caps.Verdict:
    import torch

    from . import probes as p

    if backend.package:
        version = fingerprint.package_version(backend.package.distribution)
        if version and not version.startswith(backend.package.version_prefix):
            version = None  # the distribution, but not a release this backend runs (FA2 needs 2.x)
    else:
        version = torch.__version__
        if backend.sdpa_kernel == "CUDNN_ATTENTION" and device.capability:
            version += f", cudnn {torch.backends.cudnn.version()}"
    item = f"attention:{backend.name}"
    return caps.attention_gate(backend, device, version) or caps.evaluate(
        item, device, lambda: p.attention(backend.name, dev, version))


def with_precisions(item: str, verdict: caps.Verdict, found=precisions.module_found) -> caps.Verdict:
    """`verdict` naming the training precisions its GEMM lets train (PRECISION), if any: those
    the installed library has a recipe for, and why not the others (benchmark.py refuses them)."""
    names = precisions.unlocked_by(item)
    if not names:
        return verdict
    lacking = {n: precisions.library_problem(precisions.PRECISIONS[n], found) for n in names}
    trains = [n for n, problem in lacking.items() if not problem]
    what = "trains" if verdict.status == "ok" else "would train"
    detail = verdict.detail + (f"; {what} PRECISION={'|'.join(trains)}" if trains else "")
    detail += "".join(f"; not PRECISION={problem}" for problem in lacking.values() if problem)
    return caps.Verdict(verdict.status, detail, verdict.value)


def plan(s: Settings, device: fingerprint.Device, dev, gpu_name, gpu_count: int, capacity_records, done: dict):
    """(item, category, needs a working CUDA context, make_verdict) in run order. Attention
    runs last: a kernel package that crashes the process takes no other item with it.
    `done` holds the verdicts so far (max_seq_len reads the memory items)."""
    from . import probes as p

    def probe(item, fn):
        return lambda: caps.evaluate(item, device, fn)

    def usable():
        if s.SKIP_MEMORY_PROBE and device.capability:
            return caps.Verdict("unavailable", "skipped (SKIP_MEMORY_PROBE=1)")
        return caps.evaluate("memory:usable", device, lambda: p.usable_memory(dev, s.MEMORY_PROBE_S))

    def max_seq_len():
        gib = {k: (v.value if v.status == "ok" else None) for k, v in done.items()}
        return caps.max_seq_len_verdict(gpu_name, capacity_records, gib["memory:usable"], gib["memory:hbm"])

    def matmul(item, fn):
        return lambda: with_precisions(item, caps.evaluate(item, device, lambda: fn(dev)))

    return ([(item, "dtype", True, matmul(item, fn)) for item, fn in p.MATMULS.items()] + [
        ("memory:hbm", "memory", True, probe("memory:hbm", lambda: p.hbm(dev))),
        ("memory:usable", "memory", True, usable),
        ("memory:max_seq_len", "memory", False, max_seq_len),
        ("interconnect:gpu_count", "interconnect", False, probe(
            "interconnect:gpu_count", lambda: caps.Passed(f"{gpu_count} x {gpu_name}", gpu_count))),
        ("interconnect:topology", "interconnect", False, probe("interconnect:topology", p.topology)),
        ("interconnect:nccl", "interconnect", False, probe("interconnect:nccl", p.nccl_version)),
    ] + health.plan_items(device, dev, caps.evaluate) + [(f"attention:{b.name}", "attention", True,
          lambda b=b: attention_verdict(b, device, dev)) for b in ATTENTION_ORDER])


def main() -> int:
    s = settings.load(VARS, __doc__)
    capacity_records = load_capacity_log(s.CAPACITY_LOG)
    import torch

    from . import probes as p

    on_gpu = torch.cuda.is_available()
    dev = torch.device("cuda", 0) if on_gpu else torch.device("cpu")
    device = fingerprint.device()
    gpu_name = fingerprint.gpu_name()
    writer = RecordWriter(SCRIPT, s.OUTPUT)
    writer.write("header", **header.fields(settings.as_dict(s), s.NOTES))
    done = {}
    broken_after = None  # the item after which the CUDA context stopped working
    gpu_count = torch.cuda.device_count() if on_gpu else 0
    for item, category, uses_cuda, make_verdict in plan(s, device, dev, gpu_name, gpu_count,
                                                         capacity_records, done):
        start = time.perf_counter()
        if uses_cuda and broken_after:
            verdict = caps.Verdict("error", f"not run: the CUDA context broke after {broken_after} failed")
        else:
            verdict = make_verdict()
        probe_s = time.perf_counter() - start
        if (uses_cuda and on_gpu and not broken_after and verdict.status in ("error", "unsupported_stack")
                and not p.cuda_ok(dev)):
            broken_after = item
        writer.write("capability", item=item, category=category, status=verdict.status,
                     detail=verdict.detail, value=verdict.value, probe_s=round(probe_s, 3))
        done[item] = verdict
    sys.stderr.write(f"\ncapabilities of {gpu_name or 'this node (no GPU)'} ({device.arch}):\n")
    sys.stderr.write(caps.text_table(list(done.items())))
    return 0

