#!/usr/bin/env bash
# Issue 14's 1-GPU comparisons (1x H200), one pipeline under setsid spanning device calls.
# Every comparison: the suite and its yardstick on the same GPU, in this one pipeline, with
# nothing else running on the host while anything is timed (load average logged before each).
set -u
W=/tmp/w; R=$W/repo; O=$W/out; mkdir -p $O
L=$O/pipeline.log
log() { echo "$(date +%T) $*" >> $L; }
quiet() { log "load average: $(cut -d' ' -f1-3 /proc/loadavg); python processes: $(pgrep -c python3)"; }
cd $R
source .gpu/bin/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8   # the guide script's own default, set for every run
G=$R/.gpu/ref
RS="NUM_LAYERS=8 ZERO_STAGE=2 GRAD_CHECKPOINT=0 OFFLOAD_OPTIMIZER=0 USE_LIGER=1 STEPS=5 WARMUP_STEPS=2"
# guide_bg NAME PORT ENV...: the guide's script, its model built now, held at the gate go_NAME
guide_bg() {
  local name=$1 port=$2; shift 2
  ( cd /tmp && env "$@" CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_$name \
      deepspeed --num_gpus=1 --master_port=$port $R/.gpu/bin/gate.py $G/guide_benchmark.py \
      > $O/guide_$name.txt 2> $O/guide_$name.err
    echo "# exit $?" >> $O/guide_$name.txt; touch $W/done_$name ) &
  log "guide $name: building (held before deepspeed.initialize)"
}
built() {  # wait (at most 10 min) until every named guide run is held at its gate
  local n t=0
  for n in "$@"; do
    while [ ! -e $W/go_$n.built.0 ] && [ ! -e $W/done_$n ] && [ $t -lt 600 ]; do sleep 1; t=$((t+1)); done
  done
  log "guide $*: built"
}
release() {  # open its gate, wait (at most 10 min) for it to finish
  log "guide $1: released"; quiet; touch $W/go_$1
  local t=0; while [ ! -e $W/done_$1 ] && [ $t -lt 600 ]; do sleep 1; t=$((t+1)); done
  grep -h '^{' $O/guide_$1.txt > $O/guide_$1.jsonl
  log "guide $1: $(tail -1 $O/guide_$1.txt) $(grep -h '^{' $O/guide_$1.txt | tail -1) $(grep -h 'exact peak' $O/guide_$1.err)"
}
log "start"; nvidia-smi --query-gpu=index,name,clocks.sm,power.limit,temperature.gpu --format=csv >> $L

# DeepSpeed's JIT op (FusedAdam, the right-sized config's) built once while the guide's models build
python3 -c "from deepspeed.ops.op_builder import FusedAdamBuilder; FusedAdamBuilder().load()" > $O/jit.log 2>&1 &
JIT=$!
guide_bg rs8192 29611 $RS SEQ_LEN=8192
guide_bg rs32768a 29612 $RS SEQ_LEN=32768
guide_bg rs32768b 29613 $RS SEQ_LEN=32768
wait $JIT; log "JIT op built: exit $?"
built rs8192 rs32768a rs32768b
sleep 5; quiet

# 1. Attention: suite, probe (do_bench) at 8K and 32K, suite; then both on one callable in one
#    process; then the suite's FA4 32K fwd alone in a fresh process (the probe's situation)
A="BACKENDS=fa4,sdpa-cudnn SEQLENS=8192,32768 PASSES=fwd,fwd_bwd OUTPUT=$O/attention_suite.jsonl"
log "attention suite 1"
env $A NOTES="sustained timing, run 1 of 2, before the do_bench probe in the same pipeline" python3 bench_flash_attn.py > /dev/null 2>> $O/attention.err
log "attention do_bench probe"
for S in 8192 32768; do S=$S python3 $G/attention_do_bench_probe.py >> $O/attention_do_bench.txt 2>> $O/attention.err; done
log "attention suite 2"
env $A NOTES="sustained timing, run 2 of 2, after the do_bench probe in the same pipeline" python3 bench_flash_attn.py > /dev/null 2>> $O/attention.err
log "attention same state (suite and do_bench alternating on one callable)"
OUT_FILE=$O/attention_same_state.jsonl python3 .gpu/bin/attn_same_state.py > /dev/null 2>> $O/attention.err
log "attention suite, FA4 32K fwd alone in a fresh process"
BACKENDS=fa4 SEQLENS=32768 PASSES=fwd OUTPUT=$O/attention_suite_fresh32k.jsonl NOTES="FA4 32K fwd alone in a fresh process, as the do_bench probe measures it" \
  python3 bench_flash_attn.py > /dev/null 2>> $O/attention.err
quiet

# 2. MAMF classic scan: published tool and suite, alternating, three of each
M="--m 1024 5632 --n 1536 4096 --k 13312 16640"
for i in 1 2 3; do
  log "mamf published $i"
  python3 $G/guide_mamf_finder.py $M --output_file $O/mamf_published_$i.txt > /dev/null 2>> $O/mamf.err
  log "mamf suite $i"
  python3 mamf-finder.py $M --output_file $O/mamf_suite.jsonl --notes "classic scan, run $i of 3, alternating with the published mamf-finder" > /dev/null 2>> $O/mamf.err
done
nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv >> $L

# 3. Right-sized 8K and 32K: run_sweep.sh with its defaults (a fresh process per length),
#    the guide's script (a fresh process per length), then 32K once more each
log "right-sized suite: run_sweep.sh 8K 32K"; quiet
env $RS MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQLENS="8192 32768" GPUS=1 OUT=$O/rightsized_suite.jsonl \
  NOTES="8B cut to 8 layers, 1 GPU, ZeRO-2, no ckpt/offload, Liger, FA4; run_sweep.sh defaults; side by side with the guide's script in the same pipeline" \
  ./run_sweep.sh > $O/rightsized_sweep.out 2> $O/rightsized_sweep.err
log "right-sized suite exit $?"
release rs8192; release rs32768a
log "right-sized suite: run_sweep.sh 32K again"; quiet
env $RS MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQLENS="32768" GPUS=1 OUT=$O/rightsized_suite.jsonl \
  NOTES="8B cut to 8 layers, 1 GPU, ZeRO-2, no ckpt/offload, Liger, FA4; run_sweep.sh defaults; 32K repeated; side by side with the guide's script in the same pipeline" \
  ./run_sweep.sh >> $O/rightsized_sweep.out 2>> $O/rightsized_sweep.err
log "right-sized suite exit $?"
release rs32768b
nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv >> $L
log "done"; touch $O/ALL_DONE
