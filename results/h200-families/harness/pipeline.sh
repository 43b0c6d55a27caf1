#!/usr/bin/env bash
# Issue 23 on one H200: MoE, hybrid linear-attention and sliding-window models through the
# suite, with the guide's benchmark.py (patched: random init, layer cut) on the same GPU in
# the same pipeline. Run with setsid from the repository root after bootstrap.sh install;
# writes /tmp/fam/ and, at the end, /tmp/fam.tar.gz.
set -u
source /tmp/site/env.sh
O=/tmp/fam; mkdir -p $O
rm -rf /tmp/repo && cp -r "$PWD" /tmp/repo && cd /tmp/repo
export TORCH_EXTENSIONS_DIR=/tmp/ext_fam   # this pipeline's own cache: runs are sequential
say() { echo "$(date +%T) $*" >> $O/progress.log; }
run() {  # run NAME TIMEOUT_S ENV... CMD...: stdout, stderr and rc kept per run
  local name=$1 limit=$2; shift 2
  say "start $name"
  timeout -k 10 "$limit" env "$@" > $O/$name.out 2> $O/$name.err
  say "end $name rc=$?"
}
nvidia-smi > $O/nvidia-smi.txt 2>&1
RS="ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 WARMUP_STEPS=2"
# 1. Qwen3-30B-A3B's dimensions, 4 layers (all MoE): the suite at 8K and 32K without Liger,
#    then its guide-script twin at 8K (Liger off there too: it would patch Llama's classes),
#    then the decomposition with the suite's defaults for the rest (Liger auto).
run q3moe_bench 420 $RS MODEL=qwen3-30b-a3b NUM_LAYERS=4 SEQ_LEN="8192 32768" STEPS=5 USE_LIGER=0 \
    OUTPUT=$O/q3moe_bench.jsonl python benchmark.py
mkdir -p /tmp/cfgq && cp configs/qwen3-30b-a3b.json /tmp/cfgq/config.json
run q3moe_8k_guide 300 CFG_DIR=/tmp/cfgq NUM_LAYERS=4 ZERO_STAGE=2 GRAD_CHECKPOINT=0 OFFLOAD_OPTIMIZER=0 \
    USE_LIGER=0 ATTN=flash_attention_4 SEQ_LEN=8192 STEPS=5 WARMUP_STEPS=2 OUTPUT=$O/q3moe_8k_guide.jsonl \
    deepspeed --num_gpus=1 .gpu/reference/guide_benchmark.py
run q3moe_decompose 360 $RS MODEL=qwen3-30b-a3b NUM_LAYERS=4 SEQ_LEN="8192 32768" \
    OUTPUT=$O/q3moe_decompose.jsonl python bench_decompose.py
# 2. Qwen3-Next-80B-A3B's dimensions, 4 layers (3 Gated DeltaNet : 1 full), FLA installed.
run q3next_bench 300 $RS MODEL=qwen3-next-80b-a3b NUM_LAYERS=4 SEQ_LEN="8192 32768" STEPS=5 \
    OUTPUT=$O/q3next_bench.jsonl python benchmark.py
grep -q '"kind": "summary"' $O/q3next_bench.jsonl 2>/dev/null &&
  run q3next_decompose 240 $RS MODEL=qwen3-next-80b-a3b NUM_LAYERS=4 SEQ_LEN="8192 32768" \
      OUTPUT=$O/q3next_decompose.jsonl python bench_decompose.py
# 3. gpt-oss-20b's dimensions, 4 layers (2 sliding : 2 full, sinks): FA4 first, eager where refused.
run gptoss_bench_fa4 240 $RS MODEL=gpt-oss-20b NUM_LAYERS=4 SEQ_LEN="8192 32768" STEPS=5 ATTN_BACKEND=fa4 \
    OUTPUT=$O/gptoss_bench.jsonl python benchmark.py
grep -q '"kind": "summary"' $O/gptoss_bench.jsonl 2>/dev/null ||
  run gptoss_bench_eager 200 $RS MODEL=gpt-oss-20b NUM_LAYERS=4 SEQ_LEN=8192 STEPS=5 ATTN_BACKEND=eager \
      OUTPUT=$O/gptoss_bench.jsonl python benchmark.py
backend=$(grep -q '"attn_backend": "fa4"' $O/gptoss_bench.jsonl && grep -q '"kind": "summary"' $O/gptoss_bench.jsonl && echo fa4 || echo eager)
lens=$([ $backend = fa4 ] && echo "8192 32768" || echo 8192)
run gptoss_decompose 240 $RS MODEL=gpt-oss-20b NUM_LAYERS=4 SEQ_LEN="$lens" ATTN_BACKEND=$backend \
    OUTPUT=$O/gptoss_decompose.jsonl python bench_decompose.py
# 4. Isolated attention with each model's heads (fwd+bwd, the two backends training picks here).
for m in qwen3-30b-a3b qwen3-next-80b-a3b gpt-oss-20b; do
  run attn_$m 120 MODEL=$m SEQLENS="8192 32768" BACKENDS="fa4 sdpa-cudnn" PASSES="fwd_bwd" \
      OUTPUT=$O/attention_models.jsonl python bench_flash_attn.py
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> $O/nvidia-smi.txt 2>&1
say "done"
tar czf /tmp/fam.tar.gz -C /tmp fam
