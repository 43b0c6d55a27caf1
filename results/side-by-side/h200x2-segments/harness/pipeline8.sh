#!/usr/bin/env bash
# Issue 14 diagnosis (2x H200), 32K, the guide's long-context config, full 8B: which segments
# make the suite's peak reserved 80-110 MiB above the guide's script? One suite run
# (benchmark.py, zero.Init build) then the guide's script built inside zero.Init (its worse
# rank 30.465 GiB in pipeline7), each dumping its allocator segments per rank (segdump.py).
set -u
W=/tmp/w; R=$W/repo; O=$W/out; mkdir -p $O
L=$O/pipeline.log
log() { echo "$(date +%T) $*" >> $L; }
cd $R
source .gpu/bin/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8   # the guide script's own default, set for every run
G=$R/.gpu/ref
LC="ZERO_STAGE=3 GRAD_CHECKPOINT=1 OFFLOAD_OPTIMIZER=1 USE_LIGER=1 WARMUP_STEPS=1 STEPS=3"
log "start"; nvidia-smi --query-gpu=index,name,clocks.sm,power.limit,temperature.gpu --format=csv >> $L
log "suite: benchmark.py 32K"
env $LC MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQ_LEN=32768 OUTPUT=$O/suite_32768.jsonl SEGDUMP=$O/seg_suite \
  NOTES="full 8B, 2 GPUs, long-context config, FA4; diagnosis: allocator segments dumped per rank" \
  timeout 420 deepspeed --num_gpus=2 --master_port=29631 $R/.gpu/bin/segdump.py $R/benchmark.py > $O/suite_32768.out 2> $O/suite_32768.err
log "suite: exit $? $(grep -h '"summary"' $O/suite_32768.jsonl | cut -c1-400)"
log "guide zero.Init: 32K"; touch $W/go_g
( cd /tmp && env $LC SEQ_LEN=32768 CFG_DIR=/tmp/cfg8b ATTN=flash_attention_4 GATE=$W/go_g SEGDUMP=$O/seg_guide \
    timeout 420 deepspeed --num_gpus=2 --master_port=29632 $R/.gpu/bin/gate.py $R/.gpu/bin/segdump.py $R/.gpu/bin/guide_zero_init.py $G/guide_benchmark.py \
    > $O/guide_zeroinit_32768.txt 2> $O/guide_zeroinit_32768.err; echo "# exit $?" >> $O/guide_zeroinit_32768.txt )
grep -h '^{' $O/guide_zeroinit_32768.txt > $O/guide_zeroinit_32768.jsonl
log "guide: $(tail -1 $O/guide_zeroinit_32768.txt) $(grep -h '^{' $O/guide_zeroinit_32768.txt | tail -1) $(grep -h 'exact peak' $O/guide_zeroinit_32768.err | tr '\n' ' ')"
log "done"; touch $O/ALL_DONE
