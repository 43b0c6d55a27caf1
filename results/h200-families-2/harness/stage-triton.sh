#!/usr/bin/env bash
# How this session's Triton 3.7.1 reached the GPU machine (64 MiB a call): the wheel (198 MB)
# without the CUPTI/profiler libraries, the Blackwell ptxas and the test plug-ins, as one xz
# tarball (87 MiB) split in two parts, each carried by its own call into /root/tri; the
# pipeline unpacks it into /tmp/tri371, which only the Qwen3-Next runs put first on PYTHONPATH.
set -euo pipefail
out=${1:-.gpu/tri}; work=$(mktemp -d)
pip download --no-deps -d "$work" 'triton==3.7.1' --python-version 3.12 \
    --platform manylinux_2_27_x86_64 --only-binary=:all:
(cd "$work" && unzip -q triton-3.7.1-*.whl && rm -rf triton/backends/nvidia/lib/cupti \
    triton/backends/nvidia/bin/ptxas-blackwell triton/_C/libproton.so triton/instrumentation/*.so \
    triton/FileCheck && tar cf - triton triton-3.7.1.dist-info | xz -T2 -9 > triton-slim.tar.xz &&
 split -b 46000000 -d triton-slim.tar.xz part.)
mkdir -p "$out/1" "$out/2" && mv "$work/part.00" "$out/1/" && mv "$work/part.01" "$out/2/"
