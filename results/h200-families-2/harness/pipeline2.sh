#!/usr/bin/env bash
# The same session's second half, started while pipeline.sh ran its isolated-attention runs:
# pipeline.sh's Qwen3-Next run ran out of memory (4 layers of 512 experts: 7.2B parameters
# with the embeddings, 107 GiB of weights, gradients and Adam state on one GPU), so this
# stops pipeline.sh after its attention runs and reruns Qwen3-Next with the optimizer on the
# host, then the ZeRO-3 leaf-module pair and the default bench_flash_attn.py.
set -u
source /tmp/site/env.sh
O=/tmp/fam2
cd /tmp/repo && cp "$OLDPWD"/results/h200-families-2/harness/pipeline2.sh results/h200-families-2/harness/ 2>/dev/null
say() { echo "$(date +%T) $*" >> $O/progress.log; }
run() {
  local name=$1 limit=$2 t0=$SECONDS; shift 2
  say "start $name"
  TORCH_EXTENSIONS_DIR=/tmp/ext_$name timeout -k 10 "$limit" env "$@" > $O/$name.out 2> $O/$name.err
  say "end $name rc=$? wall_s=$((SECONDS - t0))"
}
until grep -q "start gptoss_decompose" $O/progress.log; do sleep 2; done
for p in $(pgrep -f "harness/[p]ipeline.sh"); do kill -- -$p 2>/dev/null || kill $p; done
sleep 3; say "pipeline.sh stopped before gptoss_decompose"
TRI="PYTHONPATH=/tmp/tri371:$PYTHONPATH"
run q3next_bench_offload 420 $TRI ZERO_STAGE=2 OFFLOAD_OPTIMIZER=1 GRAD_CHECKPOINT=0 WARMUP_STEPS=1 STEPS=3 \
    MODEL=qwen3-next-80b-a3b NUM_LAYERS=4 SEQ_LEN=8192 OUTPUT=$O/q3next_bench.jsonl python benchmark.py
for leaf in 1 0; do
  run z3_leaf$leaf 200 ZERO_STAGE=3 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 WARMUP_STEPS=1 STEPS=3 \
      MODEL=qwen3-30b-a3b NUM_LAYERS=4 SEQ_LEN=8192 USE_LIGER=0 ZERO3_LEAF_MOE=$leaf \
      OUTPUT=$O/z3_leaf.jsonl python benchmark.py
done
run attn_default 240 OUTPUT=$O/attention_default.jsonl python bench_flash_attn.py
say "done"
touch $O/done
