# Sourced by the batch scripts beside it (bash, under their set -euo pipefail): finds
# the allocation's nodes from $SLURM_JOB_NODELIST (`scontrol show hostnames`), GPUS per node,
# MASTER_ADDR = the first node, and with more than one node a DeepSpeed hostfile ("host
# slots=<GPUS>" per node) in HOSTFILE, which run_sweep.sh launches the ranks from (pdsh +
# ssh). Without a nodelist or scontrol: one line and exit 2, before anything runs.
# $1: the batch script's name without .sbatch, for its messages and the hostfile's name.
[[ -n "${SLURM_JOB_NODELIST:-}" ]] || { echo "error: SLURM_JOB_NODELIST is not set: submit with sbatch, or set it (and DRY_RUN=1) to check what would run" >&2; exit 2; }
command -v scontrol >/dev/null || { echo "error: no scontrol on PATH to expand SLURM_JOB_NODELIST='$SLURM_JOB_NODELIST': run on a node with SLURM's tools (a login node for DRY_RUN=1)" >&2; exit 2; }
mapfile -t HOSTS < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
(( ${#HOSTS[@]} > 0 )) || { echo "error: scontrol expanded SLURM_JOB_NODELIST='$SLURM_JOB_NODELIST' to no host" >&2; exit 2; }
export GPUS="${GPUS:-${SLURM_GPUS_ON_NODE:-8}}"
export MASTER_ADDR="${MASTER_ADDR:-${HOSTS[0]}}"
export MASTER_PORT="${MASTER_PORT:-29500}"

if (( ${#HOSTS[@]} > 1 )); then
    export HOSTFILE="${HOSTFILE:-${TMPDIR:-/tmp}/$1-hostfile.${SLURM_JOB_ID:-$$}}"
    for host in "${HOSTS[@]}"; do echo "$host slots=$GPUS"; done > "$HOSTFILE"
    echo "[$1.sbatch] ${#HOSTS[@]} nodes x $GPUS GPUs, hostfile $HOSTFILE:" >&2
    cat "$HOSTFILE" >&2
fi
