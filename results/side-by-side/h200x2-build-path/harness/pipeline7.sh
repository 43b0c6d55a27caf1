#!/usr/bin/env bash
# Issue 14 diagnosis (2x H200), 32K only, the guide's long-context config, full 8B: is the
# suite's +80 MiB peak reserved the model construction path? 2x2: {suite, guide's script} x
# {zero.Init (suite's way), whole model on the CPU then partitioned by deepspeed.initialize
# (the script's way)}. CPU builds run first, held at the gate; nothing else runs while timed.
set -u
W=/tmp/w; R=$W/repo; O=$W/out; mkdir -p $O
L=$O/pipeline.log
log() { echo "$(date +%T) $*" >> $L; }
quiet() { log "load average: $(cut -d' ' -f1-3 /proc/loadavg); host memory used $(free -g | awk '/Mem:/{print $3}') GiB"; }
cd $R
source .gpu/bin/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8   # the guide script's own default, set for every run
G=$R/.gpu/ref
LC="ZERO_STAGE=3 GRAD_CHECKPOINT=1 OFFLOAD_OPTIMIZER=1 USE_LIGER=1 WARMUP_STEPS=1"
guide_bg() {  # NAME PORT ENV...: the guide's script, its model built now, held at the gate go_NAME
  local name=$1 port=$2; shift 2
  ( cd /tmp && env "$@" CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_$name \
      deepspeed --num_gpus=2 --master_port=$port $R/.gpu/bin/gate.py $G/guide_benchmark.py \
      > $O/guide_$name.txt 2> $O/guide_$name.err
    echo "# exit $?" >> $O/guide_$name.txt; touch $W/done_$name ) &
  log "guide $name: building (held before deepspeed.initialize)"
}
built() {  # wait (at most 12 min) until every named guide run is held at its gate (both ranks)
  local n t=0
  for n in "$@"; do
    while { [ ! -e $W/go_$n.built.0 ] || [ ! -e $W/go_$n.built.1 ]; } && [ ! -e $W/done_$n ] && [ $t -lt 720 ]; do sleep 1; t=$((t+1)); done
  done
  log "guide $*: built"
}
release() {  # open its gate, wait (at most 10 min) for it to finish
  log "guide $1: released"; quiet; touch $W/go_$1
  local t=0; while [ ! -e $W/done_$1 ] && [ $t -lt 600 ]; do sleep 1; t=$((t+1)); done
  grep -h '^{' $O/guide_$1.txt > $O/guide_$1.jsonl
  log "guide $1: $(tail -1 $O/guide_$1.txt) $(grep -h '^{' $O/guide_$1.txt | tail -1) $(grep -h 'exact peak' $O/guide_$1.err | tr '\n' ' ')"
}
suite() {  # SEQ STEPS TAG: run_sweep.sh, one length, its own results file
  local f=lc_suite_$1$3
  log "suite $f: run_sweep.sh, STEPS=$2"; quiet
  env $LC STEPS=$2 MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQLENS=$1 GPUS=2 OUT=$O/$f.jsonl \
    NOTES="full 8B, 2 GPUs, the guide's long-context config, FA4, run_sweep.sh defaults (a fresh process per length); side by side with the guide's script in the same pipeline" \
    ./run_sweep.sh > $O/$f.out 2> $O/$f.err
  log "suite $f: exit $? $(grep -h '"summary"' $O/$f.jsonl | python3 -c 'import json,sys
for l in sys.stdin: r=json.loads(l); print(r["seq_len"], round(r["tflops_per_gpu"],2), "TFLOPS", round(r["peak_mem_gib"],3), "GiB reserved", round(r["peak_alloc_gib"],3), "allocated")')"
}
suite_cpu_bg() {  # NAME PORT: the suite's benchmark.py, model built on the CPU as the script does, gated
  local name=$1 port=$2
  ( env $LC STEPS=3 MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQ_LEN=32768 OUTPUT=$O/$name.jsonl GATE=$W/go_$name \
      NOTES="full 8B, 2 GPUs, long-context config, FA4; diagnosis harness: model built whole on the CPU (no zero.Init), as the guide's script builds it" \
      deepspeed --num_gpus=2 --master_port=$port $R/.gpu/bin/gate.py $R/.gpu/bin/suite_cpu_build.py $R/benchmark.py \
      > $O/$name.out 2> $O/$name.err
    echo "# exit $?" >> $O/$name.out; touch $W/done_$name ) &
  log "suite $name: building on the CPU (held before deepspeed.initialize)"
}
release_suite() {
  log "suite $1: released"; quiet; touch $W/go_$1
  local t=0; while [ ! -e $W/done_$1 ] && [ $t -lt 600 ]; do sleep 1; t=$((t+1)); done
  log "suite $1: $(tail -1 $O/$1.out) $(grep -h 'exact peak' $O/$1.err | tr '\n' ' ')"
}
guide_zero_init() {  # NAME PORT: the guide's script, its model built inside zero.Init on the GPUs (gate open from the start)
  log "guide $1: zero.Init build, run"; quiet; touch $W/go_$1
  ( cd /tmp && env $LC STEPS=3 SEQ_LEN=32768 CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_$1 \
      timeout 600 deepspeed --num_gpus=2 --master_port=$2 $R/.gpu/bin/gate.py $R/.gpu/bin/guide_zero_init.py $G/guide_benchmark.py \
      > $O/guide_$1.txt 2> $O/guide_$1.err; echo "# exit $?" >> $O/guide_$1.txt )
  grep -h '^{' $O/guide_$1.txt > $O/guide_$1.jsonl
  log "guide $1: $(tail -1 $O/guide_$1.txt) $(grep -h '^{' $O/guide_$1.txt | tail -1) $(grep -h 'exact peak' $O/guide_$1.err | tr '\n' ' ')"
}
log "start"; nvidia-smi --query-gpu=index,name,clocks.sm,power.limit,temperature.gpu --format=csv >> $L; quiet
python3 -c "from deepspeed.ops.op_builder import CPUAdamBuilder, FusedAdamBuilder; CPUAdamBuilder().load(); FusedAdamBuilder().load()" > $O/jit.log 2>&1 &
JIT=$!
guide_bg lc32768g1 29621 $LC STEPS=3 SEQ_LEN=32768
guide_bg lc32768g2 29622 $LC STEPS=3 SEQ_LEN=32768
suite_cpu_bg suite_cpubuild_32768 29623
wait $JIT; log "JIT ops built: exit $?"
built lc32768g1 lc32768g2 suite_cpubuild_32768
sleep 3
suite 32768 3 a
release lc32768g1
release_suite suite_cpubuild_32768
guide_zero_init zeroinit_32768 29624
suite 32768 3 b
release lc32768g2
nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv >> $L
log "done"; touch $O/ALL_DONE
