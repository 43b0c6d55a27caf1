#!/usr/bin/env bash
# tools/build_mamba_kernels.sh TARGET_DIR SM SDIST_DIR: Mamba-2's kernels for one GPU architecture
# (SM: 90 for sm_90), built offline from SDIST_DIR's causal_conv1d-$CAUSAL_CONV1D_VERSION.tar.gz and
# mamba_ssm-$MAMBA_VERSION.tar.gz, installed into TARGET_DIR, then checked on this GPU. install.sh
# --mamba runs it with the venv's site-packages.
#
# - causal-conv1d: its CUDA extension for sm_$SM only, its backward compiled as 9 files side by side
#   (tools/mamba_patches.py says why). On an H200 with 16 cores (MAX_JOBS=12): 67 s.
# - mamba-ssm: Python and Triton only (MAMBA_SKIP_CUDA_BUILD): transformers' Mamba-2 (Granite 4.0-H)
#   takes its Triton kernels; Mamba-1's CUDA scan is not built.
# Environment: PYTHON (the interpreter whose torch builds them, default python3), CAUSAL_CONV1D_VERSION
# and MAMBA_VERSION (required), MAX_JOBS (parallel compiles, default the core count), CUDA_HOME.
set -euo pipefail

die() { echo "build_mamba_kernels.sh: error: $*" >&2; exit 1; }
say() { echo "build_mamba_kernels.sh: $*" >&2; }

[ $# = 3 ] || die "usage: tools/build_mamba_kernels.sh TARGET_DIR SM SDIST_DIR (e.g. /tmp/site 90 /tmp/sdists)"
[[ $2 =~ ^[0-9]+$ ]] || die "SM '$2': expected digits, e.g. 90"
SM=$2
[ -n "${CAUSAL_CONV1D_VERSION:-}" ] && [ -n "${MAMBA_VERSION:-}" ] || die "set CAUSAL_CONV1D_VERSION and MAMBA_VERSION"
conv_sdist=$3/causal_conv1d-$CAUSAL_CONV1D_VERSION.tar.gz mamba_sdist=$3/mamba_ssm-$MAMBA_VERSION.tar.gz
for f in "$conv_sdist" "$mamba_sdist"; do [ -f "$f" ] || die "no $f"; done
# A TARGET_DIR this run makes (its topmost new folder) is removed again when it stops without the kernels.
made=""
if [ ! -e "$1" ]; then made=$1; while [ ! -e "$(dirname "$made")" ]; do made=$(dirname "$made"); done; fi
trap 'code=$?; [ $code = 0 ] || [ -z "$made" ] || rm -rf -- "$made"' EXIT
mkdir -p -- "$1" 2>/dev/null && [ -w "$1" ] && TARGET=$(cd "$1" && pwd) ||
  die "TARGET_DIR '$1': cannot make or write a folder there"
PY=$(command -v "${PYTHON:-python3}") || die "no Python '${PYTHON:-python3}'"
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")  # absolute, the venv's link kept
TOOLS=$(cd "$(dirname "$0")" && pwd)

# Offline: without *_FORCE_BUILD, setup.py first fetches a prebuilt wheel from GitHub (urllib, no
# timeout); pip reads no index; any other request meets a closed local port at once.
export CAUSAL_CONV1D_FORCE_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE MAMBA_SKIP_CUDA_BUILD=TRUE
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
       HTTPS_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY=
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
# The toolkit: nvcc's, its link resolved (a wrapper script in /usr/local/bin is none), else /usr/local/cuda.
if [ -z "${CUDA_HOME:-}" ]; then
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")
  [ -f "$CUDA_HOME/include/cuda_runtime.h" ] || CUDA_HOME=/usr/local/cuda
fi
[ -x "$CUDA_HOME/bin/nvcc" ] && [ -f "$CUDA_HOME/include/cuda_runtime.h" ] ||
  die "no CUDA toolkit at '$CUDA_HOME' (bin/nvcc, include/cuda_runtime.h): set CUDA_HOME"
export CUDA_HOME PATH=$CUDA_HOME/bin:$PATH:$(dirname "$PY")  # the venv's ninja
# What the build imports, each named when missing: one line, not an ImportError's traceback.
lacks=$("$PY" -W ignore - 2>/dev/null <<'PY'
import importlib
missing = []
for name in ("torch", "setuptools", "wheel.bdist_wheel", "einops", "triton"):
    try:
        importlib.import_module(name)
    except Exception:
        missing.append(name.split(".")[0])
if missing:
    print("no " + ", ".join(missing))
else:
    import torch
    print("" if torch.version.cuda else f"torch {torch.__version__} without CUDA")
PY
) || lacks="it does not start"
[ -z "$lacks" ] || die "$PY cannot build them ($lacks): it needs torch with CUDA, setuptools, wheel, einops, triton"
command -v ninja >/dev/null || die "no ninja (pip install ninja): torch would compile one file at a time"

work=$(mktemp -d "${TMPDIR:-/tmp}/mamba-build.XXXXXX")
tar -xzf "$conv_sdist" -C "$work" && tar -xzf "$mamba_sdist" -C "$work" || die "cannot unpack the sdists"
conv=$work/causal_conv1d-$CAUSAL_CONV1D_VERSION mamba=$work/mamba_ssm-$MAMBA_VERSION
"$PY" "$TOOLS/mamba_patches.py" "$conv" "$mamba" "$SM" || exit 1

build() {  # NAME DIR
  local t0=$SECONDS
  if ! "$PY" -m pip install -v --no-build-isolation --no-deps --no-index --upgrade --target "$TARGET" "$2" \
       >"$work/$1.log" 2>&1; then
    tail -n 40 "$work/$1.log" >&2
    die "$1: build failed after $((SECONDS - t0)) s (log: $work/$1.log)"
  fi
  say "built $1 in $((SECONDS - t0)) s"
}
t0=$SECONDS
say "building causal-conv1d $CAUSAL_CONV1D_VERSION for sm_$SM, MAX_JOBS=$MAX_JOBS, CUDA_HOME=$CUDA_HOME"
build causal-conv1d "$conv"
archs=$(grep -oE 'code=sm_[0-9]+' "$work/causal-conv1d.log" | sort -u | tr '\n' ' ' || true)
[ -z "$archs" ] || [ "$archs" = "code=sm_$SM " ] ||
  die "causal-conv1d was compiled for $archs: the one-architecture patch did not hold"
build mamba-ssm "$mamba"

# Check: the kernels import from TARGET_DIR, and causal-conv1d's match fp64 torch (no TF32).
PYTHONPATH=$TARGET${PYTHONPATH:+:$PYTHONPATH} "$PY" - "$TARGET" <<'PY' || die "check failed (above); logs: $work"
import os, sys
import torch
import torch.nn.functional as F
import causal_conv1d_cuda, mamba_ssm
from causal_conv1d import causal_conv1d_fn, causal_conv1d_update
import mamba_ssm.ops.triton.ssd_combined, mamba_ssm.ops.triton.selective_state_update  # Granite's Mamba-2 path

target = os.path.realpath(sys.argv[1])
for module in (causal_conv1d_cuda, mamba_ssm):
    assert os.path.realpath(module.__file__).startswith(target), f"{module.__file__}: not the one built in {target}"
torch.manual_seed(0)
for dtype, rtol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):  # bf16 outputs keep 8 mantissa bits
    for width in (2, 3, 4):
        x, xs = torch.randn(2, 64, 37, device="cuda", dtype=dtype), torch.randn(2, 64, device="cuda", dtype=dtype)
        w, b = torch.randn(64, width, device="cuda", dtype=dtype), torch.randn(64, device="cuda", dtype=dtype)
        ref = F.silu(F.conv1d(x.double(), w.double()[:, None], b.double(), padding=width - 1, groups=64)[..., :37])
        state = x[..., 37 - (width - 1):].clone()  # the decode step: the last width-1 inputs, then xs
        window = torch.cat([state, xs[..., None]], -1).double()
        step = causal_conv1d_update(xs, state, w, b, activation="silu")
        tol = rtol * (1 + ref.abs().max().item())
        for name, got, want in (("causal_conv1d_fn", causal_conv1d_fn(x, w, b, activation="silu"), ref),
                                ("causal_conv1d_update", step, F.silu((window * w.double()).sum(-1) + b.double())),
                                ("its conv_state", state, window[..., 1:])):
            err = (got.double() - want).abs().max().item()
            assert err <= tol, f"{name}, {dtype}, width {width}: max abs error {err:.2e} > {tol:.2e}"
print(f"build_mamba_kernels.sh: check OK: causal-conv1d matches torch (fp32, bf16; widths 2-4) on "
      f"{torch.cuda.get_device_name()}; mamba-ssm's Triton kernels import", file=sys.stderr)
PY
rm -rf "$work"
say "done in $((SECONDS - t0)) s"
