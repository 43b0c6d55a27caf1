#!/usr/bin/env bash
# install.sh: the identical pinned stack on every node, then the attention package for this GPU.
#
#   ./install.sh                     # GPU node: .venv, pinned stack, FA3 (Hopper) / FA4 (Blackwell)
#   ./install.sh --cpu               # no GPU: CPU torch, no FlashAttention / Liger (tests, CI)
#   ./install.sh --force fa3|fa4|none  # override the attention package choice
#   ./install.sh --wheelhouse DIR    # offline: every wheel from DIR (air-gapped clusters)
#   ./install.sh --no-verify         # skip the final check
#   ./install.sh --mamba             # GPU node with nvcc: also build causal-conv1d and mamba-ssm from their
#                                    # sources for this GPU's architecture only (Mamba-2's fast path, Granite
#                                    # 4.0-H; about 2 minutes on 16 cores); with --wheelhouse, their sdists
#                                    # come from DIR (tools/build_mamba_kernels.sh)
#
# Idempotent: re-running reuses .venv and installs only what is missing or differs.
# Environment: PYTHON (interpreter for the venv, default python3), TORCH_INDEX_URL (default
# the PyTorch cu130 index on GPU nodes, the default index with --cpu), FA3_VERSION,
# FA4_VERSION, FLA_TRITON, MAMBA_VERSION, CAUSAL_CONV1D_VERSION, MAX_JOBS and CUDA_HOME (--mamba's build),
# HF_HOME (where staged weights are looked for), MODEL_DIR (where they go).
set -euo pipefail
cd "$(dirname "$0")"

FA3_VERSION=${FA3_VERSION:-3.0.0}      # the guide's H200 runs
# The guide's B200 ran 4.0.0b22; b36 is the release seen working here on an H200 (SM90 path).
FA4_VERSION=${FA4_VERSION:-4.0.0b36}
CU130_INDEX=https://download.pytorch.org/whl/cu130
FLA_TRITON=${FLA_TRITON:-3.7.1}       # the oldest Triton flash-linear-attention 0.6.0 runs its Hopper backward on
# The sources tools/mamba_patches.py's patches were written for.
MAMBA_VERSION=${MAMBA_VERSION:-2.3.2.post1}; CAUSAL_CONV1D_VERSION=${CAUSAL_CONV1D_VERSION:-1.7.0}

die() { echo "install.sh: error: $1" >&2; exit "${2:-2}"; }
say() { echo "install.sh: $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

cpu=0; force=""; wheelhouse=""; verify=1; mamba=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu=1 ;;
    --force) [ $# -ge 2 ] || die "--force needs fa3, fa4 or none"; force=$2; shift ;;
    --wheelhouse) [ $# -ge 2 ] && [ -n "$2" ] || die "--wheelhouse needs a folder (it was given none, or '')"
                  wheelhouse=$2; shift ;;
    --no-verify) verify=0 ;;
    --mamba) mamba=1 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (allowed: --cpu, --force fa3|fa4|none, --wheelhouse DIR, --no-verify, --mamba, --help)" ;;
  esac
  shift
done
case "$force" in ""|fa3|fa4|none) ;; *) die "--force '$force': expected fa3, fa4 or none" ;; esac
[ -z "$wheelhouse" ] || [ -d "$wheelhouse" ] || die "--wheelhouse '$wheelhouse': no such folder"
[ $cpu = 1 ] && [ -n "$force" ] && [ "$force" != none ] && die "--force $force needs a GPU; --cpu installs no FlashAttention"
[ $cpu = 1 ] && [ $mamba = 1 ] && die "--mamba needs a GPU node: mamba-ssm and causal-conv1d are CUDA builds"
[ $mamba = 1 ] && ! command -v nvcc >/dev/null && [ ! -x "${CUDA_HOME:-}/bin/nvcc" ] && die "--mamba needs CUDA's compiler (nvcc on PATH, or CUDA_HOME/bin): mamba-ssm and causal-conv1d ship as sources only"

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null || die "no '$PYTHON' on PATH: install Python 3.10 or newer (or set PYTHON)"
pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || die "'$PYTHON' does not run"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "Python $pyver found; the suite needs 3.10 or newer (set PYTHON)"

# --- which GPU, which attention package -------------------------------------------------
attn=none
if [ $cpu = 0 ]; then
  command -v nvidia-smi >/dev/null && gpu=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null | head -n1) || gpu=""
  [ -n "$gpu" ] || die "no NVIDIA GPU found (nvidia-smi); use --cpu for a CPU-only install"
  cc=${gpu##*, }; major=${cc%%.*}
  say "GPU: $gpu"
  # Every benchmark computes in bf16, whose tensor cores need sm_80 (Ampere) or newer.
  [ "$major" -ge 8 ] 2>/dev/null || [ -n "$force" ] ||
    die "compute capability $cc is below 8.0: no bf16 tensor cores; pass --force fa4|none to try anyway"
  # The package ATTN_BACKEND=auto would pick here, from the backend table (standard library
  # only: the venv does not exist yet).
  attn=$("$PYTHON" -E -S -c 'import sys; from upgrade_bench.kernels.attention.backends import install_choice; print(install_choice(sys.argv[1]))' "$cc") ||
    die "cannot read the attention backend table (upgrade_bench/kernels/attn_backends.py) with $PYTHON"
  [ "$attn" = none ] && say "compute capability $cc has no FA3/FA4 build: the suite will use SDPA"
  [ -n "$force" ] && attn=$force
fi

# --- venv and the pinned stack ---------------------------------------------------------
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys' 2>/dev/null; then
  if command -v uv >/dev/null; then uv venv --python "$PYTHON" .venv >&2; else "$PYTHON" -m venv .venv; fi
fi
PY=.venv/bin/python
offline=()
[ -n "$wheelhouse" ] && offline=(--no-index --find-links "$wheelhouse")
# Every install reads only the wheelhouse when one is given.
if command -v uv >/dev/null; then
  pip_install() { uv pip install --python "$PY" "${offline[@]}" "$@"; }
else
  pip_install() { "$PY" -m pip install -q "${offline[@]}" "$@"; }
fi
"$PY" -m pip --version >/dev/null 2>&1 || "$PY" -m ensurepip -q
torch_index=()
if [ -z "$wheelhouse" ]; then
  if [ -n "${TORCH_INDEX_URL:-}" ]; then torch_index=(--extra-index-url "$TORCH_INDEX_URL")
  elif [ $cpu = 0 ]; then torch_index=(--extra-index-url "$CU130_INDEX"); fi
fi
say "installing the pinned stack (requirements.txt) into .venv"
pip_install "${torch_index[@]}" -r requirements.txt || die "pinned stack install failed (see pip's message above)" 1
# The package itself, editable: this checkout on the venv's path, as `pip install -e .` puts a flat
# layout (pyproject.toml), without a build backend to fetch (offline with --wheelhouse too); tools/
# and the tests import upgrade_bench from any folder.
"$PY" -c 'import pathlib, sys, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "upgrade_bench.pth").write_text(sys.argv[1] + "\n")' "$PWD" ||
  die "cannot put $PWD on .venv's path (upgrade_bench.pth in its site-packages)" 1
[ $cpu = 0 ] && { pip_install -r requirements-gpu.txt || die "liger-kernel / flash-linear-attention install failed" 1; }
# flash-linear-attention runs its Gated DeltaNet backward on Hopper only under Triton 3.7.1 or
# newer (older ones: it refuses, and transformers falls back to its slow torch code); torch
# pins the Triton it was built with, so only an older one is replaced, and the header records
# which ran (software.triton).
if [ $cpu = 0 ]; then
  old_triton=$("$PY" -c 'import sys, triton; v = tuple(int(x) for x in triton.__version__.split(".")[:3]); print(triton.__version__ if v < (3, 7, 1) else "")' 2>/dev/null) || old_triton=""
  if [ -n "$old_triton" ]; then
    say "Triton $old_triton is older than flash-linear-attention's Hopper backward needs: installing triton==$FLA_TRITON"
    pip_install "triton==$FLA_TRITON" || die "triton==$FLA_TRITON install failed (Qwen3-Next would run transformers' torch fallback)" 1
  fi
fi

# --- Mamba-2's kernels, opt-in: sources that compile CUDA for this GPU ----------------------
built_mamba() {  # both pins installed, causal-conv1d's extension importable
  "$PY" -c 'import sys, causal_conv1d_cuda, importlib.metadata as m
sys.exit(m.version("causal-conv1d") != sys.argv[1] or m.version("mamba-ssm") != sys.argv[2])' \
    "$CAUSAL_CONV1D_VERSION" "$MAMBA_VERSION" 2>/dev/null
}
if [ $mamba = 1 ] && built_mamba; then
  say "causal-conv1d==$CAUSAL_CONV1D_VERSION and mamba-ssm==$MAMBA_VERSION are already built"
elif [ $mamba = 1 ]; then
  sm=${cc/./}
  say "building causal-conv1d==$CAUSAL_CONV1D_VERSION and mamba-ssm==$MAMBA_VERSION (about 2 minutes on 16 cores: one architecture, sm_$sm)"
  sdists=$wheelhouse
  if [ -z "$sdists" ]; then
    sdists=$(mktemp -d); trap 'rm -rf "$sdists"' EXIT
    # pip runs each setup.py for its metadata: the venv's torch (no isolated env), no CUDA check
    CAUSAL_CONV1D_SKIP_CUDA_BUILD=TRUE MAMBA_SKIP_CUDA_BUILD=TRUE "$PY" -m pip download -q --no-deps \
      --no-binary :all: --no-build-isolation -d "$sdists" "causal-conv1d==$CAUSAL_CONV1D_VERSION" "mamba-ssm==$MAMBA_VERSION" ||
      die "cannot download the causal-conv1d / mamba-ssm sources (pip's message above)" 1
  fi
  site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  PYTHON=$PY CAUSAL_CONV1D_VERSION=$CAUSAL_CONV1D_VERSION MAMBA_VERSION=$MAMBA_VERSION \
    tools/build_mamba_kernels.sh "$site" "$sm" "$sdists" ||
    die "mamba-ssm / causal-conv1d build failed (above); the suite still runs Granite on transformers' torch fallback, which the header names" 1
fi

# --- attention package -----------------------------------------------------------------
fa_index=()
[ -z "$wheelhouse" ] && fa_index=(--extra-index-url "$CU130_INDEX")
case "$attn" in
  fa3) say "installing flash-attn-3==$FA3_VERSION (Hopper)"
       pip_install "${fa_index[@]}" "flash-attn-3==$FA3_VERSION" ||
         die "flash-attn-3 install failed: retry, or ./install.sh --force fa4 (FA4 has an SM90 path) or --force none (SDPA)" 1 ;;
  fa4) say "installing flash-attn-4==$FA4_VERSION"
       pip_install "flash-attn-4[cu13]==$FA4_VERSION" ||
         die "flash-attn-4 install failed: retry, or ./install.sh --force none (SDPA)" 1 ;;
esac

# --- stage real weights from the HF cache, when present ---------------------------------
"$PY" - <<'PY' >&2
import os, shutil
from pathlib import Path
from upgrade_bench.models import model
repo_id = model.STAGED["llama-3.1-8b"]
dest = model.model_dir() / Path(repo_id).name
try:
    from huggingface_hub import snapshot_download
    src = Path(snapshot_download(repo_id, local_files_only=True))
except Exception:
    print(f"install.sh: no {repo_id} in the HF cache: benchmarks use random weights (same FLOPs and memory)")
else:
    dest.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.suffix in (".json", ".safetensors") and not (dest / f.name).exists():
            shutil.copy(f.resolve(), dest / f.name)
    print(f"install.sh: staged {repo_id} at {dest} (WEIGHTS=auto uses it)")
PY

# --- verify ----------------------------------------------------------------------------
if [ $verify = 1 ]; then
  "$PY" - <<'PY' >&2
from upgrade_bench.log import header
for name, version in header.software().items():
    print(f"  {name:20s} {version}")
PY
  if [ $cpu = 1 ]; then
    # The guide's default config (ZeRO-3, checkpointing, AdamW offloaded to DeepSpeed's CPU Adam):
    # its first run JIT-builds DeepSpeed's CPU ops (cpu_adam, the shm comm op) into
    # TORCH_EXTENSIONS_DIR, minutes on a small machine; here, not in a user's first run or test.
    say "verify: one tiny benchmark step on CPU in the guide's default config; the first time, this builds DeepSpeed's CPU ops (cpu_adam, shm comm: a few minutes)"
    MODEL=tiny STEPS=1 WARMUP_STEPS=0 SEQ_LEN=64 \
      "$PY" benchmark.py >/dev/null || die "verify failed: the tiny CPU benchmark step did not run" 1
  else
    say "verify: a tiny attention call with $attn"
    ATTN=$attn "$PY" - <<'PY' >&2 || die "verify failed: the attention package does not run on this GPU" 1
import os, torch
from upgrade_bench.kernels.attention.adapters import BSHD, Args
from upgrade_bench.kernels.attention.backends import KERNELS
attn = os.environ["ATTN"]
backend = KERNELS[attn if attn != "none" else "sdpa-math"]
q = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16)
q = q if backend.layout == BSHD else q.transpose(1, 2)
out = backend.run(q, q, q, Args(causal=True))
torch.cuda.synchronize()
print(f"  {backend.name}: ok, output {tuple(out.shape)}, finite={bool(torch.isfinite(out.float()).all())}")
PY
  fi
fi
if [ $cpu = 1 ]; then
  # The guide's sweep is an 8B model at 8K..256K: on a CPU, the tiny one (seconds, into out/).
  tiny_sweep='MODEL=tiny ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 SEQLENS="64 128" ./run_sweep.sh'
  say "done: try the sweep on CPU with the tiny model: $tiny_sweep"
else
  say "done: run ./run_sweep.sh (see README.md)"
fi
