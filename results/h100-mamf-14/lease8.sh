#!/bin/bash
# Lease 8 (issue 52): the H100's MAMF at bf16 and fp8 on one machine, the suite's search and the
# guide's mamf-finder at the suite's best shape of each, so the fp8-over-bf16 share of peak the
# forecast carries to parts without an fp8 MAMF (model.cross_precision_share) is measured here too.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
nvidia-smi > $R/nvidia-smi.txt 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" > $R/torch.txt 2>&1
for dt in bfloat16 float8_e4m3fn; do
  s=$(date +%s)
  python3 mamf-finder.py --dtype $dt --output_file $R/mamf_$dt.jsonl > $R/mamf_$dt.out 2> $R/mamf_$dt.log; rc=$?
  echo "$(date +%T) mamf $dt rc=$rc wall=$(( $(date +%s)-s ))s" >> $R/progress.log
  shape=$(python3 -c "
import json
x=[json.loads(l) for l in open('$R/mamf_$dt.jsonl') if '\"kind\": \"mamf\"' in l][-1]
print(x['m'], x['n'], x['k'])" 2>>$R/progress.log)
  echo "best $dt: $shape" >> $R/progress.log
  set -- $shape
  s=$(date +%s)
  python3 .gpu/ref/guide_mamf_finder.py --m $1 --n $2 --k $3 --dtype $dt --output_file $R/guide_mamf_$dt.out \
     > $R/guide_mamf_$dt.stdout 2>&1; rc=$?
  echo "$(date +%T) guide mamf $dt rc=$rc wall=$(( $(date +%s)-s ))s" >> $R/progress.log
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> $R/progress.log 2>&1
done
echo "all done" >> $R/progress.log
