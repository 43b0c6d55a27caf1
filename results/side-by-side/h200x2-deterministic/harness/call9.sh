# call 2 on the 2-GPU machine, issue 14 diagnosis: install, then the suite at 32K (long-context
# config) with the guide script's determinism settings, segments dumped per rank. 1 warm-up and
# 1 timed step: the peak is reached in the first timed step (every earlier 32K suite run).
set -u
bash .gpu/bin/bootstrap.sh install .gpu/wheels/b > $OUT/install.log 2>&1 || { echo install failed; tail $OUT/install.log; exit 1; }
source .gpu/bin/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8
date +%T
env ZERO_STAGE=3 GRAD_CHECKPOINT=1 OFFLOAD_OPTIMIZER=1 USE_LIGER=1 WARMUP_STEPS=1 STEPS=1 \
  MODEL=llama-3.1-8b ATTN_BACKEND=fa4 SEQ_LEN=32768 OUTPUT=$OUT/suite_det_32768.jsonl SEGDUMP=$OUT/seg_suite_det \
  NOTES="full 8B, 2 GPUs, long-context config, FA4; diagnosis: the guide script's determinism settings on, segments dumped per rank" \
  deepspeed --num_gpus=2 --master_port=29641 .gpu/bin/suite_deterministic.py .gpu/bin/segdump.py benchmark.py \
  > $OUT/suite_det_32768.out 2> $OUT/suite_det_32768.err
echo "exit $? $(date +%T)"
grep -h '"step"\|"summary"' $OUT/suite_det_32768.jsonl | cut -c1-700
nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu --format=csv
