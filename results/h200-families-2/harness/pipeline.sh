#!/usr/bin/env bash
# Issue 23, second session on one H200: Qwen3-Next with FLA on Triton 3.7.1 (FLA 0.6.0 refuses
# its Gated DeltaNet backward on Hopper under Triton < 3.7.1), each model's own attention
# layers in bench_flash_attn.py, ZeRO-3 with and without MoE leaf modules, gpt-oss's
# decomposition with Liger, the default bench_flash_attn.py's duration, and the guide's
# kernel yardsticks on the same GPU. Run with setsid from the repository root after
# bootstrap.sh install, with Triton 3.7.1's slimmed tarball parts in /root/tri; writes
# /tmp/fam2/ (and /tmp/fam2/done at the end).
set -u
source /tmp/site/env.sh
O=/tmp/fam2; mkdir -p $O
rm -rf /tmp/repo && cp -r "$PWD" /tmp/repo && cd /tmp/repo
say() { echo "$(date +%T) $*" >> $O/progress.log; }
run() {  # run NAME TIMEOUT_S ENV... CMD...: stdout, stderr, rc and wall time kept per run
  local name=$1 limit=$2 t0=$SECONDS; shift 2
  say "start $name"
  TORCH_EXTENSIONS_DIR=/tmp/ext_$name timeout -k 10 "$limit" env "$@" > $O/$name.out 2> $O/$name.err
  say "end $name rc=$? wall_s=$((SECONDS - t0))"
}
nvidia-smi > $O/nvidia-smi.txt 2>&1
# Triton 3.7.1 beside the venv's 3.6.0, for the Qwen3-Next runs only (its own PYTHONPATH entry).
mkdir -p /tmp/tri371 && cat /root/tri/part.* | xz -d | tar x -C /tmp/tri371 && say "triton 3.7.1 unpacked"
TRI="PYTHONPATH=/tmp/tri371:$PYTHONPATH"
run tri_check 120 $TRI python -c "
import triton, torch, fla
from fla.ops.gated_delta_rule import chunk_gated_delta_rule
import torch.nn.functional as F
print('triton', triton.__version__, 'fla', fla.__version__)
b, s, h, d = 1, 4096, 32, 128
q, k, v = (torch.randn(b, s, h, d, device='cuda', dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
g = F.logsigmoid(torch.randn(b, s, h, device='cuda')).requires_grad_()
beta = torch.rand(b, s, h, device='cuda', dtype=torch.bfloat16).requires_grad_()
o, _ = chunk_gated_delta_rule(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
o.sum().backward(); torch.cuda.synchronize(); print('fwd+bwd ok', o.shape)
"
grep -n "chunk_gated_delta_rule\|FusedRMSNormGated\|causal_conv1d_fn\|lazy_load\|is_fast_path" \
  /opt/torch/.venv/lib/python3.12/site-packages/transformers/models/qwen3_next/modeling_qwen3_next.py \
  > $O/tf517_qwen3_next_bindings.txt 2>&1
RS="ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 WARMUP_STEPS=2"
# 1. Qwen3-Next-80B-A3B's dimensions, 4 layers (3 Gated DeltaNet : 1 full), FLA on Triton 3.7.1.
run q3next_bench 360 $TRI $RS MODEL=qwen3-next-80b-a3b NUM_LAYERS=4 SEQ_LEN="8192 32768" STEPS=5 \
    OUTPUT=$O/q3next_bench.jsonl python benchmark.py
run q3next_decompose 300 $TRI $RS MODEL=qwen3-next-80b-a3b NUM_LAYERS=4 SEQ_LEN="8192 32768" \
    OUTPUT=$O/q3next_decompose.jsonl python bench_decompose.py
# 2. Each model's own attention layers (the default backends: what training picks, and cuDNN).
run attn_qwen3-next 150 $TRI MODEL=qwen3-next-80b-a3b SEQLENS="8192 32768" OUTPUT=$O/attention_layers.jsonl \
    python bench_flash_attn.py
for m in gpt-oss-20b gemma-3-12b qwen3-30b-a3b deepseek-v3; do
  run attn_$m 150 MODEL=$m SEQLENS="8192 32768" OUTPUT=$O/attention_layers.jsonl python bench_flash_attn.py
done
# 3. gpt-oss's decomposition at 8K and 32K with Liger (its fused cross-entropy keeps the
#    201,088-token logits out of memory at 32K).
run gptoss_decompose 300 $RS MODEL=gpt-oss-20b NUM_LAYERS=4 SEQ_LEN="8192 32768" ATTN_BACKEND=fa4 USE_LIGER=1 \
    OUTPUT=$O/gptoss_decompose.jsonl python bench_decompose.py
# 4. ZeRO-3, MoE blocks as leaf modules and not, same model, same GPU, back to back.
for leaf in 1 0; do
  run z3_leaf$leaf 240 ZERO_STAGE=3 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 WARMUP_STEPS=2 STEPS=5 \
      MODEL=qwen3-30b-a3b NUM_LAYERS=4 SEQ_LEN=8192 USE_LIGER=0 ZERO3_LEAF_MOE=$leaf \
      OUTPUT=$O/z3_leaf.jsonl python benchmark.py
done
# 5. bench_flash_attn.py with its defaults (Llama-3.1-8B heads, 1K..128K, 3 passes), then the
#    guide's script and the do_bench probe on the same GPU.
run attn_default 300 OUTPUT=$O/attention_default.jsonl python bench_flash_attn.py
run guide_attn 200 SEQLENS="8192 32768" python .gpu/reference/guide_bench_flash_attn.py
run do_bench_32k 120 S=32768 python .gpu/reference/attention_do_bench_probe.py
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> $O/nvidia-smi.txt 2>&1
say "done"
touch $O/done
