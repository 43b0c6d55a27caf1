#!/usr/bin/env bash
# Issue 14's side-by-side runs on the 2-GPU H200, one pipeline under setsid spanning calls.
# Every comparison: the suite and its yardstick on the same GPU(s), in this one pipeline.
set -u
W=/tmp/w; R=$W/repo; O=$W/out; mkdir -p $O
L=$O/pipeline.log
log() { echo "$(date +%T) $*" >> $L; }
cd $R
source .gpu/bin/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8   # the guide script's own default, set for every run
G=$R/.gpu/ref
RS="NUM_LAYERS=8 ZERO_STAGE=2 GRAD_CHECKPOINT=0 OFFLOAD_OPTIMIZER=0 USE_LIGER=1 STEPS=5 WARMUP_STEPS=2"
LC="ZERO_STAGE=3 GRAD_CHECKPOINT=1 OFFLOAD_OPTIMIZER=1 USE_LIGER=1 STEPS=1 WARMUP_STEPS=1"
mem() { log "host memory: $(free -g | awk '/Mem:/{print "used " $3 " GiB of " $2}')"; }
# guide_bg NAME NGPUS PORT ENV...: the guide's script, built now, held at the gate go_NAME
guide_bg() {
  local name=$1 n=$2 port=$3; shift 3
  ( cd /tmp && env "$@" CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_$name \
      deepspeed --num_gpus=$n --master_port=$port $R/.gpu/bin/gate.py $G/guide_benchmark.py \
      > $O/guide_$name.txt 2> $O/guide_$name.err
    echo "# exit $?" >> $O/guide_$name.txt; touch $W/done_$name ) &
  log "guide $name: building (held before deepspeed.initialize)"
}
# release NAME: open its gate, wait (at most 20 min) for it to finish
release() {
  log "guide $1: released"; touch $W/go_$1
  local t=0; while [ ! -e $W/done_$1 ] && [ $t -lt 1200 ]; do sleep 1; t=$((t+1)); done
  grep -h '^{' $O/guide_$1.txt > $O/guide_$1.jsonl
  log "guide $1: $(tail -1 $O/guide_$1.txt) $(grep -h '^{' $O/guide_$1.txt | tail -1)"
}
log "start"; nvidia-smi --query-gpu=index,name,clocks.sm,power.limit,temperature.gpu --format=csv >> $L; mem

# DeepSpeed's two JIT ops, built once before anything is timed (cached for every later run)
python3 -c "from deepspeed.ops.op_builder import CPUAdamBuilder, FusedAdamBuilder; CPUAdamBuilder().load(); FusedAdamBuilder().load()" > $O/jit.log 2>&1
log "JIT ops built: exit $?"
for S in 8192 32768; do guide_bg rs$S 1 2961${S:0:1} $RS SEQ_LEN=$S; done
guide_bg lc8192 2 29621 $LC SEQ_LEN=8192
guide_bg lc32768 2 29623 $LC SEQ_LEN=32768
mem

# bench_decompose on 2 GPUs: a clean exit, no NCCL/TCPStore traces from rank 1
log "decompose 2 GPUs"
env NUM_LAYERS=8 ATTN_BACKEND=fa4 USE_LIGER=1 SEQ_LEN=8192 WARMUP_STEPS=1 TIME_STEPS=3 PROFILE_STEPS=1 \
  OUTPUT=$O/decompose_2gpu.jsonl NOTES="2-GPU clean-exit check, 8 layers" \
  deepspeed --num_gpus=2 --master_port=29640 bench_decompose.py > /dev/null 2> $O/decompose_2gpu.err
log "decompose exit $?; traces in stderr: $(grep -c 'Traceback\|TCPStore\|ProcessGroupNCCL.*WARN\|destroy_process_group' $O/decompose_2gpu.err)"

# Phase A, GPU 1: attention (suite, do_bench, suite) and MAMF classic (published, suite, x2)
export CUDA_VISIBLE_DEVICES=1
A="BACKENDS=fa4,sdpa-cudnn SEQLENS=8192,32768 PASSES=fwd,fwd_bwd OUTPUT=$O/attention_suite.jsonl"
log "attention suite 1"
env $A NOTES="sustained timing, run 1 of 2, before triton do_bench in the same pipeline" python3 bench_flash_attn.py > /dev/null 2>> $O/phaseA.err
log "attention do_bench"
for S in 8192 32768; do S=$S python3 $G/attention_do_bench_probe.py >> $O/attention_do_bench.txt 2>> $O/phaseA.err; done
log "attention suite 2"
env $A NOTES="sustained timing, run 2 of 2, after triton do_bench in the same pipeline" python3 bench_flash_attn.py > /dev/null 2>> $O/phaseA.err
M="--m 1024 5632 --n 1536 4096 --k 13312 16640"
for i in 1 2; do
  log "mamf published $i"
  python3 $G/guide_mamf_finder.py $M --output_file $O/mamf_published_$i.txt > /dev/null 2>> $O/phaseA.err
  log "mamf suite $i"
  python3 mamf-finder.py $M --output_file $O/mamf_suite.jsonl --notes "classic scan, run $i of 2, alternating with the published mamf-finder" > /dev/null 2>> $O/phaseA.err
done
unset CUDA_VISIBLE_DEVICES
nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv >> $L

# Phase B, GPU 0: right-sized 8K and 32K, the suite (one process) then the guide's script
log "right-sized suite"
env CUDA_VISIBLE_DEVICES=0 $RS MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQ_LEN="8192 32768" OUTPUT=$O/rightsized_suite.jsonl \
  NOTES="8B cut to 8 layers, 1 GPU, ZeRO-2, no ckpt/offload, Liger, FA4; side by side with the guide's script in the same pipeline" \
  python3 benchmark.py > /dev/null 2> $O/rightsized_suite.err
log "right-sized suite exit $?"
release rs8192; release rs32768
mem

# Phase C, both GPUs: long-context (guide's config, full 8B) at 8K/32K/128K
release lc8192
guide_bg lc131072 2 29625 $LC SEQ_LEN=131072   # built while the 32K runs go (the suite's included)
release lc32768
log "long-context suite"; mem
env $LC MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQ_LEN="8192 32768 131072" OUTPUT=$O/longctx_suite.jsonl \
  NOTES="full 8B, 2 GPUs, the guide's long-context config, FA4, 1 warm-up + 1 timed step; side by side with the guide's script in the same pipeline" \
  deepspeed --num_gpus=2 --master_port=29650 benchmark.py > /dev/null 2> $O/longctx_suite.err
log "long-context suite exit $?"; mem
release lc131072
log "done"; touch $O/ALL_DONE
