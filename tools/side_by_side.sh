#!/usr/bin/env bash
# tools/side_by_side.sh: the suite next to its yardsticks (the guide's own scripts and
# triton's do_bench), in one pipeline, on one GPU machine.
#
# Machines of one kind differ by several percent, so a suite figure is compared only with a
# yardstick measured in the same session. Each named comparison runs REPEAT rounds, suite
# then yardstick, one run at a time; before each run the load average, the Python processes
# and the GPUs' clock, power and temperature go to OUT/pipeline.log (nothing else may run
# while anything is timed). Every output lands in OUT, the yardsticks' as they print it.
# The yardsticks are read from REF and never copied into the project.
#
#   tools/side_by_side.sh attention mamf hbm                 # the kernel comparisons, 1 GPU
#   GPUS=8 tools/side_by_side.sh comm                        # the collectives, every GPU of the node
#   GPUS=2 SEQLENS="8192 32768" tools/side_by_side.sh training
#   DRY_RUN=1 tools/side_by_side.sh training decomposition   # print the commands, run nothing
#   TITAN_PYTHON=python3 ENGINES="deepspeed fsdp2-compiled" SEQLENS=8192 tools/side_by_side.sh torchtitan
#
# Comparisons:
#   attention      bench_flash_attn.py (fa4, sdpa-cudnn) vs attention_do_bench_probe.py, per SEQLENS
#   mamf           mamf-finder.py vs guide_mamf_finder.py on MAMF_SHAPES
#   hbm            bench_hbm.py vs tools/hbm_do_bench.py on HBM_SIZES_MIB (the guide has no such script)
#   comm           bench_comm.py vs tools/comm_loop.py (a plain torch.distributed loop timed with CUDA
#                  events, nccl-tests' way) on COMM_SIZES_MIB, both on GPUS ranks (2 or more); both keep
#                  NVLink multicast off (NCCL_NVLS_ENABLE=0 and the others, set in their own process)
#   training       run_sweep.sh vs guide_benchmark.py at each of SEQLENS (a fresh process each)
#   decomposition  bench_decompose.py vs guide_bench_decompose.py at each of SEQLENS
#   torchtitan     run_sweep.sh (once per engine of ENGINES) vs torchtitan 0.2.2's own trainer
#                  (tools/titan_train.py under torchrun, TITAN_STEPS steps) at each of SEQLENS, for each of
#                  TITAN_PRECISIONS, each a fresh process: OUT/suite_<engine>_<precision>.jsonl, and torchtitan's
#                  logs OUT/torchtitan_<precision>_<length>_r<round>.log, read into OUT/torchtitan.jsonl by
#                  tools/titan_log.py (the suite's FLOP count and field names). MODEL llama-3.1-8b only
#                  (torchtitan's own 8B flavor has its shapes), no activation checkpointing on either side;
#                  torchtitan's attention is TITAN_ATTN (sdpa, its 8B flavor's), the suite's ATTN_BACKEND.
# The training settings (MODEL, NUM_LAYERS, ZERO_STAGE, GRAD_CHECKPOINT, OFFLOAD_OPTIMIZER,
# USE_LIGER, ATTN_BACKEND, STEPS, WARMUP_STEPS) are read from the environment and given to
# both sides; the guide's scripts get the model's config.json from configs/, cut to NUM_LAYERS
# (OUT/cfg: the guide's bench_decompose.py has no layer cut of its own), and
# ATTN_BACKEND as transformers names it (ATTN=flash_attention_4 for fa4, ATTN=sdpa for sdpa; the
# guide itself picks FA3 on Hopper, which is not installable on the test machines).
#
# Variables: OUT (out/side-by-side-<time>), REF (../shared/reference; hbm, comm and torchtitan need none),
# REPEAT (2), GPUS (1), SEQLENS ("8192 32768"), MAMF_SHAPES (the classic 8 shapes), HBM_SIZES_MIB ("512 2048 8192"),
# COMM_SIZES_MIB ("1 4 16 64 256 1024 4096"), PYTHON (python3), DRY_RUN (0); for torchtitan: TITAN_PYTHON
# (PYTHON: a Python that imports torchtitan, e.g. with PYTHONPATH set by .gpu/titan-setup.sh),
# TITAN_PRECISIONS ("bf16 fp8-tensorwise"), TITAN_STEPS (12; the first 2 are warmup: the compile and
# its first step), TITAN_ATTN (sdpa; flex, varlen), ENGINES (the suite's engines: deepspeed, fsdp2, and
# fsdp2-compiled, ENGINE=fsdp2 COMPILE=1; empty: its default; USE_LIGER, unless set, as the suite resolves it).
# Exit: 0 when every run ended with 0, 1 otherwise (each run's exit code is in the log),
# 2 on bad input.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out/side-by-side-$(date +%Y%m%dT%H%M%S)}
REF=${REF:-../shared/reference}
REPEAT=${REPEAT:-2}
GPUS=${GPUS:-1}
SEQLENS=${SEQLENS:-8192 32768}
MAMF_SHAPES=${MAMF_SHAPES:---m 1024 5632 --n 1536 4096 --k 13312 16640}
HBM_SIZES_MIB=${HBM_SIZES_MIB:-512 2048 8192}
COMM_SIZES_MIB=${COMM_SIZES_MIB:-1 4 16 64 256 1024 4096}
PYTHON=${PYTHON:-python3}
TITAN_PYTHON=${TITAN_PYTHON:-$PYTHON}
TITAN_PRECISIONS=${TITAN_PRECISIONS:-bf16 fp8-tensorwise}
TITAN_STEPS=${TITAN_STEPS:-12}
TITAN_ATTN=${TITAN_ATTN:-sdpa}
ENGINES=${ENGINES:-}
DRY_RUN=${DRY_RUN:-0}
MODEL=${MODEL:-llama-3.1-8b}
ATTN_BACKEND=${ATTN_BACKEND:-fa4}
NUM_LAYERS=${NUM_LAYERS:-8}
TRAINING="MODEL=$MODEL NUM_LAYERS=$NUM_LAYERS ZERO_STAGE=${ZERO_STAGE:-2} GRAD_CHECKPOINT=${GRAD_CHECKPOINT:-0}
  OFFLOAD_OPTIMIZER=${OFFLOAD_OPTIMIZER:-0} USE_LIGER=${USE_LIGER:-1} STEPS=${STEPS:-5} WARMUP_STEPS=${WARMUP_STEPS:-2}"
export CUBLAS_WORKSPACE_CONFIG=:4096:8  # the guide scripts' own default, set for both sides
# This script's own settings stay in this script: each run gets what it needs by name, and the
# suite refuses a variable it does not know that looks like one of its own (ENGINES for ENGINE).
export -n OUT REF REPEAT SEQLENS MAMF_SHAPES HBM_SIZES_MIB COMM_SIZES_MIB TITAN_PYTHON TITAN_PRECISIONS TITAN_STEPS \
  TITAN_ATTN ENGINES DRY_RUN

fail() { echo "error: $*" >&2; exit 2; }
COMPARISONS="attention mamf hbm comm training decomposition torchtitan"
[ $# -gt 0 ] || fail "name at least one comparison: $COMPARISONS (see the top of $0)"
for c in "$@"; do
  case " $COMPARISONS " in *" $c "*) ;; *) fail "comparison '$c': not one of $COMPARISONS";; esac
done
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || fail "REPEAT='$REPEAT': a whole number >= 1"
[[ $GPUS =~ ^[1-9][0-9]*$ ]] || fail "GPUS='$GPUS': a whole number >= 1"
for c in "$@"; do
  [ "$c" != comm ] || [ "$GPUS" -ge 2 ] || fail "GPUS='$GPUS': the comm comparison needs 2 GPUs or more (one rank has no link)"
done
[[ $NUM_LAYERS =~ ^[1-9][0-9]*$ ]] || fail "NUM_LAYERS='$NUM_LAYERS': a whole number >= 1"
for c in "$@"; do
  [ "$c" = torchtitan ] || continue
  [ "$MODEL" = llama-3.1-8b ] || fail "MODEL='$MODEL': the torchtitan comparison trains torchtitan's Llama 3 8B flavor only (MODEL=llama-3.1-8b)"
  [ "${GRAD_CHECKPOINT:-0}" = 0 ] || fail "GRAD_CHECKPOINT='$GRAD_CHECKPOINT': the torchtitan comparison runs both sides without activation checkpointing (0)"
  [[ $TITAN_STEPS =~ ^[1-9][0-9]*$ ]] && [ "$TITAN_STEPS" -gt 2 ] || fail "TITAN_STEPS='$TITAN_STEPS': a whole number > 2 (2 warmup steps, then the timed ones)"
  [ "$GPUS" = 1 ] || fail "GPUS='$GPUS': the torchtitan comparison runs on one GPU (1)"
  for e in $ENGINES; do
    case $e in deepspeed|fsdp2|fsdp2-compiled) ;; *) fail "ENGINES='$ENGINES': '$e' is not one of deepspeed fsdp2 fsdp2-compiled";; esac
  done
  [ "$DRY_RUN" = 1 ] || "$TITAN_PYTHON" -c 'import torchtitan' 2>/dev/null \
    || fail "TITAN_PYTHON='$TITAN_PYTHON': cannot import torchtitan (on the GPU machine: bash .gpu/titan-setup.sh, then PYTHONPATH=/tmp/site)"
done
[ -f "configs/$MODEL.json" ] || fail "MODEL='$MODEL': no configs/$MODEL.json for the guide's scripts (CFG_DIR)"
# The model's config.json cut to NUM_LAYERS (the guide's bench_decompose.py has no cut of its
# own), if the guide's scripts can count the model: full attention with one head dim and dense
# MLPs on every layer.
CUT_CONFIG=$(python3 -c 'import json, sys
from upgrade_bench.faults import BadInput
from upgrade_bench.models import architecture, cuts, layers
config = json.load(open(sys.argv[1]))
try:
    full = architecture.describe(config)
    if full.moe or any(ly.mixer.kind != layers.FULL or ly.mixer.qk_head_dim != ly.mixer.v_head_dim
                       for ly in full.layers):
        sys.exit("the guide\x27s scripts count dense decoders only (Llama-like); no side by side for it")
    config = cuts.cut(config, int(sys.argv[2])).config
except BadInput as err:
    sys.exit(str(err))
print(json.dumps(config, indent=2))' "configs/$MODEL.json" "$NUM_LAYERS" 2>&1) || fail "MODEL='$MODEL': $CUT_CONFIG"
# The guide's scripts take transformers' attn_implementation name (ATTN); auto is the guide's own choice.
GUIDE_ATTN=
if [ "$ATTN_BACKEND" != auto ]; then
  GUIDE_ATTN=$(python3 -c 'import sys
from upgrade_bench.kernels.attention.backends import TRAINING
b = TRAINING.get(sys.argv[1])
print("ATTN=" + b.hf_name if b else "not one of auto " + " ".join(TRAINING))
sys.exit(0 if b else 2)' "$ATTN_BACKEND") || fail "ATTN_BACKEND='$ATTN_BACKEND': $GUIDE_ATTN"
fi
needs_ref=0; for c in "$@"; do case $c in hbm|comm|torchtitan) ;; *) needs_ref=1;; esac; done  # their yardsticks are in tools/ or a wheel
[ "$DRY_RUN" = 1 ] || [ $needs_ref = 0 ] || [ -d "$REF" ] || fail "REF='$REF': no such folder (the guide's scripts, ../shared/reference)"

CFG_DIR=$OUT/cfg
if [ "$DRY_RUN" != 1 ]; then
  mkdir -p "$CFG_DIR" || fail "OUT='$OUT': cannot be written"
  printf '%s\n' "$CUT_CONFIG" > "$CFG_DIR/config.json" || fail "OUT='$OUT': cannot be written"
fi
LAUNCH=$([ "$GPUS" -gt 1 ] && echo "deepspeed --num_gpus=$GPUS" || echo "$PYTHON")
LOG=$OUT/pipeline.log
failed=0
log() { echo "$(date +%T) $*" | tee -a "$LOG" >&2; }
quiet() {
  log "load average $(cut -d' ' -f1-3 /proc/loadavg); python processes $(pgrep -c python || true)"
  nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader >> "$LOG" 2>&1 || true
}
# step NAME OUTFILE ENV... -- CMD...: one run, its stdout to OUTFILE, its stderr to NAME.err
step() {
  local name=$1 out=$2; shift 2
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  if [ "$DRY_RUN" = 1 ]; then printf '%q ' "${envs[@]}" "$@"; echo ">> $out"; return; fi
  quiet; log "start $name"
  env "${envs[@]}" "$@" >> "$out" 2>> "$OUT/$name.err"
  local code=$?
  log "end $name: exit $code"
  [ $code -eq 0 ] || failed=1
}

for c in "$@"; do
  for i in $(seq "$REPEAT"); do
    note="NOTES=side by side ($c, round $i of $REPEAT) with its yardstick in one pipeline"
    case $c in
      attention)
        step attention_suite /dev/null "$note" BACKENDS=fa4,sdpa-cudnn "SEQLENS=$SEQLENS" PASSES=fwd,fwd_bwd \
          "OUTPUT=$OUT/attention_suite.jsonl" -- "$PYTHON" bench_flash_attn.py
        for s in $SEQLENS; do
          step attention_do_bench "$OUT/attention_do_bench.txt" "S=$s" -- "$PYTHON" "$REF/attention_do_bench_probe.py"
        done ;;
      mamf)
        # shellcheck disable=SC2086  # the shapes are words
        step mamf_suite /dev/null -- "$PYTHON" mamf-finder.py $MAMF_SHAPES --output_file "$OUT/mamf_suite.jsonl" \
          --notes "${note#NOTES=}"
        # shellcheck disable=SC2086
        step mamf_guide /dev/null -- "$PYTHON" "$REF/guide_mamf_finder.py" $MAMF_SHAPES \
          --output_file "$OUT/mamf_guide_$i.txt" ;;
      hbm)
        step hbm_suite /dev/null "$note" "SIZES_MIB=$HBM_SIZES_MIB" "OUTPUT=$OUT/hbm_suite.jsonl" -- "$PYTHON" bench_hbm.py
        step hbm_do_bench "$OUT/hbm_do_bench.jsonl" "SIZES_MIB=$HBM_SIZES_MIB" -- "$PYTHON" tools/hbm_do_bench.py ;;
      comm)
        # shellcheck disable=SC2086  # LAUNCH is words
        step comm_suite /dev/null "$note" "SIZES_MIB=$COMM_SIZES_MIB" "OUTPUT=$OUT/comm_suite.jsonl" -- $LAUNCH bench_comm.py
        # shellcheck disable=SC2086
        step comm_loop "$OUT/comm_loop.jsonl" "SIZES_MIB=$COMM_SIZES_MIB" -- $LAUNCH tools/comm_loop.py ;;
      training)
        # shellcheck disable=SC2086  # TRAINING is words
        step training_suite /dev/null "$note" $TRAINING "ATTN_BACKEND=$ATTN_BACKEND" "SEQLENS=$SEQLENS" "GPUS=$GPUS" \
          "OUT=$OUT/training_suite.jsonl" -- ./run_sweep.sh
        for s in $SEQLENS; do
          # shellcheck disable=SC2086
          step training_guide "$OUT/training_guide.txt" $TRAINING $GUIDE_ATTN "CFG_DIR=$CFG_DIR" "SEQ_LEN=$s" \
            -- $LAUNCH "$REF/guide_benchmark.py"
        done ;;
      decomposition)
        # shellcheck disable=SC2086
        step decomposition_suite /dev/null "$note" $TRAINING "ATTN_BACKEND=$ATTN_BACKEND" "SEQ_LEN=$SEQLENS" \
          "OUTPUT=$OUT/decomposition_suite.jsonl" -- $LAUNCH bench_decompose.py
        for s in $SEQLENS; do
          # shellcheck disable=SC2086
          step decomposition_guide "$OUT/decomposition_guide.txt" $TRAINING $GUIDE_ATTN "CFG_DIR=$CFG_DIR" \
            "SEQ_LEN=$s" -- $LAUNCH "$REF/guide_bench_decompose.py"
        done ;;
      torchtitan)
        for p in $TITAN_PRECISIONS; do
          for e in ${ENGINES:-default}; do
            case $e in default) engine= ;; fsdp2-compiled) engine="ENGINE=fsdp2 COMPILE=1" ;; *) engine="ENGINE=$e" ;; esac
            # shellcheck disable=SC2086  # TRAINING is words, engine none, one or two
            # USE_LIGER as asked, else auto: the suite leaves Liger out where it compiles the blocks
            step "suite_$e" /dev/null "$note" $TRAINING "USE_LIGER=${USE_LIGER:-auto}" $engine "PRECISION=$p" "ATTN_BACKEND=$ATTN_BACKEND" \
              "SEQLENS=$SEQLENS" "GPUS=1" "OUT=$OUT/suite_${e}_$p.jsonl" -- ./run_sweep.sh
          done
          for s in $SEQLENS; do
            # torchtitan's log is its stdout; its errors join it (2>&1), so tools/titan_log.py sees them
            step "torchtitan_${p}_$s" "$OUT/torchtitan_${p}_${s}_r$i.log" "NUM_LAYERS=$NUM_LAYERS" "PRECISION=$p" \
              "ATTN=$TITAN_ATTN" -- bash -c 'exec "$@" 2>&1' torchtitan "$TITAN_PYTHON" -m torch.distributed.run \
              --standalone --nproc_per_node 1 tools/titan_train.py --training.seq_len "$s" \
              --training.local_batch_size 1 --training.steps "$TITAN_STEPS" --job.dump_folder "$OUT/titan_dump"
          done
        done ;;
    esac
  done
done
for c in "$@"; do
  [ "$c" = torchtitan ] && [ "$DRY_RUN" != 1 ] || continue
  "$PYTHON" tools/titan_log.py --config "configs/$MODEL.json" "$OUT"/torchtitan_*_r*.log > "$OUT/torchtitan.jsonl" \
    2>> "$OUT/torchtitan_log.err" || failed=1
  log "torchtitan's logs as the suite's records: $OUT/torchtitan.jsonl"
done
[ "$DRY_RUN" = 1 ] || log "done; outputs in $OUT"
exit $failed
