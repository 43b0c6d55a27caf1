"""Issue 14 diagnosis, harness only: runs a training script unchanged and writes, per rank, the
caching allocator's segments (size, stream, pool, allocated) and its memory_stats counters, to
$SEGDUMP_rank<N>.json: for the suite each time it reads its peaks (memory.worst_rank_memory, after
every step; the last dump stands; it leaves by os._exit, past atexit), for the guide's script at exit. No empty_cache runs in either,
so the segments then are the ones the peak reserved counted.
Run as: deepspeed --num_gpus=2 [gate.py] segdump.py SCRIPT.py"""
import atexit
import json
import os
import runpy
import sys


def dump():
    import torch
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    path = f"{os.environ['SEGDUMP']}_rank{os.environ.get('LOCAL_RANK', '0')}.json"
    segments = [{"size": s["total_size"], "allocated": s["allocated_size"], "stream": s["stream"],
                 "pool": s["segment_type"]} for s in torch.cuda.memory_snapshot()]
    stats = {k: v for k, v in torch.cuda.memory_stats().items() if isinstance(v, (int, float))}
    with open(path, "w") as f:
        json.dump({"max_reserved": torch.cuda.max_memory_reserved(),
                   "max_allocated": torch.cuda.max_memory_allocated(),
                   "segments": segments, "stats": stats}, f)


atexit.register(dump)
sys.argv = [a for a in sys.argv[1:] if not a.startswith("--local_rank")]
script_dir = os.path.dirname(os.path.abspath(sys.argv[0]))
if os.path.isdir(os.path.join(script_dir, "upgrade_bench")):  # the suite: dump at its reading
    sys.path.insert(0, script_dir)
    from upgrade_bench import memory
    _worst = memory.worst_rank_memory

    def worst_then_dump(device):
        dump()
        return _worst(device)
    memory.worst_rank_memory = worst_then_dump
runpy.run_path(sys.argv[0], run_name="__main__")
