"""install.sh --mamba's build (tools/build_mamba_kernels.sh): its source patches (tools/mamba_patches.py)
on small stand-ins that carry the real sdists' anchors, and what it refuses before compiling (the
build itself needs nvcc and a GPU; results/h200-experts-9/mamba_build.log is one run)."""
import itertools
import os
import re
import sys

import pytest

from conftest import REPO, import_script, run_proc

PATCHES = import_script("tools/mamba_patches.py")
INSTALL_SH = (REPO / "install.sh").read_text()
DTYPES = ["float", "at::Half", "at::BFloat16"]
# causal_conv1d_bwd.cu's explicit instantiations, in its order: <input, weight>, input varying fastest
INSTANTIATIONS = [f"template void causal_conv1d_{kind}bwd_cuda<{i}, {w}>(ConvParamsBwd &params, cudaStream_t stream);\n"
                  for kind in ("", "channellast_") for w, i in itertools.product(DTYPES, DTYPES)]
BWD_BODY = "#include \"causal_conv1d.h\"\n\ntemplate<typename input_t, typename weight_t>\nvoid kernel() {}\n\n"


def sources(root):
    """causal-conv1d's and mamba-ssm's unpacked sdists, reduced to the lines the patches touch."""
    conv, mamba = root / "causal_conv1d-1.7.0", root / "mamba_ssm-2.3.2.post1"
    (conv / "csrc").mkdir(parents=True)
    (conv / "setup.py").write_text(
        'cc_flag = []\nif True:\n    cc_flag.append("-gencode")\n    cc_flag.append("arch=compute_75,code=sm_75")\n\n'
        "    # HACK: The compiler flag -D_GLIBCXX_USE_CXX11_ABI is set to be the same as\n"
        '    sources = [\n        "csrc/causal_conv1d.cpp",\n        "csrc/causal_conv1d_bwd.cu",\n    ]\n')
    (conv / "csrc" / "causal_conv1d_bwd.cu").write_text(BWD_BODY + "".join(INSTANTIATIONS))
    interface = mamba / "mamba_ssm" / "ops" / "selective_scan_interface.py"
    interface.parent.mkdir(parents=True)
    interface.write_text("import os\nimport selective_scan_cuda\n\n\ndef fwd():\n    return selective_scan_cuda.fwd()\n")
    return conv, mamba, interface


def run(path) -> dict:
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_the_patches_build_one_architecture_the_backward_in_nine_files_and_no_mamba1_scan(tmp_path):
    conv, mamba, interface = sources(tmp_path)
    PATCHES.main(["mamba_patches.py", str(conv), str(mamba), "90"])
    setup = run(conv / "setup.py")
    assert setup["cc_flag"] == ["-gencode", "arch=compute_90,code=sm_90"]
    parts = [f"csrc/causal_conv1d_bwd_part{k}.cu" for k in range(9)]
    assert setup["sources"] == ["csrc/causal_conv1d.cpp", *parts]
    # each part: the whole file with one dtype pair's plain and channel-last instantiations
    kept = [[line for line in (conv / part).read_text().splitlines(keepends=True) if line.startswith("template void")]
            for part in parts]
    assert all((conv / part).read_text() == BWD_BODY + "".join(lines) for part, lines in zip(parts, kept))
    assert [len({line.split("<")[1] for line in lines}) for lines in kept] == [1] * 9
    assert sorted(itertools.chain(*kept)) == sorted(INSTANTIATIONS)
    assert run(interface)["selective_scan_cuda"] is None  # not built: mamba_ssm still imports


@pytest.mark.parametrize("file, line, package", [
    ("setup.py", "    # HACK: The compiler flag", "causal-conv1d 1.7.0"),
    ("csrc/causal_conv1d_bwd.cu", INSTANTIATIONS[4], "causal-conv1d 1.7.0"),
    ("mamba_ssm/ops/selective_scan_interface.py", "import selective_scan_cuda", "mamba-ssm 2.3.2.post1"),
], ids=["gencode", "bwd-instantiation", "mamba1-import"])
@pytest.mark.parametrize("change", ["gone", "twice"])
def test_a_source_whose_anchor_is_not_there_once_stops_the_build_naming_the_version_patched(
        tmp_path, file, line, package, change):
    conv, mamba, _ = sources(tmp_path)
    path = (mamba if file.startswith("mamba_ssm") else conv) / file
    text = path.read_text()
    anchor = next(s for s in text.splitlines(keepends=True) if s.startswith(line))
    path.write_text(text.replace(anchor, "" if change == "gone" else anchor * 2))
    with pytest.raises(SystemExit) as stopped:
        PATCHES.main(["mamba_patches.py", str(conv), str(mamba), "90"])
    assert re.match(rf"mamba_patches.py: error: {re.escape(str(path))}: \d+ matches of .* expected \d+ as in "
                    rf"{re.escape(package)} \(install.sh's pin\)", stopped.value.code)


def test_the_patches_are_written_for_install_sh_pins_and_it_runs_the_build_script():
    pins = dict(re.findall(r"\b(MAMBA_VERSION|CAUSAL_CONV1D_VERSION)=\$\{\1:-([^}]+)\}", INSTALL_SH))
    assert pins == {"MAMBA_VERSION": PATCHES.WRITTEN_FOR["mamba-ssm"],
                    "CAUSAL_CONV1D_VERSION": PATCHES.WRITTEN_FOR["causal-conv1d"]}
    assert "tools/build_mamba_kernels.sh \"$site\" \"$sm\" \"$sdists\"" in INSTALL_SH
    assert os.access(REPO / "tools" / "build_mamba_kernels.sh", os.X_OK)


@pytest.mark.parametrize("args, error", [
    (["site", "9.0", "sdists"], "SM '9.0': expected digits, e.g. 90"),
    (["site", "90", "sdists"], "no sdists/causal_conv1d-1.7.0.tar.gz"),  # a --wheelhouse without the sources
])
def test_the_build_script_refuses_a_bad_architecture_or_a_missing_sdist_in_one_line(tmp_path, args, error):
    (tmp_path / "sdists").mkdir()
    proc = run_proc(["bash", str(REPO / "tools" / "build_mamba_kernels.sh"), *args],
                    {"CAUSAL_CONV1D_VERSION": "1.7.0", "MAMBA_VERSION": "2.3.2.post1"}, timeout=30, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (1, f"build_mamba_kernels.sh: error: {error}\n")
    assert not (tmp_path / "site").exists()


def test_install_sh_refuses_mamba_without_a_gpu_in_one_line():
    proc = run_proc(["bash", str(REPO / "install.sh"), "--cpu", "--mamba"], {}, timeout=30)
    assert (proc.returncode, proc.stderr) == (
        2, "install.sh: error: --mamba needs a GPU node: mamba-ssm and causal-conv1d are CUDA builds\n")


def toolkit_and_python(root, missing):
    """A stand-in CUDA toolkit (the script checks for nvcc and cuda_runtime.h before Python) and
    PYTHONPATH of stand-in modules: those in `missing` fail to import, the others import empty."""
    cuda = root / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "include").mkdir()
    (cuda / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (cuda / "bin" / "nvcc").chmod(0o755)
    (cuda / "include" / "cuda_runtime.h").write_text("")
    shadow = root / "shadow"
    (shadow / "wheel").mkdir(parents=True)
    for name in ("torch", "setuptools", "einops", "triton", "wheel/bdist_wheel"):
        (shadow / f"{name}.py").write_text("raise ImportError('stand-in')\n" if name in missing else "")
    (shadow / "wheel" / "__init__.py").write_text("raise ImportError('stand-in')\n" if "wheel" in missing else "")
    return {"CUDA_HOME": str(cuda), "PYTHONPATH": str(shadow), "PYTHON": sys.executable,
            "CAUSAL_CONV1D_VERSION": "1.7.0",
            "MAMBA_VERSION": "2.3.2.post1"}


def build(tmp_path, target, env):
    (tmp_path / "sdists").mkdir(exist_ok=True)
    for name in ("causal_conv1d-1.7.0.tar.gz", "mamba_ssm-2.3.2.post1.tar.gz"):
        (tmp_path / "sdists" / name).write_bytes(b"")
    return run_proc(["bash", str(REPO / "tools" / "build_mamba_kernels.sh"), target, "90", "sdists"], env,
                    timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("missing", [("torch",), ("triton",), ("torch", "wheel", "triton")])
def test_a_python_without_what_the_build_imports_is_one_line_naming_each_and_the_target_it_made_is_removed(
        tmp_path, missing):
    proc = build(tmp_path, "site/lib", toolkit_and_python(tmp_path, missing))
    assert proc.returncode == 1
    assert re.fullmatch(rf"build_mamba_kernels.sh: error: \S+ cannot build them \(no {', '.join(missing)}\): it "
                        r"needs torch with CUDA, setuptools, wheel, einops, triton\n", proc.stderr), proc.stderr
    assert not (tmp_path / "site").exists()


def test_a_target_dir_that_existed_is_kept_when_the_build_is_refused(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "mine").write_text("kept")
    proc = build(tmp_path, "site", toolkit_and_python(tmp_path, ("triton",)))
    assert proc.returncode == 1 and (tmp_path / "site" / "mine").read_text() == "kept"


def test_a_target_dir_that_cannot_be_a_folder_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("")
    proc = build(tmp_path, "afile/site", toolkit_and_python(tmp_path, ()))
    assert (proc.returncode, proc.stderr) == (
        1, "build_mamba_kernels.sh: error: TARGET_DIR 'afile/site': cannot make or write a folder there\n")


@pytest.mark.parametrize("args", [["--wheelhouse", ""], ["--cpu", "--wheelhouse", ""], ["--wheelhouse"]])
def test_install_sh_refuses_a_wheelhouse_of_no_folder_in_one_line(args):
    # issue 46: --wheelhouse '' passed the folder check and installed from the index
    proc = run_proc(["bash", str(REPO / "install.sh"), *args], {}, timeout=30)
    assert (proc.returncode, proc.stderr) == (
        2, "install.sh: error: --wheelhouse needs a folder (it was given none, or '')\n")
