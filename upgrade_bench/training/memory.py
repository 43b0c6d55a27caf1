"""GPU memory of the training step: the peaks a point records, and MEM_DEBUG's stage marks and
snapshot.

Peak reserved (what the caching allocator took from the GPU) is the guide's peak and what
runs out first; peak allocated beside it shows how much of that is cache and fragmentation.
MEM_DEBUG=1 adds a `memory` record at each stage of the first step, and a snapshot of the
allocator after the forward of the first timed step (where the guide's script takes its
own), with a summary of its segments so fragmentation is readable without a viewer.
"""
import os

from ..models.peak_memory import STATE_BYTES_PER_PARAM, state_bytes

GIB = 2**30


def fit_problem(model: str, params: int, zero_stage: int, world: int, offload: bool,
                gpu_bytes: float | None, host_bytes: float) -> str | None:
    """Why a training state of `params` cannot fit, in one line, or None. A floor: the
    activations come on top, so a None is no promise, a refusal is certain. Without a GPU
    everything lives in host memory."""
    per_gpu, host = state_bytes(params, zero_stage, world, offload)
    size = f"MODEL={model} ({params / 1e9:.2g}B parameters)"
    if gpu_bytes is None:
        need = STATE_BYTES_PER_PARAM * params
        if need > host_bytes:
            return (f"{size} needs at least {need / GIB:.0f} GiB for its weights, gradients and Adam "
                    f"state ({STATE_BYTES_PER_PARAM} bytes a parameter); this machine has "
                    f"{host_bytes / GIB:.1f} GiB and no GPU: try MODEL=tiny ZERO_STAGE=2 "
                    f"OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 (the README's CPU try-out), or cut the "
                    f"model with NUM_LAYERS")
        return None
    if per_gpu > gpu_bytes:
        return (f"{size} needs at least {per_gpu / GIB:.0f} GiB per GPU for its weights, gradients and "
                f"optimizer state with ZeRO-{zero_stage} on {world} GPU(s), more than the "
                f"{gpu_bytes / GIB:.0f} GiB a GPU has: cut the layers (NUM_LAYERS=8, say), offload the "
                f"optimizer (OFFLOAD_OPTIMIZER=1) or shard over more GPUs (ZERO_STAGE=3)")
    if host > host_bytes:
        return (f"{size} needs at least {host / GIB:.0f} GiB of host memory for the offloaded optimizer, "
                f"more than the {host_bytes / GIB:.0f} GiB here: cut the layers (NUM_LAYERS) or keep the "
                f"optimizer on the GPUs (OFFLOAD_OPTIMIZER=0)")
    return None


PEAK_KEYS = ("peak_mem_gib", "peak_alloc_gib", "num_alloc_retries", "num_ooms")


def rank_peaks(per_rank: list) -> dict:
    """A point's memory fields from each rank's (max reserved GiB, max allocated GiB, alloc
    retries, OOMs), in rank order: the worst rank's of each, and every rank's peak reserved
    (peak_mem_gib_per_rank: ranks do not peak alike, rank 0 often holds more, and the worst
    alone hides how far the others are from the ceiling)."""
    out = dict(zip(PEAK_KEYS, (max(column) for column in zip(*per_rank))))
    out["num_alloc_retries"], out["num_ooms"] = int(out["num_alloc_retries"]), int(out["num_ooms"])
    out["peak_mem_gib_per_rank"] = [row[0] for row in per_rank]
    return out


def point_peaks(device) -> dict:
    """The allocator's figures since the point began, per rank and worst rank (all ranks must
    call: rank_peaks of every rank's).

    peak_mem_gib is max reserved, peak_alloc_gib max allocated; num_alloc_retries counts
    allocations that had to free the cache and retry (fragmentation near the ceiling, slow),
    num_ooms the ones that failed. All None on CPU.
    """
    import torch
    import torch.distributed as dist

    if device.type != "cuda":
        return dict.fromkeys(PEAK_KEYS + ("peak_mem_gib_per_rank",))
    stats = torch.cuda.memory_stats(device)
    mine = torch.tensor([torch.cuda.max_memory_reserved(device) / GIB,
                         torch.cuda.max_memory_allocated(device) / GIB,
                         stats.get("num_alloc_retries", 0), stats.get("num_ooms", 0)],
                        dtype=torch.float64, device=device)
    every = [mine]
    if dist.is_initialized() and dist.get_world_size() > 1:
        every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(every, mine)
    return rank_peaks(torch.stack(every).tolist())  # one copy to the host, not one per rank


def reset_point_counters(device) -> None:
    """Peaks, alloc retries and OOMs count from here (the cache itself is left as it is)."""
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        torch.cuda.reset_accumulated_memory_stats(device)


def current(device) -> dict:
    import torch

    if device.type != "cuda":
        return {"allocated_gib": None, "reserved_gib": None, "max_allocated_gib": None}
    return {"allocated_gib": torch.cuda.memory_allocated(device) / GIB,
            "reserved_gib": torch.cuda.memory_reserved(device) / GIB,
            "max_allocated_gib": torch.cuda.max_memory_allocated(device) / GIB}


def segment_summary(segments: list, largest: int = 10) -> dict:
    """What the allocator holds, from torch.cuda.memory_snapshot()'s segments: reserved and
    allocated GiB in all and per CUDA stream (each stream has its own pool), the free GiB
    inside segments and the largest free blocks, the largest segments (total, allocated)."""
    streams, free = {}, []
    for seg in segments:
        per = streams.setdefault(str(seg["stream"]), {"segments": 0, "reserved_gib": 0.0,
                                                      "allocated_gib": 0.0})
        per["segments"] += 1
        per["reserved_gib"] += seg["total_size"] / GIB
        per["allocated_gib"] += seg["allocated_size"] / GIB
        free += [b["size"] for b in seg["blocks"] if b["state"] == "inactive"]
    top = sorted(segments, key=lambda s: s["total_size"], reverse=True)[:largest]
    return {"segments": len(segments),
            "reserved_gib": sum(s["total_size"] for s in segments) / GIB,
            "allocated_gib": sum(s["allocated_size"] for s in segments) / GIB,
            "free_in_segments_gib": sum(free) / GIB,
            "largest_free_blocks_gib": [b / GIB for b in sorted(free, reverse=True)[:largest]],
            "largest_segments_gib": [[s["total_size"] / GIB, s["allocated_size"] / GIB] for s in top],
            "streams": streams}


class Debug:
    """MEM_DEBUG=1 for one run. `mark(stage)` writes a `memory` record (model built, engine
    ready); `for_step(step, warmup_steps)` is the train_step mark of that step: the stages
    of a point's first step, and the snapshot (once, rank 0) after the forward of the first
    timed step. Load the snapshot at https://pytorch.org/memory_viz."""

    def __init__(self, rc, writer):
        import torch

        self.rc, self.writer, self.done = rc, writer, False
        self.on_gpu = rc.device.type == "cuda"
        if self.on_gpu and rc.rank == 0:
            torch.cuda.memory._record_memory_history(max_entries=200_000)

    def mark(self, stage: str) -> None:
        self.writer.write("memory", stage=stage, rank=self.rc.rank, **current(self.rc.device))

    def for_step(self, step: int, warmup_steps: int):
        stages, snap = step == 0, step == warmup_steps and not self.done
        if not (stages or snap):
            return None

        def mark(stage: str) -> None:
            if stages:
                self.mark(stage)
            if snap and stage == "forward":
                self.snapshot()
        return mark

    def snapshot(self) -> None:
        import torch

        self.done = True
        if self.rc.rank != 0:
            return
        if not self.on_gpu:
            self.writer.write("memory_snapshot", path=None, note="no GPU: no torch.cuda.memory snapshot")
            return
        output = self.rc.resolved.train.OUTPUT
        out_dir = os.path.dirname(os.path.abspath(output)) if output else "."
        path = os.path.join(out_dir, f"mem_snapshot_rank0_{self.writer.run_id}.pickle")
        torch.cuda.memory._dump_snapshot(path)
        summary = segment_summary(torch.cuda.memory_snapshot())
        torch.cuda.memory._record_memory_history(enabled=None)
        self.writer.write("memory_snapshot", path=path, **summary)
