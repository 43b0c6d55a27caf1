"""The header record: one builder for every script, the stack it lists."""
import importlib.metadata
import platform

from upgrade_bench.log import header


def test_a_header_holds_the_stack_the_config_the_scripts_own_fields_warnings_and_notes():
    fields = header.fields({"SEQ_LEN": [64]}, "night run", ("no peak",), attn_backend="sdpa")
    assert list(fields) == ["software", "hardware", "config", "attn_backend", "warnings", "notes"]
    assert fields["config"] == {"SEQ_LEN": [64]} and fields["attn_backend"] == "sdpa"
    assert fields["warnings"] == ["no peak"] and fields["notes"] == "night run"
    assert fields["hardware"]["cpu_count"] and fields["hardware"]["gpu_name"] is None  # GPU 0's: none here
    given = {"gpu_name": "NVIDIA H200", "cuda_device": 3}
    assert header.fields({}, "", hardware=given)["hardware"] is given  # mamf-finder's measured GPU
    assert header.fields({}, "")["warnings"] == []


def test_the_software_lists_the_stack_that_moves_results_and_every_attention_package():
    software = header.software()
    # The guide's caveat 2: these versions alone move results by double-digit percent.
    assert {"python", "torch", "cuda", "cudnn", "nccl", "transformers", "deepspeed", "liger-kernel",
            "triton", "flash-attn", "flash-attn-3", "flash-attn-4"} <= set(software)
    assert software["torch"] == importlib.metadata.version("torch")
    assert software["python"] == platform.python_version()
    assert software["flash-attn-3"] is None  # not installed here: listed, as null
