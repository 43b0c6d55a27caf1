"""bench_decompose.py: the kernel classifier on real kernel names, the wall-time split, and a
tiny CPU run end to end."""
import io

import pytest

from conftest import run_proc
from upgrade_bench.training import decompose, engine
from upgrade_bench import faults
from upgrade_bench.models.flops import StepFlops
from upgrade_bench.log.records import read_lines
from upgrade_bench.training import decompose_main as script



# Real names as torch's profiler reports them (demangled; long template arguments shortened
# where they add nothing the rules look at).
KERNELS = [
    # cuDNN SDPA: carry `flash`, `sm90` and `wgmma`, and must not land in gemm.
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0", "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_knob_26_64x64x128_1x4x1_kernel0_0", "attention"),
    # cuDNN SDPA's backward helpers, unclassified on the first H200 run (results/ logs).
    ("void cudnn::fusion::compute_dot_do_o_specialized<true, 128>(void const*, void const*, void*, "
     "void*, unsigned int, unsigned int, unsigned int)", "attention"),
    ("void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int, unsigned int)",
     "attention"),
    # torch's FA2 (template arguments name cutlass types).
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
     "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)", "attention"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, "
     "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, false, true>(pytorch_flash::Flash_bwd_params)",
     "attention"),
    ("void pytorch_flash::flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, "
     "2, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_bwd_params)", "attention"),
    ("void pytorch_flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, "
     "false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_bwd_params, int)", "attention"),
    # memory-efficient attention
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::"
     "bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "attention"),
    ("fmha_cutlassB_bf16_aligned_128x64_k128_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
     "cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 128, 64, 128, false>::Params)", "attention"),
    # FA3: CUTLASS device kernels in the flash:: namespace.
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<"
     "cute::C<128>, cute::C<176>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, "
     "true>, flash::CollectiveEpilogueFwd<...>, flash::StaticPersistentTileScheduler<false> > > >"
     "(flash::enable_sm90_or_later<...>::Params)", "attention"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::"
     "CollectiveMainloopBwdSm90<2, cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> > > > > >(...)", "attention"),
    ("void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<cute::tuple<cute::C<64>, cute::C<128> >, "
     "cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false> >(flash::FlashAttnBwdPreprocess<"
     "cute::tuple<cute::C<64>, cute::C<128> >, cutlass::bfloat16_t, float>::Params)", "attention"),
    ("void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<cute::C<64>, "
     "cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, 256> >(...)", "attention"),
    ("void flash::prepare_varlen_num_blocks_kernel<1, false>(int, int, int, int const*, int const*, "
     "int const*, int const*, int const*, int const*, int, int, int, int, int, cutlass::FastDivmod, "
     "cutlass::FastDivmod, int*, int*, bool)", "attention"),
    # FA4, CuTe DSL (SM90 and SM100 paths): names start with kernel_cutlass_kernel.
    ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm90FlashAttentionForwardSm90_object_at__"
     "tensorptrbf16gmemalign16odiv8_tensorptrbf16gmemalign16odiv8_0", "attention"),
    ("kernel_cutlass_kernel_flash_attncuteflash_bwd_sm90FlashAttentionBackwardSm90_object_at__"
     "tensorptrbf16gmemalign16odiv8_0", "attention"),
    ("kernel_cutlass_kernel_flash_attncuteflash_bwd_preprocessFlashAttentionBackwardPreprocess_object_at__"
     "tensorptrbf16gmemalign16odiv8_0", "attention"),
    ("kernel_cutlass_kernel_flash_attncuteflash_bwd_postprocessFlashAttentionBackwardPostprocess_object_at__"
     "tensorptrf32gmemalign16odiv4_0", "attention"),
    ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100FlashAttentionForwardSm100_object_at__"
     "tensorptrbf16gmemalign16odiv8_0", "attention"),
    ("kernel_cutlass_kernel_flash_attncuteflash_bwd_sm100FlashAttentionBackwardSm100_object_at__"
     "tensorptrbf16gmemalign16odiv8_0", "attention"),
    # GEMMs: cuBLAS (Hopper xmma, nvjet, Ampere), CUTLASS inside cuBLAS, split-K, gemv.
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
     "_kernel__5x_cublas", "gemm"),
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNN", "gemm"),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT", "gemm"),
    ("cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8", "gemm"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)", "gemm"),
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_32x6_tn", "gemm"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false, "
     "false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*)", "gemm"),
    ("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false>"
     "(...)", "gemm"),
    # NCCL
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm"),
    # everything else
    ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
     "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, "
     "3ul> >(int, at::native::BinaryFunctor<...>, std::array<char*, 3ul>)", "other"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
     "float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<...>)", "other"),
    ("_rms_norm_forward_kernel", "other"),
    ("_rms_norm_backward_kernel", "other"),
    ("_swiglu_forward_kernel", "other"),
    ("_swiglu_backward_kernel", "other"),
    ("_triton_rope", "other"),
    ("liger_cross_entropy_kernel", "other"),
    ("triton_poi_fused_add_mul_0", "other"),
    # an H200's FP8 experts (torchao's casts) and Granite's Mamba-2 layers (mamba-ssm's Triton)
    ("_triton_fp8_per_group_colwise_scales_dual_kernel", "other"),
    ("_triton_fp8_rowwise_3d_transpose_rhs_fused_reduction_kernel", "other"),
    ("_chunk_cumsum_fwd_kernel", "linear_mixer"),
    ("_chunk_cumsum_bwd_kernel", "linear_mixer"),
    ("_layer_norm_fwd_1pass_kernel", "other"),
    ("_layer_norm_bwd_kernel", "other"),
    # FlexAttention compiled by inductor (Triton templates), on an H200: a Triton name, attention's
    ("triton_tem_fused_flex_attention_0", "attention"),
    ("triton_tem_fused_flex_attention_backward_1", "attention"),
    ("triton_tem_fused_flex_attention_backward_mul_1", "attention"),  # in a Llama step's backward
    ("triton_per_fused_flex_attention_backward_0", "attention"),  # the backward's sum(dO * O) per row
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float>, float, float, "
     "float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>, "
     "AdamFunctor<float, float>, float, float, float, float, float, float, adamMode_t, float)", "other"),
    ("Memcpy HtoD (Pageable -> Device)", "other"),
    ("Memcpy DtoD (Device -> Device)", "other"),
    ("Memset (Device)", "other"),
    # CPU ops (a CPU run has no kernels)
    ("aten::scaled_dot_product_attention", "attention"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "attention"),
    ("aten::_efficient_attention_forward", "attention"),
    ("aten::mm", "gemm"),
    ("aten::addmm", "gemm"),
    ("aten::bmm", "gemm"),
    ("aten::matmul", "gemm"),
    ("aten::linear", "gemm"),
    ("aten::mul", "other"),
    ("c10d::allreduce_", "comm"),
    ("c10d::_reduce_scatter_base_", "comm"),  # FSDP2's, seen on two CPU ranks
    ("_c10d_functional::wait_tensor", "comm"),  # DTensor's, FSDP2's gradient clipping
]


@pytest.mark.parametrize("name,bucket", KERNELS, ids=[k[0][:60] for k in KERNELS])
def test_classifier_on_real_kernel_names(name, bucket):
    assert decompose.classify(name) == bucket
    assert decompose.match(name) is not None  # every family here is known: none unclassified


def test_attention_rules_precede_the_gemm_rules_that_also_match():
    fa3 = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...> > >(...)"
    fa4 = "kernel_cutlass_kernel_flash_attncuteflash_fwd_sm90FlashAttentionForwardSm90_object_at__x"
    cudnn = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_kernel0_0"
    gemm_rules = [r for r in decompose.RULES if r.bucket == "gemm"]
    # The names do contain what a GEMM rule looks for; only the order keeps them attention.
    assert any(r.pattern.search(fa3) for r in gemm_rules)
    assert any(r.pattern.search(fa4) for r in gemm_rules)
    assert not any(r.pattern.search(cudnn) for r in gemm_rules)  # sm90/wgmma alone are not a GEMM
    for name in (fa3, fa4, cudnn):
        assert decompose.match(name).bucket == "attention"
    assert "FA3" in decompose.match(fa3).family and "FA4" in decompose.match(fa4).family


def test_unknown_kernel_goes_to_other_unmatched():
    name = "void brand_new_vendor::fused_thing_kernel<128>(float*)"
    assert decompose.match(name) is None
    assert decompose.classify(name) == "other"


def test_split_wall_sums_to_wall_and_excludes_comm():
    per_bucket = {"attention": 200.0, "linear_mixer": 0.0, "gemm": 500.0, "other": 300.0, "comm": 400.0}
    ms = decompose.split_wall(123.0, per_bucket)
    assert ms == pytest.approx({"attention": 24.6, "linear_mixer": 0.0, "gemm": 61.5, "other": 36.9},
                               rel=1e-12)
    assert sum(ms.values()) == pytest.approx(123.0, rel=1e-12)
    # More NCCL time moves nothing: comm is overlapped, not part of the split.
    assert decompose.split_wall(123.0, {**per_bucket, "comm": 9e9}) == ms
    with pytest.raises(ValueError):
        decompose.split_wall(10.0, {"attention": 0.0, "linear_mixer": 0.0, "gemm": 0.0, "other": 0.0,
                                    "comm": 5.0})


def test_decompose_on_a_synthetic_profile():
    # Two profiled steps; wall step 100 ms. Compute kernels: attention 40 ms, gemm 100 ms,
    # other 60 ms over the 2 steps (200 ms), NCCL 50 ms. Shares 20/50/30 -> 20/50/30 ms.
    unknown = "some_new_family_kernel_" + "x" * 300
    kernel_us = {
        "kernel_cutlass_kernel_flash_attncuteflash_fwd_sm90FlashAttentionForwardSm90_object_at__a": 10_000.0,
        "kernel_cutlass_kernel_flash_attncuteflash_bwd_sm90FlashAttentionBackwardSm90_object_at__b": 30_000.0,
        "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNN": 100_000.0,
        "_rms_norm_forward_kernel": 20_000.0,
        unknown: 40_000.0,
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": 50_000.0,
    }
    step = StepFlops(dense=6e12, attention=2e12, linear=0.0, recompute=0.0)
    rec = decompose.decompose(100.0, kernel_us, steps=2, step_flops=step, peak_tflops=1000.0, top_n=3)
    b = rec["buckets"]
    assert b["attention"]["ms"] == pytest.approx(20.0)
    assert b["gemm"]["ms"] == pytest.approx(50.0)
    assert b["other"]["ms"] == pytest.approx(30.0)
    assert sum(x["ms"] for x in b.values()) == pytest.approx(rec["wall_step_ms"], rel=1e-12)
    assert b["attention"]["tflops"] == pytest.approx(100.0)  # 2 TFLOP in 20 ms
    assert b["attention"]["mfu"] == pytest.approx(0.1)
    assert b["gemm"]["tflops"] == pytest.approx(120.0)  # 6 TFLOP in 50 ms
    assert b["other"]["tflop"] is None and b["other"]["tflops"] is None and b["other"]["mfu"] is None
    assert b["gemm"]["time_share"] == pytest.approx(0.5)
    assert b["attention"]["kernel_ms_per_step"] == pytest.approx(20.0)
    assert rec["everything_else"]["tflops"] == pytest.approx(75.0)  # 6 TFLOP in 80 ms
    assert rec["total"] == pytest.approx({"tflop": 8.0, "ms": 100.0, "tflops": 80.0, "mfu": 0.08})
    assert rec["comm_share"] == pytest.approx(50 / 250)
    assert rec["comm_kernel_ms_per_step"] == pytest.approx(25.0)
    assert rec["kernel_busy_share"] == pytest.approx(1.0)  # 100 ms of compute kernels per step
    assert rec["attn_flop_share"] == pytest.approx(0.25)
    assert [k["ms"] for k in rec["top_kernels"]] == pytest.approx([50.0, 25.0, 20.0])
    assert [k["bucket"] for k in rec["top_kernels"]] == ["gemm", "comm", "other"]
    assert rec["top_kernels"][2]["name"] == unknown[:decompose.NAME_CHARS]
    assert rec["unclassified_top"] == [{"name": unknown[:decompose.NAME_CHARS], "ms": pytest.approx(20.0)}]


def test_table_lists_every_bucket():
    step = StepFlops(dense=6e12, attention=2e12, linear=0.0, recompute=0.0)
    rec = decompose.decompose(100.0, {"flash_fwd_kernel": 1.0, "aten::mm": 3.0, "aten::mul": 1.0},
                              1, step, None)
    rec.update(seq_len=8192, attn_backend="fa4", use_liger=True)
    text = decompose.table(rec)
    for label in ("attention", "gemm", "other", "everything else", "total", "seq_len 8192", "fa4"):
        assert label in text
    assert "60.0" in text  # gemm: 3/5 of 100 ms
    # On a CPU every figure is small: significant figures, not 0.0 (6 TFLOP in 60 s).
    slow = decompose.decompose(60_000.0, {"aten::mm": 1.0}, 1, step, None)
    slow.update(seq_len=64, attn_backend="sdpa", use_liger=False)
    gemm = next(line for line in decompose.table(slow).splitlines() if line.startswith("gemm"))
    assert gemm.split() == ["gemm", "60000", "100%", "0.100", "-"]


def _run(env_extra, timeout=240):
    return run_proc("bench_decompose.py", env_extra, timeout, cleared={var.name for var in script.VARS})


@pytest.mark.parametrize("env, message", [
    ({"PROFILE_STEPS": "0"}, "PROFILE_STEPS='0': expected an integer >= 1 and <= 100"),
    ({"TIME_STEPS": "x"}, "TIME_STEPS='x': expected an integer >= 1 and <= 10000"),
    # a config that cannot run here, found once torch and the model config are loaded
    ({"USE_LIGER": "1"}, "USE_LIGER=1: Liger kernels need a GPU (Triton has no CPU driver); use USE_LIGER=0 or "
                         "auto on CPU"),
])
def test_bad_input_exits_2_naming_the_variable(env, message, as_script, monkeypatch, capsys):
    # main in this process; a real process's exit code and stdout are test_tiny_cpu_run_end_to_end's
    # here and, for bad input on the same path (engine.run_script), benchmark.py's
    as_script("bench_decompose.py", script.VARS, {"MODEL": "tiny", "SEQ_LEN": "64", "TIME_STEPS": "1",
                                                  "PROFILE_STEPS": "1", "WARMUP_STEPS": "0", "RANK": "0",
                                                  "WORLD_SIZE": "1", **env})
    stdout = io.StringIO()
    monkeypatch.setattr("upgrade_bench.log.records.claim_stdout", lambda: stdout)
    monkeypatch.setattr(engine, "build_engine", lambda rc, mark: pytest.fail("bad input reached the engine"))
    assert faults.run_main(script.main) == 2
    assert capsys.readouterr().err == f"error: {message}\n" and stdout.getvalue() == ""  # before any record


def test_tiny_cpu_run_end_to_end(tmp_path):
    out = tmp_path / "decompose.jsonl"
    proc = _run({"MODEL": "tiny", "SEQ_LEN": "256", "TIME_STEPS": "2", "PROFILE_STEPS": "1",
                 "WARMUP_STEPS": "1", "OUTPUT": str(out)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == out.read_text().splitlines()  # stdout: the records alone
    records, _ = read_lines(out.read_text().splitlines())
    assert [r["kind"] for r in records] == ["header", "decomposition"]
    header, rec = records
    config = header["config"]
    assert (config["ZERO_STAGE"], config["GRAD_CHECKPOINT"], config["OFFLOAD_OPTIMIZER"]) == (2, False, False)
    assert (config["TIME_STEPS"], config["PROFILE_STEPS"]) == (2, 1) and "STEPS" not in config
    assert rec["seq_len"] == 256 and rec["source"].startswith("cpu ops")
    assert rec["attn_backend"] == "sdpa" and rec["use_liger"] is False
    buckets = rec["buckets"]
    assert set(buckets) == {"attention", "linear_mixer", "gemm", "other"}
    assert buckets["attention"]["ms"] > 0 and buckets["gemm"]["ms"] > 0  # aten ops by name
    assert sum(b["ms"] for b in buckets.values()) == pytest.approx(rec["wall_step_ms"], rel=1e-9)
    assert rec["wall_step_ms_min"] <= rec["wall_step_ms"] <= rec["wall_step_ms_max"]
    assert buckets["attention"]["tflop"] == pytest.approx(6 * 256**2 * 16 * 4 * 2 / 1e12)
    assert rec["total"]["tflop"] == pytest.approx(header["n_active_params"] * 6 * 256 / 1e12
                                                   + buckets["attention"]["tflop"])
    assert rec["peak_mem_gib"] is None and rec["total"]["mfu"] is None  # CPU: no peak, no HBM
    names = {k["name"]: k["bucket"] for k in rec["top_kernels"]}
    assert names.get("aten::mm") == "gemm"
    assert any(b == "attention" for b in names.values())
    assert isinstance(rec["unclassified_top"], list)
    assert "everything else" in proc.stderr and "total" in proc.stderr  # the human table


def test_linear_mixer_and_moe_routing_kernels_have_their_own_bucket_and_part():
    # One profiled step, wall 100 ms: FLA's Gated DeltaNet kernels 30 ms, a grouped expert GEMM
    # 50 ms (gemm), the router's top-k 10 ms and an elementwise kernel 10 ms (other).
    kernel_us = {
        "chunk_gated_delta_rule_fwd_kernel_h_blockdim64": 20_000.0,
        "chunk_scaled_dot_kkt_fwd_kernel": 10_000.0,
        "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<grouped>>": 50_000.0,
        "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>": 6_000.0,
        "void (anonymous namespace)::indexing_backward_kernel<c10::BFloat16, 4>(long const*)": 4_000.0,
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>": 10_000.0,
    }
    step = StepFlops(dense=5e12, attention=0.0, linear=0.6e12, recompute=0.0)
    rec = decompose.decompose(100.0, kernel_us, steps=1, step_flops=step, peak_tflops=1000.0)
    b = rec["buckets"]
    assert b["linear_mixer"]["ms"] == pytest.approx(30.0)
    assert b["linear_mixer"]["tflops"] == pytest.approx(20.0)  # 0.6 TFLOP in 30 ms
    assert b["gemm"]["ms"] == pytest.approx(50.0)
    assert b["other"]["ms"] == pytest.approx(20.0)
    assert b["other"]["moe_routing"]["ms"] == pytest.approx(10.0)
    assert rec["everything_else"]["tflop"] == pytest.approx(5.6)
    assert rec["unclassified_top"] == []
    assert "of other, MoE routing: 10.0 ms (10.0%)" in decompose.table({**rec, "seq_len": 8, "attn_backend": "fa4",
                                                                       "use_liger": False})


def test_a_low_precision_has_its_gemms_and_its_casts_apart():
    # One profiled step, wall 100 ms: float8 GEMMs 30 ms and a bf16 one 20 ms (gemm), the
    # converted linears' fused amax/cast 10 ms and an elementwise kernel 40 ms (other); the
    # converted linears did 3 of the step's 5 dense TFLOP.
    kernel_us = {
        "nvjet_sm90_qqtst_192x192_128x4_1x2_h_bz_coopB_TNN": 20_000.0,  # names of an H200's fp8 step
        "nvjet_sm90_qrtst_128x160_128x5_2x1_v_bz_coopA_algo2_TNT": 10_000.0,
        "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT": 20_000.0,
        "triton_red_fused_abs_max_view_0": 6_000.0,
        "triton_poi_fused__scaled_mm__to_copy_clamp_clone_mul_reciprocal_t_view_3": 4_000.0,
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>": 40_000.0,
    }
    step = StepFlops(dense=5e12, attention=0.0, linear=0.0, recompute=0.0)
    rec = decompose.decompose(100.0, kernel_us, steps=1, step_flops=step, peak_tflops=1000.0, low_tflop=3.0)
    b = rec["buckets"]
    assert (b["gemm"]["ms"], b["other"]["ms"]) == pytest.approx((50.0, 50.0))
    low = b["gemm"]["low_precision"]
    assert low["ms"] == pytest.approx(30.0) and low["tflops"] == pytest.approx(100.0)  # 3 TFLOP in 30 ms
    assert b["other"]["precision_cast"]["ms"] == pytest.approx(10.0)
    table = decompose.table({**rec, "seq_len": 8, "attn_backend": "fa4", "use_liger": True})
    assert "of gemm, low-precision GEMMs: 30.0 ms (30.0%), 100 TFLOPS" in table
    assert "of other, low-precision casts: 10.0 ms (10.0%)" in table
    bf16 = decompose.decompose(100.0, {"nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNN": 1.0}, 1, step, 1000.0)
    assert bf16["buckets"]["gemm"]["low_precision"] == {"ms": 0.0, "kernel_ms_per_step": 0.0, "tflop": None,
                                                        "tflops": None}


def test_torchaos_fp8_expert_casts_are_the_precision_cast_part():
    # torchao's FP8 grouped GEMM scales and casts in its own Triton kernels (an H200's names)
    for name in ("_triton_fp8_per_group_colwise_scales_dual_kernel", "_triton_fp8_rowwise_2d_fused_scale_and_cast_kernel"):
        assert decompose.match(name).part == decompose.PRECISION_CAST
