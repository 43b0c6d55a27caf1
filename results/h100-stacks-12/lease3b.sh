#!/bin/bash
# Lease 3, second part: what the world-of-one path buys (the sharded engine of 634f28b on one GPU,
# same machine), Liger off in eager, and 16K side by side with torchtitan.
cd "$(dirname "$0")/.."
R=/tmp/r; mkdir -p $R/stderr $R/variants
source /tmp/site/env.sh
export PYTHONPATH=/tmp/site:$PYTHONPATH TORCH_EXTENSIONS_DIR=/tmp/ext-lease3
unset OUT
RS="MODEL=llama-3.1-8b NUM_LAYERS=8 ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 ATTN_BACKEND=fa4 STEPS=5 WARMUP_STEPS=2 GPUS=1"
run() { local name=$1 lim=$2; shift 2
  echo "$(date +%T) start $name (limit ${lim}s): $*" >> $R/progress.log
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader >> $R/progress.log 2>&1
  local s=$(date +%s)
  timeout -k 10 $lim "$@" > $R/stderr/$name.out 2> $R/stderr/$name.txt
  echo "$(date +%T) end $name rc=$? wall=$(( $(date +%s)-s ))s" >> $R/progress.log; }
run fsdp2_eager_noliger_bf16 150 env $RS USE_LIGER=0 ENGINE=fsdp2 PRECISION=bf16 SEQLENS=8192 \
  OUT=$R/variants/fsdp2_eager_noliger_bf16.jsonl ./run_sweep.sh
E=upgrade_bench/training/engines/fsdp2.py; cp $E /tmp/fsdp2_new.py; cp .gpu/fsdp2_sharded.py $E
echo "$(date +%T) engine: sharded on one GPU (634f28b)" >> $R/progress.log
run sharded_eager_liger_bf16 150 env $RS USE_LIGER=1 ENGINE=fsdp2 PRECISION=bf16 SEQLENS=8192 \
  OUT=$R/variants/sharded_eager_liger_bf16.jsonl ./run_sweep.sh
run sharded_compiled_noliger_bf16 150 env $RS USE_LIGER=0 ENGINE=fsdp2 COMPILE=1 PRECISION=bf16 SEQLENS=8192 \
  OUT=$R/variants/sharded_compiled_noliger_bf16.jsonl ./run_sweep.sh
cp /tmp/fsdp2_new.py $E
echo "$(date +%T) engine: this checkout's" >> $R/progress.log
for p in bf16 fp8-tensorwise; do
  run fsdp2_compiled_${p}_16k 150 env $RS USE_LIGER=0 ENGINE=fsdp2 COMPILE=1 PRECISION=$p SEQLENS=16384 \
    OUT=$R/variants/fsdp2_compiled_${p}_16k.jsonl ./run_sweep.sh
done
run titan_16k 300 env OUT=$R/stacks-16k REPEAT=1 SEQLENS=16384 ENGINES="fsdp2" TITAN_PYTHON=python3 \
  TITAN_PRECISIONS="bf16 fp8-tensorwise" TITAN_STEPS=8 PYTHON=python3 bash tools/side_by_side.sh torchtitan
echo "$(date +%T) all done b" >> $R/progress.log
