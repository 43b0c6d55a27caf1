"""Published training runs of NVIDIA's performance tables and AMD's, as published: the data the
backtest's pairs are made of (pairs.py turns them into records). Numbers only, copied from the
tables each source names; no code of theirs.

Each source is one publication with its own release history, so the backtest can leave a whole
source out: its pairs are forecast with ranges calibrated on the other sources only.
"""
MEGATRON_BRIDGE = "megatron-bridge"
NEMO_FRAMEWORK = "nemo-framework"
AMD_PRIMUS = "amd-primus"

SOURCES = {
    MEGATRON_BRIDGE: (
        "NVIDIA Megatron-Bridge performance summary (NeMo 25.09 to 26.06 containers; pre-training, and "
        "26.06's SFT and LoRA), "
        "docs/performance-summary-archive.md, https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/"
        "067f987df03b8355b03192d88d70f1709fedf51a/docs/performance-summary-archive.md (also "
        "https://docs.nvidia.com/nemo/megatron-bridge/latest/performance-summary.html)"),
    NEMO_FRAMEWORK: (
        "NVIDIA NeMo Framework performance summary (NeMo 2.0): NeMo 24.07 DGX-H100 from "
        "docs/source/performance/performance_summary.md, https://github.com/NVIDIA/NeMo/blob/"
        "2fca28a010fde08a76a8f4bcce82debeae15545e/docs/source/performance/performance_summary.md "
        "(2025-02-10); NeMo 25.02 DGX-B200 and NeMo 25.04 DGX-GB200 from "
        "https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/performance_summary.html "
        "and .../performance/archive/25.04-performance-summary.html"),
    AMD_PRIMUS: (
        "AMD Primus (Megatron-LM backend on ROCm), the projection tool's validation table \"MI325X - Dense "
        "Models (Llama 3.1)\": 1-node figures measured by AMD and 8-node figures as published on AMD's ROCm "
        "Performance Results page (https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/"
        "performance-results.html#ai-training), docs_deprecated/tech_blogs/projection/projection.md, "
        "https://github.com/AMD-AGI/Primus/blob/c8e5c09dd1a6409310d7dd984f3eb550bc08b35f/docs_deprecated/"
        "tech_blogs/projection/projection.md"),
}
# How each source names its GPUs (the GPU table's lookup reads it) and its containers.
DEVICE = {MEGATRON_BRIDGE: "NVIDIA {}", NEMO_FRAMEWORK: "NVIDIA {}", AMD_PRIMUS: "AMD Instinct {}"}
CONTAINER = {MEGATRON_BRIDGE: "NeMo {}", NEMO_FRAMEWORK: "NeMo {}", AMD_PRIMUS: "{}"}

# (run id, container, system, model, GPUs, precision, GBS, MBS, seq_len, FSDP, TP, PP, CP, VP, EP,
#  tokens/s/GPU, model TFLOP/s/GPU); 'n/a' cells as None. FP8 is FP8 with current (per-tensor)
# scaling, MXFP8 the block-scaled recipe; where a table gives both in parentheses, the first.
RUNS = {
    MEGATRON_BRIDGE: [
        # 25.09 (FP8 current scaling; MoE rows token-drop)
        ("mb-2509-llama3-8b-h100", "25.09", "H100", "llama-3-8b", 8, "fp8", 128, 1, 8192, 8, 1, 1, 1, None, 1,
         14079, 725),
        ("mb-2509-llama3-8b-b200", "25.09", "B200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
         29994, 1544),
        ("mb-2509-llama3-8b-gb200", "25.09", "GB200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
         31357, 1614),
        ("mb-2509-llama3-70b-h100", "25.09", "H100", "llama-3-70b", 64, "fp8", 128, 1, 8192, 0, 4, 8, 1, 5, 1,
         1619, 727),
        ("mb-2509-llama3-70b-gb200", "25.09", "GB200", "llama-3-70b", 64, "fp8", 128, 2, 8192, 64, 1, 1, 1, 1, 1,
         3986, 1791),
        ("mb-2509-llama31-405b-b200", "25.09", "B200", "llama-3.1-405b", 128, "fp8", 64, 1, 8192, 0, 4, 8, 2, 8, 1,
         664, 1676),
        ("mb-2509-llama31-405b-gb200", "25.09", "GB200", "llama-3.1-405b", 128, "fp8", 64, 1, 8192, 64, 2, 1, 1, 1,
         1, 729, 1840),
        ("mb-2509-qwen3-30b-b200", "25.09", "B200", "qwen3-30b-a3b", 8, "fp8", 512, 1, 4096, 0, 1, 1, 1, 1, 8,
         18066, 416),
        ("mb-2509-qwen3-30b-gb200", "25.09", "GB200", "qwen3-30b-a3b", 8, "fp8", 512, 4, 4096, 0, 1, 1, 1, 1, 8,
         22775, 524),
        ("mb-2509-qwen3-235b-b200", "25.09", "B200", "qwen3-235b-a22b", 64, "fp8", 1024, 1, 4096, 0, 1, 8, 1, 2, 8,
         4104, 607),
        ("mb-2509-qwen3-235b-gb200", "25.09", "GB200", "qwen3-235b-a22b", 64, "fp8", 1024, 1, 4096, 0, 2, 1, 1, 1,
         64, 4452, 659),
        # 25.11
        ("mb-2511-llama3-8b-h100", "25.11", "H100", "llama-3-8b", 8, "fp8", 128, 1, 8192, 8, 1, 1, 1, None, 1,
         14451, 744),
        ("mb-2511-llama3-8b-b200", "25.11", "B200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
         30624, 1576),
        ("mb-2511-llama3-8b-gb200", "25.11", "GB200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
         31508, 1622),
        ("mb-2511-llama3-8b-gb300", "25.11", "GB300", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
         37556, 1933),
        ("mb-2511-llama3-70b-gb200", "25.11", "GB200", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1, 1, 1,
         4312, 1937),
        ("mb-2511-llama3-70b-gb300", "25.11", "GB300", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1, 1, 1,
         4520, 2030),
        ("mb-2511-gpt-oss-120b-h100", "25.11", "H100", "gpt-oss-120b", 64, "bf16", 512, 4, 4096, 0, 1, 4, 1, 1, 8,
         5630, 153),
        ("mb-2511-gpt-oss-120b-b200", "25.11", "B200", "gpt-oss-120b", 64, "bf16", 512, 4, 4096, 0, 1, 1, 1, 1, 8,
         8213, 223),
        ("mb-2511-gpt-oss-120b-gb200", "25.11", "GB200", "gpt-oss-120b", 64, "bf16", 1280, 1, 8192, 0, 1, 1, 1, 1,
         64, 15876, 488),
        ("mb-2511-gpt-oss-120b-gb300", "25.11", "GB300", "gpt-oss-120b", 64, "bf16", 1280, 2, 8192, 0, 1, 1, 1, 1,
         64, 18347, 565),
        ("mb-2511-qwen3-30b-gb200", "25.11", "GB200", "qwen3-30b-a3b", 8, "mxfp8", 512, 4, 4096, 0, 1, 1, 1, 1, 8,
         23766, 547),
        ("mb-2511-qwen3-30b-gb300", "25.11", "GB300", "qwen3-30b-a3b", 8, "mxfp8", 512, 4, 4096, 0, 1, 1, 1, 1, 8,
         28934, 666),
        # 26.02
        ("mb-2602-gpt-oss-120b-b200", "26.02", "B200", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1, None,
         64, 8047, 219),
        ("mb-2602-gpt-oss-120b-b300", "26.02", "B300", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1, None,
         64, 8359, 228),
        ("mb-2602-gpt-oss-120b-gb200", "26.02", "GB200", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1, None,
         64, 15784, 428),
        ("mb-2602-gpt-oss-120b-gb300", "26.02", "GB300", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1, None,
         64, 19412, 527),
        ("mb-2602-qwen3-30b-gb200", "26.02", "GB200", "qwen3-30b-a3b", 8, "mxfp8", 512, 4, 4096, 0, 1, 1, 1, None, 8,
         26084, 600),
        ("mb-2602-qwen3-30b-b300", "26.02", "B300", "qwen3-30b-a3b", 8, "mxfp8", 512, 8, 4096, 0, 1, 1, 1, None, 8,
         29521, 679),
        ("mb-2602-qwen3-30b-gb300", "26.02", "GB300", "qwen3-30b-a3b", 8, "mxfp8", 512, 8, 4096, 0, 1, 1, 1, None, 8,
         30376, 699),
        ("mb-2602-llama3-70b-h100", "26.02", "H100", "llama-3-70b", 64, "fp8", 256, 1, 8192, 0, 4, 8, 1, 5, None,
         1621, 728),
        ("mb-2602-llama3-70b-gb200", "26.02", "GB200", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1, None,
         None, 4040, 1815),
        ("mb-2602-llama3-70b-gb300", "26.02", "GB300", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1, None,
         None, 5003, 2248),
        ("mb-2602-deepseek-v3-b200", "26.02", "B200", "deepseek-v3", 256, "mxfp8", 4096, 1, 4096, 0, 1, 16, 1, None,
         8, 2689, 699),
        ("mb-2602-deepseek-v3-b300", "26.02", "B300", "deepseek-v3", 256, "mxfp8", 4096, 1, 4096, 0, 1, 16, 1, None,
         8, 2983, 776),
        ("mb-2602-deepseek-v3-gb200", "26.02", "GB200", "deepseek-v3", 256, "mxfp8", 4096, 1, 4096, 0, 1, 4, 1, 4, 64,
         3955, 1028),
        ("mb-2602-deepseek-v3-gb300", "26.02", "GB300", "deepseek-v3", 256, "mxfp8", 4096, 2, 4096, 0, 1, 2, 1, 8, 32,
         4612, 1199),
        # 26.04.01
        ("mb-260401-llama3-70b-h100", "26.04.01", "H100", "llama-3-70b", 64, "fp8", 256, 1, 8192, 0, 4, 8, 1, 5,
         None, 1664, 731),
        ("mb-260401-llama3-70b-gb200", "26.04.01", "GB200", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1,
         None, None, 4224, 1892),
        ("mb-260401-llama3-70b-gb300", "26.04.01", "GB300", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1,
         None, None, 5248, 2348),
        ("mb-260401-llama31-405b-h100", "26.04.01", "H100", "llama-3.1-405b", 1024, "fp8", 1536, 1, 8192, 0, 8, 8,
         2, 8, None, 328, 827),
        ("mb-260401-llama31-405b-gb200", "26.04.01", "GB200", "llama-3.1-405b", 256, "fp8", 1536, 1, 8192, 0, 4,
         16, 1, 4, None, 864, 2144),
        ("mb-260401-llama31-405b-gb300", "26.04.01", "GB300", "llama-3.1-405b", 256, "fp8", 1536, 1, 8192, 0, 4,
         8, 1, 4, None, 1024, 2617),
        ("mb-260401-gpt-oss-120b-h100", "26.04.01", "H100", "gpt-oss-120b", 64, "bf16", 1280, 1, 4096, 0, 1, 4, 1,
         None, 8, 5824, 158),
        ("mb-260401-gpt-oss-120b-b200", "26.04.01", "B200", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1,
         None, 8, 13568, 369),
        ("mb-260401-gpt-oss-120b-b300", "26.04.01", "B300", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1,
         None, 8, 15232, 414),
        ("mb-260401-gpt-oss-120b-gb200", "26.04.01", "GB200", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1,
         None, 64, 16640, 452),
        ("mb-260401-gpt-oss-120b-gb300", "26.04.01", "GB300", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1,
         None, 64, 19200, 523),
        ("mb-260401-qwen3-30b-b200", "26.04.01", "B200", "qwen3-30b-a3b", 8, "mxfp8", 512, 4, 4096, 0, 1, 1, 1, None,
         8, 27136, 619),
        ("mb-260401-qwen3-30b-b300", "26.04.01", "B300", "qwen3-30b-a3b", 8, "mxfp8", 512, 8, 4096, 0, 1, 1, 1, None,
         8, 30720, 704),
        ("mb-260401-qwen3-30b-gb200", "26.04.01", "GB200", "qwen3-30b-a3b", 8, "mxfp8", 512, 4, 4096, 0, 1, 1, 1,
         None, 8, 26112, 599),
        ("mb-260401-qwen3-30b-gb300", "26.04.01", "GB300", "qwen3-30b-a3b", 8, "mxfp8", 512, 8, 4096, 0, 1, 1, 1,
         None, 8, 31744, 729),
        ("mb-260401-qwen3-235b-b200", "26.04.01", "B200", "qwen3-235b-a22b", 256, "mxfp8", 8192, 1, 4096, 0, 1, 8, 1,
         None, 8, 3776, 560),
        ("mb-260401-qwen3-235b-b300", "26.04.01", "B300", "qwen3-235b-a22b", 256, "mxfp8", 8192, 2, 4096, 0, 1, 8, 1,
         None, 8, 5936, 878),
        ("mb-260401-qwen3-235b-gb200", "26.04.01", "GB200", "qwen3-235b-a22b", 256, "mxfp8", 8192, 1, 4096, 0, 1, 8,
         1, 3, 32, 5680, 840),
        ("mb-260401-qwen3-235b-gb300", "26.04.01", "GB300", "qwen3-235b-a22b", 256, "mxfp8", 8192, 2, 4096, 0, 1, 4,
         1, 12, 32, 6944, 1029),
        ("mb-260401-deepseek-v3-b200", "26.04.01", "B200", "deepseek-v3", 256, "mxfp8", 4096, 1, 4096, 0, 1, 8, 1, 2,
         32, 3328, 864),
        ("mb-260401-deepseek-v3-b300", "26.04.01", "B300", "deepseek-v3", 256, "mxfp8", 4096, 2, 4096, 0, 1, 8, 1,
         None, 8, 3456, 898),
        ("mb-260401-deepseek-v3-gb200", "26.04.01", "GB200", "deepseek-v3", 256, "mxfp8", 4096, 1, 4096, 0, 1, 4, 1,
         4, 64, 4256, 1106),
        ("mb-260401-deepseek-v3-gb300", "26.04.01", "GB300", "deepseek-v3", 256, "mxfp8", 4096, 2, 4096, 0, 1, 2, 1,
         8, 32, 4992, 1298),
        # 26.06
        ("mb-2606-llama31-405b-h100", "26.06", "H100", "llama-3.1-405b", 1024, "fp8", 1536, 1, 8192, 0, 8, 8, 2, 8,
         None, 326, 822),
        ("mb-2606-llama31-405b-gb200", "26.06", "GB200", "llama-3.1-405b", 256, "fp8", 1536, 1, 8192, 0, 4, 16, 1, 4,
         None, 843, 2129),
        ("mb-2606-llama31-405b-gb300", "26.06", "GB300", "llama-3.1-405b", 256, "fp8", 1536, 1, 8192, 0, 4, 8, 1, 4,
         None, 1048, 2646),
        ("mb-2606-gpt-oss-120b-b300", "26.06", "B300", "gpt-oss-120b", 64, "mxfp8", 1280, 4, 4096, 0, 1, 1, 1, None,
         8, 18534, 604),
        ("mb-2606-gpt-oss-120b-gb200", "26.06", "GB200", "gpt-oss-120b", 64, "mxfp8", 1280, 4, 4096, 0, 1, 1, 1, None,
         64, 28947, 943),
        ("mb-2606-gpt-oss-120b-gb300", "26.06", "GB300", "gpt-oss-120b", 64, "mxfp8", 1280, 4, 4096, 0, 1, 1, 1, None,
         16, 33166, 1081),
        ("mb-2606-qwen3-30b-gb200", "26.06", "GB200", "qwen3-30b-a3b", 8, "mxfp8", 512, 4, 4096, 0, 1, 1, 1, None, 8,
         40706, 936),
        ("mb-2606-qwen3-30b-b300", "26.06", "B300", "qwen3-30b-a3b", 8, "mxfp8", 512, 8, 4096, 0, 1, 1, 1, None, 8,
         40769, 938),
        ("mb-2606-qwen3-30b-gb300", "26.06", "GB300", "qwen3-30b-a3b", 8, "mxfp8", 512, 8, 4096, 0, 1, 1, 1, None, 8,
         45275, 1041),
        # 26.06 fine-tuning (SQuAD packed to 4096 tokens; LoRA trains adapters only, so its model
        # FLOPs are the publisher's count for it)
        ("mb-2606-llama3-70b-sft-h100", "26.06", "H100", "llama-3-70b", 32, "fp8", 32, 1, 4096, 0, 4, 4, 1, 5, None,
         1638, 710),
        ("mb-2606-llama3-70b-sft-gb200", "26.06", "GB200", "llama-3-70b", 32, "fp8", 32, 1, 4096, 0, 1, 8, 1, 10,
         None, 3864, 1671),
        ("mb-2606-llama3-70b-sft-gb300", "26.06", "GB300", "llama-3-70b", 32, "fp8", 32, 1, 4096, 0, 1, 2, 1, 20,
         None, 4819, 2083),
        ("mb-2606-llama3-70b-lora-h100", "26.06", "H100", "llama-3-70b", 8, "fp8", 32, 1, 4096, 0, 2, 4, 1, 20, None,
         2643, 735),
        ("mb-2606-llama3-70b-lora-gb200", "26.06", "GB200", "llama-3-70b", 8, "fp8", 32, 1, 4096, 0, 1, 2, 1, 20,
         None, 6206, 1731),
        ("mb-2606-llama3-70b-lora-gb300", "26.06", "GB300", "llama-3-70b", 8, "fp8", 32, 1, 4096, 0, 1, 2, 1, 20,
         None, 7481, 2086),
    ],
    NEMO_FRAMEWORK: [
        ("nemo-2407-llama3-8b-h100", "24.07", "H100", "llama-3-8b", 8, "fp8", 128, 1, 8192, 0, 1, 1, 2, 1, None,
         12273, 711),
        ("nemo-2407-llama3-70b-h100", "24.07", "H100", "llama-3-70b", 64, "fp8", 128, 1, 8192, 0, 4, 4, 2, 5, None,
         1524, 734),
        ("nemo-2502-llama3-8b-b200", "25.02", "B200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, 1, 1,
         26006, 1506),
        ("nemo-2502-llama3-70b-b200", "25.02", "B200", "llama-3-70b", 64, "fp8", 128, 1, 8192, 0, 2, 4, 2, 5, 1,
         3062, 1474),
        ("nemo-2502-llama3-405b-b200", "25.02", "B200", "llama-3.1-405b", 128, "fp8", 64, 1, 8192, 0, 4, 8, 2, 8, 1,
         625, 1658),
        ("nemo-2504-llama3-8b-gb200", "25.04", "GB200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, 1, 1,
         33099, 1917),
        ("nemo-2504-llama3-70b-gb200", "25.04", "GB200", "llama-3-70b", 64, "fp8", 128, 1, 8192, 1, 1, 1, 1, 1, 1,
         4035, 1943),
        ("nemo-2504-llama3-405b-gb200", "25.04", "GB200", "llama-3.1-405b", 128, "fp8", 64, 1, 8192, 0, 4, 8, 2, 8, 1,
         665, 1763),
    ],
}

# AMD's table (AMD_PRIMUS) publishes tokens/s/GPU only, and no global batch (None: a step is taken
# as one micro-batch per GPU). Its model TFLOP/s/GPU is derived with NVIDIA's FLOP count of the
# same model shapes and length, TFLOP per token of the run named here (Llama 3.1 has Llama 3's
# shapes: their configs differ in RoPE scaling only), so a pair's two sides count FLOPs alike.
RUNS[AMD_PRIMUS] = [
    ("amd-llama31-8b-mi325x-1node", "rocm/primus", "MI325X", "llama-3.1-8b", 8, "fp8", None, 2, 8192, 0, 1, 1,
     1, None, 1, 16224, None),
    ("amd-llama31-8b-mi325x-8node", "rocm/primus", "MI325X", "llama-3.1-8b", 64, "fp8", None, 2, 8192, 0, 1, 1,
     1, None, 1, 16186, None),
    ("amd-llama31-70b-mi325x-fp8", "rocm/primus", "MI325X", "llama-3.1-70b", 64, "fp8", None, 4, 8192, 1, 1, 1,
     1, None, 1, 1726, None),
    ("amd-llama31-70b-mi325x-bf16", "rocm/primus", "MI325X", "llama-3.1-70b", 64, "bf16", None, 1, 8192, 1, 1, 1,
     1, None, 1, 1174, None),
]
TFLOP_PER_TOKEN_FROM = {"amd-llama31-8b-mi325x-1node": "mb-2511-llama3-8b-b200",
                        "amd-llama31-8b-mi325x-8node": "mb-2511-llama3-8b-b200",
                        "amd-llama31-70b-mi325x-fp8": "mb-260401-llama3-70b-h100",
                        "amd-llama31-70b-mi325x-bf16": "mb-260401-llama3-70b-h100"}
# Models published under another name with the same shapes (so the same workload across sources).
SAME_SHAPES = {"llama-3.1-8b": "llama-3-8b", "llama-3.1-70b": "llama-3-70b"}


def tflops_of(run: tuple) -> tuple:
    """(model TFLOP/s/GPU, derived?) of a RUNS row: as published, else TFLOP_PER_TOKEN_FROM's."""
    if run[16] is not None:
        return float(run[16]), False
    other = next(r for rows in RUNS.values() for r in rows if r[0] == TFLOP_PER_TOKEN_FROM[run[0]])
    return run[15] * other[16] / other[15], True


# Runs that fine-tune rather than pre-train, by what they do.
FINE_TUNING = {run_id: task for task in ("SFT", "LoRA") for run_id in (
    f"mb-2606-llama3-70b-{task.lower()}-{gpu}" for gpu in ("h100", "gb200", "gb300"))}

# (baseline run, candidate run): one model on two GPUs of one source, the older GPU first.
PAIRS = {
    MEGATRON_BRIDGE: [
        ("mb-2509-llama3-8b-b200", "mb-2509-llama3-8b-gb200"),
        ("mb-2509-llama3-8b-h100", "mb-2509-llama3-8b-b200"),
        ("mb-2509-llama3-70b-h100", "mb-2509-llama3-70b-gb200"),
        ("mb-2509-llama31-405b-b200", "mb-2509-llama31-405b-gb200"),
        ("mb-2509-qwen3-30b-b200", "mb-2509-qwen3-30b-gb200"),
        ("mb-2509-qwen3-235b-b200", "mb-2509-qwen3-235b-gb200"),
        ("mb-2511-llama3-8b-b200", "mb-2511-llama3-8b-gb200"),
        ("mb-2511-llama3-8b-h100", "mb-2511-llama3-8b-b200"),
        ("mb-2511-llama3-8b-gb200", "mb-2511-llama3-8b-gb300"),
        ("mb-2511-llama3-70b-gb200", "mb-2511-llama3-70b-gb300"),
        ("mb-2511-gpt-oss-120b-h100", "mb-2511-gpt-oss-120b-b200"),
        ("mb-2511-gpt-oss-120b-gb200", "mb-2511-gpt-oss-120b-gb300"),
        ("mb-2511-qwen3-30b-gb200", "mb-2511-qwen3-30b-gb300"),
        ("mb-2602-gpt-oss-120b-b200", "mb-2602-gpt-oss-120b-b300"),
        ("mb-2602-gpt-oss-120b-b200", "mb-2602-gpt-oss-120b-gb200"),
        ("mb-2602-gpt-oss-120b-gb200", "mb-2602-gpt-oss-120b-gb300"),
        ("mb-2602-qwen3-30b-gb200", "mb-2602-qwen3-30b-gb300"),
        ("mb-2602-llama3-70b-h100", "mb-2602-llama3-70b-gb200"),
        ("mb-2602-llama3-70b-gb200", "mb-2602-llama3-70b-gb300"),
        ("mb-2602-deepseek-v3-b200", "mb-2602-deepseek-v3-b300"),
        ("mb-2602-deepseek-v3-b200", "mb-2602-deepseek-v3-gb200"),
        ("mb-2602-deepseek-v3-gb200", "mb-2602-deepseek-v3-gb300"),
        ("mb-260401-llama3-70b-h100", "mb-260401-llama3-70b-gb200"),
        ("mb-260401-llama3-70b-gb200", "mb-260401-llama3-70b-gb300"),
        ("mb-260401-llama31-405b-h100", "mb-260401-llama31-405b-gb200"),
        ("mb-260401-llama31-405b-gb200", "mb-260401-llama31-405b-gb300"),
        ("mb-260401-gpt-oss-120b-h100", "mb-260401-gpt-oss-120b-b200"),
        ("mb-260401-gpt-oss-120b-b200", "mb-260401-gpt-oss-120b-b300"),
        ("mb-260401-gpt-oss-120b-b200", "mb-260401-gpt-oss-120b-gb200"),
        ("mb-260401-gpt-oss-120b-gb200", "mb-260401-gpt-oss-120b-gb300"),
        ("mb-260401-qwen3-30b-b200", "mb-260401-qwen3-30b-b300"),
        ("mb-260401-qwen3-30b-b200", "mb-260401-qwen3-30b-gb200"),
        ("mb-260401-qwen3-30b-gb200", "mb-260401-qwen3-30b-gb300"),
        ("mb-260401-qwen3-235b-b200", "mb-260401-qwen3-235b-b300"),
        ("mb-260401-qwen3-235b-b200", "mb-260401-qwen3-235b-gb200"),
        ("mb-260401-deepseek-v3-b200", "mb-260401-deepseek-v3-b300"),
        ("mb-260401-deepseek-v3-b200", "mb-260401-deepseek-v3-gb200"),
        ("mb-260401-deepseek-v3-gb200", "mb-260401-deepseek-v3-gb300"),
        ("mb-2606-llama31-405b-h100", "mb-2606-llama31-405b-gb200"),
        ("mb-2606-llama31-405b-gb200", "mb-2606-llama31-405b-gb300"),
        ("mb-2606-gpt-oss-120b-b300", "mb-2606-gpt-oss-120b-gb300"),
        ("mb-2606-gpt-oss-120b-gb200", "mb-2606-gpt-oss-120b-gb300"),
        ("mb-2606-qwen3-30b-gb200", "mb-2606-qwen3-30b-gb300"),
        ("mb-2606-qwen3-30b-b300", "mb-2606-qwen3-30b-gb300"),
        ("mb-2606-llama3-70b-sft-h100", "mb-2606-llama3-70b-sft-gb200"),
        ("mb-2606-llama3-70b-sft-gb200", "mb-2606-llama3-70b-sft-gb300"),
        ("mb-2606-llama3-70b-lora-h100", "mb-2606-llama3-70b-lora-gb200"),
        ("mb-2606-llama3-70b-lora-gb200", "mb-2606-llama3-70b-lora-gb300"),
    ],
    # cross-vendor: one model, length, precision and micro-batch on 8 GPUs of each vendor (both ways);
    # the H100's also differs in micro-batch and sharding
    AMD_PRIMUS: [
        ("mb-2511-llama3-8b-b200", "amd-llama31-8b-mi325x-1node"),
        ("amd-llama31-8b-mi325x-1node", "mb-2511-llama3-8b-b200"),
        ("mb-2511-llama3-8b-h100", "amd-llama31-8b-mi325x-1node"),
        ("amd-llama31-8b-mi325x-1node", "mb-2511-llama3-8b-h100"),
    ],
    NEMO_FRAMEWORK: [
        ("nemo-2407-llama3-8b-h100", "nemo-2502-llama3-8b-b200"),
        ("nemo-2407-llama3-70b-h100", "nemo-2502-llama3-70b-b200"),
        ("nemo-2502-llama3-8b-b200", "nemo-2504-llama3-8b-gb200"),
        ("nemo-2502-llama3-70b-b200", "nemo-2504-llama3-70b-gb200"),
        ("nemo-2502-llama3-405b-b200", "nemo-2504-llama3-405b-gb200"),
        ("nemo-2407-llama3-8b-h100", "nemo-2504-llama3-8b-gb200"),
    ],
}
