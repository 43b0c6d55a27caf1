"""Issue 14 diagnosis, harness only: the guide's benchmark.py unchanged, but with a ZeRO-3
HfDeepSpeedConfig alive while it builds its model, so transformers builds it inside zero.Init
(partitioned module by module as it is built), as the suite does.
Run as: deepspeed --num_gpus=2 gate.py guide_zero_init.py guide_benchmark.py"""
import runpy
import sys

from transformers.integrations import HfDeepSpeedConfig

# zero.Init reads the stage, the dtype and the (absent) parameter offload from this; the
# engine's config is the script's own ds_config(), given to deepspeed.initialize as before.
_keep_alive = HfDeepSpeedConfig({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                 "zero_optimization": {"stage": 3}})
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
