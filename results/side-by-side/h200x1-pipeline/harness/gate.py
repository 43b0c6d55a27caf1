"""Runs the guide's benchmark.py unchanged, held just before deepspeed.initialize until the file
$GATE exists: its CPU model build (minutes, no GPU work) overlaps other runs, and nothing it
measures (DeepSpeed set-up, steps, memory) starts before the GPUs are free. Harness only."""
import atexit
import os
import runpy
import sys
import time

import deepspeed

_initialize = deepspeed.initialize


def gated(*args, **kwargs):
    built = time.time()
    open(os.environ["GATE"] + ".built." + os.environ.get("LOCAL_RANK", "0"), "w").close()
    while not os.path.exists(os.environ["GATE"]):
        time.sleep(0.2)
    rank = os.environ.get("LOCAL_RANK", "0")
    print(f"# gate rank {rank}: model built at {time.strftime('%T', time.localtime(built))}, "
          f"released after {time.time() - built:.0f} s", file=sys.stderr, flush=True)
    return _initialize(*args, **kwargs)


deepspeed.initialize = gated


@atexit.register
def exact_peaks():
    """The guide prints its peak rounded to 0.1 GiB; the exact bytes, for a <= comparison."""
    import torch
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        print(f"# exact peak rank {os.environ.get('LOCAL_RANK', '0')}: reserved "
              f"{torch.cuda.max_memory_reserved()} B ({torch.cuda.max_memory_reserved() / 2**30:.3f} GiB), "
              f"allocated {torch.cuda.max_memory_allocated()} B "
              f"({torch.cuda.max_memory_allocated() / 2**30:.3f} GiB)", file=sys.stderr, flush=True)


# the DeepSpeed launcher puts --local_rank=N before the script
sys.argv = [a for a in sys.argv[1:] if not a.startswith("--local_rank")]
runpy.run_path(sys.argv[0], run_name="__main__")
