"""The header record: one builder for every script, the stack it lists."""
from upgrade_bench.kernels import attn_backends
from upgrade_bench.hardware import fingerprint
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


def test_the_software_lists_every_attention_package_of_the_backend_table():
    software = header.software()
    expected = {"python", "cuda", "hip", "cudnn", "nccl", *fingerprint.STACK_DISTRIBUTIONS,
                *attn_backends.DISTRIBUTIONS}
    assert set(software) == expected
    assert {"flash-attn", "flash-attn-3", "flash-attn-4"} <= set(attn_backends.DISTRIBUTIONS)
    assert software["torch"]
