"""Issue 14 diagnosis, harness only: the suite's benchmark.py with the model built the way the
guide's script builds it under ZeRO-3 (whole, on the CPU, no zero.Init; deepspeed.initialize
then moves and partitions it parameter by parameter). Everything else is the suite's own.
Run as: deepspeed --num_gpus=2 gate.py suite_cpu_build.py REPO/benchmark.py"""
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[1])))  # the repo, for upgrade_bench
import transformers.integrations  # noqa: E402
from upgrade_bench import model  # noqa: E402


class NoZeroInit:
    """Stands in for HfDeepSpeedConfig, so from_config builds without zero.Init."""

    def __init__(self, config):
        self.config = config


def cpu_build(config, attn_implementation, weights, path, device, dtype):
    from transformers import AutoModelForCausalLM
    net = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    net.config.use_cache = False
    return net


transformers.integrations.HfDeepSpeedConfig = NoZeroInit
model.build = cpu_build
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
