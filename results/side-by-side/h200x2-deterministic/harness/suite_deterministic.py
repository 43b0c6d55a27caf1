"""Issue 14 diagnosis, harness only: the next script (segdump.py, then the suite's benchmark.py)
with the guide script's determinism settings on (its set_seed: torch.use_deterministic_algorithms
(True, warn_only=True), whose default fill_uninitialized_memory fills every torch.empty with
NaN, and cuDNN deterministic, no benchmark mode). Tests the lead that this, by slowing the
ZeRO-3 parameter gathers, keeps the script's gather-stream pool smaller.
Run as: deepspeed --num_gpus=2 suite_deterministic.py segdump.py REPO/benchmark.py"""
import runpy
import sys

import torch

torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.use_deterministic_algorithms(True, warn_only=True)
sys.argv = [a for a in sys.argv[1:] if not a.startswith("--local_rank")]
runpy.run_path(sys.argv[0], run_name="__main__")
