#!/usr/bin/env python3
"""The source patches tools/build_mamba_kernels.sh applies to unpacked causal-conv1d and mamba-ssm
sdists before building them (install.sh --mamba). Standard library only.

    python tools/mamba_patches.py CAUSAL_CONV1D_DIR MAMBA_SSM_DIR SM      # SM: 90 for sm_90

Each anchor must match exactly as often as in the sources the patches were written for;
otherwise nothing more is patched and the build stops, naming that version.
"""
import ast
import re
import sys
from pathlib import Path

# The sources the anchors were read from: install.sh's CAUSAL_CONV1D_VERSION and MAMBA_VERSION.
WRITTEN_FOR = {"causal-conv1d": "1.7.0", "mamba-ssm": "2.3.2.post1"}
# causal_conv1d_bwd.cu's explicit instantiations: 9 (input, weight) dtype pairs, plain and channel-last.
BWD_INSTANTIATION = re.compile(r"^template void causal_conv1d_(?:channellast_)?bwd_cuda<([^>]*)>.*\n", re.M)
BWD_INSTANTIATIONS = 18


class PatchError(Exception):
    pass


def expect(path: Path, package: str, pattern: re.Pattern, count: int = 1) -> str:
    """path's text, once pattern is seen there exactly count times."""
    text = path.read_text()
    found = len(pattern.findall(text))
    if found != count:
        raise PatchError(f"{path}: {found} matches of {pattern.pattern!r}, expected {count} as in {package} "
                         f"{WRITTEN_FOR[package]} (install.sh's pin): the patch needs updating for this source")
    return text


def substitute(path: Path, package: str, anchor: str, replace) -> None:
    """Rewrite the one match of anchor (a line, regex) by replace(match); a .py file must still parse."""
    pattern = re.compile(anchor, re.M)
    text = pattern.sub(replace, expect(path, package, pattern))
    if path.suffix == ".py":
        ast.parse(text, str(path))
    path.write_text(text)


def one_architecture(conv_dir: Path, sm: str) -> None:
    """setup.py hard-codes -gencode for sm_75 to sm_121, and with -gencode flags given torch ignores
    TORCH_CUDA_ARCH_LIST: the list is replaced by sm_{sm} alone, right after it is built."""
    flag = f'    cc_flag = ["-gencode", "arch=compute_{sm},code=sm_{sm}"]  # build_mamba_kernels.sh: one architecture\n'
    substitute(conv_dir / "setup.py", "causal-conv1d", r"^    # HACK: The compiler flag -D_GLIBCXX_USE_CXX11_ABI",
               lambda m: flag + m.group(0))


def split_backward(conv_dir: Path) -> None:
    """causal_conv1d_bwd.cu is one translation unit of 1080 kernels, about 3.5 min of nvcc for one
    architecture: the build's critical path. It becomes one copy per dtype pair, each keeping that
    pair's instantiations only (the same kernels and symbols in all), which ninja compiles side by side."""
    bwd = conv_dir / "csrc" / "causal_conv1d_bwd.cu"
    text = expect(bwd, "causal-conv1d", BWD_INSTANTIATION, BWD_INSTANTIATIONS)
    pairs = list(dict.fromkeys(m.group(1) for m in BWD_INSTANTIATION.finditer(text)))
    for k, pair in enumerate(pairs):
        part = BWD_INSTANTIATION.sub(lambda m: m.group(0) if m.group(1) == pair else "", text)
        (bwd.parent / f"causal_conv1d_bwd_part{k}.cu").write_text(part)
    sources = " ".join(f'"csrc/causal_conv1d_bwd_part{k}.cu",' for k in range(len(pairs)))
    substitute(conv_dir / "setup.py", "causal-conv1d", r'"csrc/causal_conv1d_bwd\.cu",', lambda m: sources)


def optional_selective_scan(mamba_dir: Path) -> None:
    """transformers' Mamba-2 path takes mamba-ssm's Triton kernels only, so its CUDA extension
    (selective_scan_cuda, Mamba-1's scan) is not built; its one unconditional import would make
    `import mamba_ssm`, hence every mamba_ssm.ops.triton import, fail."""
    substitute(mamba_dir / "mamba_ssm" / "ops" / "selective_scan_interface.py", "mamba-ssm",
               r"^import selective_scan_cuda$",
               lambda m: "try:\n    import selective_scan_cuda\nexcept ImportError:  # not built (Mamba-1's scan)\n"
                         "    selective_scan_cuda = None")


def main(argv: list[str]) -> None:
    conv_dir, mamba_dir, sm = Path(argv[1]), Path(argv[2]), argv[3]
    try:
        one_architecture(conv_dir, sm)
        split_backward(conv_dir)
        optional_selective_scan(mamba_dir)
    except (PatchError, SyntaxError) as e:
        sys.exit(f"mamba_patches.py: error: {e}")


if __name__ == "__main__":
    main(sys.argv)
