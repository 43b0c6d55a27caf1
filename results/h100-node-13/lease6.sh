#!/bin/bash
# Lease 6 (issue 52): a second H100 node at 8K and 16K (the project's same-die pair gains a 16K
# figure and a node check of its own), then the shipped torchtitan side-by-side with the suite's
# DeepSpeed and FSDP2 compiled engines (issue 56's tool, not yet run on a GPU as shipped).
cd "$(dirname "$0")/.."
source /tmp/site/env.sh
R=/tmp/r; mkdir -p $R/stderr
RS="MODEL=llama-3.1-8b NUM_LAYERS=8 ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0"
run() { local name=$1 lim=$2; shift 2
  echo "$(date +%T) start $name (limit ${lim}s): $*" >> $R/progress.log
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader >> $R/progress.log 2>&1
  local s=$(date +%s)
  timeout -k 10 $lim "$@" > $R/stderr/$name.out 2> $R/stderr/$name.txt
  echo "$(date +%T) end $name rc=$? wall=$(( $(date +%s)-s ))s" >> $R/progress.log; }
nvidia-smi > $R/nvidia-smi.txt 2>&1
pip list 2>/dev/null > $R/pip-list.txt
run node 600 env -u OUT $RS SEQLENS="8192 16384" NODE_OUT=$R/node TORCH_EXTENSIONS_DIR=/tmp/ext-node bash run_node.sh
bash .gpu/titan-setup.sh > $R/titan-setup.log 2>&1 || echo "titan setup failed rc=$?" >> $R/progress.log
export PYTHONPATH=/tmp/site:$PYTHONPATH
run stacks_8k 600 env OUT=$R/stacks-8k REPEAT=1 SEQLENS=8192 ENGINES="deepspeed fsdp2-compiled" TITAN_PYTHON=python3 \
  TITAN_PRECISIONS="bf16" PYTHON=python3 TORCH_EXTENSIONS_DIR=/tmp/ext-titan bash tools/side_by_side.sh torchtitan
echo "$(date +%T) all done" >> $R/progress.log
