#!/bin/bash
# Lease 3 (issue 56): torchtitan 0.2.2 beside the suite's DeepSpeed and FSDP2 (now torchtitan's
# single-device path on one GPU) at 8K, bf16 and fp8-tensorwise, in one pipeline on one GPU; then
# FSDP2 compiled (with and without Liger), 32K, and the decomposition of FSDP2's step.
cd "$(dirname "$0")/.."
R=/tmp/r; mkdir -p $R/stderr
source /tmp/site/env.sh
bash .gpu/titan-setup.sh > $R/titan-setup.log 2>&1 || { echo "titan setup failed" >> $R/progress.log; exit 1; }
export PYTHONPATH=/tmp/site:$PYTHONPATH TORCH_EXTENSIONS_DIR=/tmp/ext-lease3
unset OUT
RS="MODEL=llama-3.1-8b NUM_LAYERS=8 ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 ATTN_BACKEND=fa4 STEPS=5 WARMUP_STEPS=2 GPUS=1"
run() { local name=$1 lim=$2; shift 2
  echo "$(date +%T) start $name (limit ${lim}s): $*" >> $R/progress.log
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader >> $R/progress.log 2>&1
  local s=$(date +%s)
  timeout -k 10 $lim "$@" > $R/stderr/$name.out 2> $R/stderr/$name.txt
  echo "$(date +%T) end $name rc=$? wall=$(( $(date +%s)-s ))s" >> $R/progress.log; }
nvidia-smi > $R/nvidia-smi.txt 2>&1
run stacks_8k 600 env OUT=$R/stacks-8k REPEAT=1 SEQLENS=8192 ENGINES="deepspeed fsdp2" TITAN_PYTHON=python3 \
  TITAN_PRECISIONS="bf16 fp8-tensorwise" TITAN_STEPS=12 PYTHON=python3 bash tools/side_by_side.sh torchtitan
for p in bf16 fp8-tensorwise; do
  run fsdp2_compiled_${p} 200 env $RS USE_LIGER=0 ENGINE=fsdp2 COMPILE=1 PRECISION=$p SEQLENS=8192 \
    OUT=$R/variants/fsdp2_compiled_$p.jsonl ./run_sweep.sh
done
run fsdp2_compiled_liger_bf16 200 env $RS USE_LIGER=1 ENGINE=fsdp2 COMPILE=1 PRECISION=bf16 SEQLENS=8192 \
  OUT=$R/variants/fsdp2_compiled_liger_bf16.jsonl ./run_sweep.sh
run stacks_32k 500 env OUT=$R/stacks-32k REPEAT=1 SEQLENS=32768 ENGINES="fsdp2" TITAN_PYTHON=python3 \
  TITAN_PRECISIONS="bf16" TITAN_STEPS=8 PYTHON=python3 bash tools/side_by_side.sh torchtitan
run fsdp2_compiled_bf16_32k 240 env $RS USE_LIGER=0 ENGINE=fsdp2 COMPILE=1 PRECISION=bf16 SEQLENS=32768 \
  OUT=$R/variants/fsdp2_compiled_bf16_32k.jsonl ./run_sweep.sh
run fsdp2_decompose 300 env $RS USE_LIGER=0 ENGINE=fsdp2 COMPILE=1 DECOMPOSE=3 SEQLENS=8192 \
  OUT=$R/variants/fsdp2_compiled_decompose.jsonl ./run_sweep.sh
run deepspeed_decompose 300 env $RS USE_LIGER=1 DECOMPOSE=3 SEQLENS=8192 \
  OUT=$R/variants/deepspeed_decompose.jsonl ./run_sweep.sh
echo "$(date +%T) all done" >> $R/progress.log
