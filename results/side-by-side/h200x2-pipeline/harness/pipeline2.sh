#!/usr/bin/env bash
# The guide's runs again (the gate dropped the launcher's --local_rank first), after the suite's.
set -u
W=/tmp/w; R=$W/repo; O=$W/out
L=$O/pipeline.log
log() { echo "$(date +%T) $*" >> $L; }
cd $R
source .gpu/bin/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8
G=$R/.gpu/ref
RS="NUM_LAYERS=8 ZERO_STAGE=2 GRAD_CHECKPOINT=0 OFFLOAD_OPTIMIZER=0 USE_LIGER=1 STEPS=5 WARMUP_STEPS=2"
LC="ZERO_STAGE=3 GRAD_CHECKPOINT=1 OFFLOAD_OPTIMIZER=1 USE_LIGER=1 STEPS=1 WARMUP_STEPS=1"
rm -f $W/go_* $W/done_*
guide_bg() {
  local name=$1 n=$2 port=$3; shift 3
  ( cd /tmp && env "$@" CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_$name \
      deepspeed --num_gpus=$n --master_port=$port $R/.gpu/bin/gate.py $G/guide_benchmark.py \
      > $O/guide_$name.txt 2> $O/guide_$name.err
    echo "# exit $?" >> $O/guide_$name.txt; touch $W/done_$name ) &
  log "guide $name: building (held before deepspeed.initialize)"
}
release() {
  log "guide $1: released"; touch $W/go_$1
  local t=0; while [ ! -e $W/done_$1 ] && [ $t -lt 1200 ]; do sleep 1; t=$((t+1)); done
  grep -h '^{' $O/guide_$1.txt > $O/guide_$1.jsonl
  log "guide $1: $(tail -1 $O/guide_$1.txt) $(grep -h '^{' $O/guide_$1.txt | tail -1)"
}
log "pipeline2: guide builds while the long-context suite runs"
for S in 8192 32768; do guide_bg rs$S 1 2971${S:0:1} $RS SEQ_LEN=$S; done
guide_bg lc8192 2 29721 $LC SEQ_LEN=8192
guide_bg lc32768 2 29723 $LC SEQ_LEN=32768
while [ ! -e $O/ALL_DONE ]; do sleep 1; done
rm -f $O/ALL_DONE; log "pipeline2: the suite's runs are done"
release rs8192; release rs32768
release lc8192
release lc32768
guide_bg lc131072 2 29725 $LC SEQ_LEN=131072   # built with nothing else running
release lc131072
log "pipeline2 done"; touch $O/ALL_DONE2
