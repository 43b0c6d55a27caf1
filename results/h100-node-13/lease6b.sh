#!/bin/bash
# Lease 6, second part: the shipped torchtitan side-by-side (the setup script was not carried in the first).
cd "$(dirname "$0")/.."
source /tmp/site/env.sh
R=/tmp/r; mkdir -p $R/stderr
run() { local name=$1 lim=$2; shift 2
  echo "$(date +%T) start $name (limit ${lim}s): $*" >> $R/progress.log
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader >> $R/progress.log 2>&1
  local s=$(date +%s)
  timeout -k 10 $lim "$@" > $R/stderr/$name.out 2> $R/stderr/$name.txt
  echo "$(date +%T) end $name rc=$? wall=$(( $(date +%s)-s ))s" >> $R/progress.log; }
bash .gpu/titan-setup.sh > $R/titan-setup.log 2>&1 || { echo "titan setup failed rc=$?" >> $R/progress.log; exit 1; }
export PYTHONPATH=/tmp/site:$PYTHONPATH
run stacks_8k_b 600 env OUT=$R/stacks-8k REPEAT=1 SEQLENS=8192 ENGINES="deepspeed fsdp2-compiled" TITAN_PYTHON=python3 \
  TITAN_PRECISIONS="bf16" PYTHON=python3 TORCH_EXTENSIONS_DIR=/tmp/ext-titan bash tools/side_by_side.sh torchtitan
echo "$(date +%T) all done b" >> $R/progress.log
