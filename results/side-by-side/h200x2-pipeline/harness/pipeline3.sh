#!/usr/bin/env bash
# Take over from pipeline2 (its wait deadlocked): 128K guide build now, release the built ones.
set -u
W=/tmp/w; R=$W/repo; O=$W/out; L=$O/pipeline.log
log() { echo "$(date +%T) $*" >> $L; }
cd $R; source .gpu/bin/env.sh; export CUBLAS_WORKSPACE_CONFIG=:4096:8; G=$R/.gpu/ref
LC="ZERO_STAGE=3 GRAD_CHECKPOINT=1 OFFLOAD_OPTIMIZER=1 USE_LIGER=1 STEPS=1 WARMUP_STEPS=1"
rm -f $W/go_lc131072 $W/done_lc131072
( cd /tmp && env $LC SEQ_LEN=131072 CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_lc131072 \
    deepspeed --num_gpus=2 --master_port=29735 $R/.gpu/bin/gate.py $G/guide_benchmark.py \
    > $O/guide_lc131072.txt 2> $O/guide_lc131072.err; echo "# exit $?" >> $O/guide_lc131072.txt; touch $W/done_lc131072 ) &
log "pipeline3: guide lc131072 building now, while the built guide runs go (overlap noted)"
release() {
  log "guide $1: released"; touch $W/go_$1
  local t=0; while [ ! -e $W/done_$1 ] && [ $t -lt 1200 ]; do sleep 1; t=$((t+1)); done
  grep -h '^{' $O/guide_$1.txt > $O/guide_$1.jsonl
  log "guide $1: $(tail -1 $O/guide_$1.txt) $(grep -h '^{' $O/guide_$1.txt | tail -1)"
}
for n in rs8192 rs32768 lc8192 lc32768 lc131072; do release $n; done
log "pipeline3 done"; touch $O/ALL_DONE2
