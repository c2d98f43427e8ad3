"""Tests of the Jetson kit's shell scripts (jetson/*.sh) without a Jetson or TensorRT.

trtexec, tegrastats, nvcc, cmake and dpkg-query are replaced by small stand-ins that
behave like the real tools do in the ways the scripts depend on (see
tests/fixtures/trtexec/fake_trtexec.py); the scripts themselves run unmodified.
"""
import csv
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JETSON = os.path.join(ROOT, "jetson")
FIX = os.path.join(ROOT, "tests", "fixtures", "trtexec")
SCRIPTS = ["build_plugin.sh", "build_engines.sh", "bench.sh"]
# Tools the scripts may call; a sandbox PATH gets links to these only.
BASE_TOOLS = ["bash", "sed", "awk", "grep", "tr", "head", "tail", "dirname", "basename", "cat", "nproc",
              "mkdir", "find", "mv", "rm", "wc", "date", "uname", "sleep", "env", "sort", "nm", "kill"]


def script(name):
    return os.path.join(JETSON, name)


def write_exe(path, text):
    with open(str(path), "w") as f:
        f.write(text)
    os.chmod(str(path), os.stat(str(path)).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def sandbox_bin(tmp_path, with_python=True):
    """A bin folder with links to the basic tools only (no cmake, nvcc, trtexec, dpkg-query)."""
    b = tmp_path / "bin"
    b.mkdir(exist_ok=True)
    for tool in BASE_TOOLS:
        real = shutil.which(tool)
        if real and not (b / tool).exists():
            os.symlink(real, str(b / tool))
    if with_python and not (b / "python3").exists():
        os.symlink(sys.executable, str(b / "python3"))
    return b


def run(args, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(["bash"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=full_env, cwd=cwd or ROOT, timeout=120)


# ------------------------------------------------------------------ static checks

@pytest.mark.parametrize("name", SCRIPTS + ["common.sh", "check_old_arch_compile.sh"])
def test_bash_syntax(name):
    res = subprocess.run(["bash", "-n", script(name)], stderr=subprocess.PIPE, universal_newlines=True)
    assert res.returncode == 0, res.stderr


def test_shellcheck_clean():
    sc = shutil.which("shellcheck")
    if sc is None:
        pytest.skip("shellcheck not installed (apt-get install -y shellcheck)")
    res = subprocess.run([sc, "-x"] + [script(n) for n in SCRIPTS + ["common.sh", "check_old_arch_compile.sh"]],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, cwd="/")
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("name,words", [
    ("build_plugin.sh", ["--arch", "--tensorrt-root", "--cuda-root", "--detect-only", "Nano"]),
    ("build_engines.sh", ["--dense", "--sparse", "--plugin", "--precision", "--dynamicPlugins"]),
    ("bench.sh", ["--runs", "--duration", "--power", "tegrastats", "jetson_clocks"]),
    ("check_old_arch_compile.sh", ["--pip-target", "--cuda-path", "nvidia-cuda-nvcc-cu11", "clang"]),
])
def test_help(name, words):
    res = run([script(name), "--help"])
    assert res.returncode == 0 and res.stdout.startswith("Usage:")
    for w in words:
        assert w in res.stdout


@pytest.mark.parametrize("name", SCRIPTS)
def test_unknown_option_is_one_line_error(name):
    res = run([script(name), "--frobnicate"])
    assert res.returncode != 0
    assert res.stderr.strip() == "{}: error: unknown option '--frobnicate' (see --help)".format(name)


@pytest.mark.parametrize("name", SCRIPTS)
def test_option_without_value(name):
    opt = {"build_plugin.sh": "--arch", "build_engines.sh": "--dense", "bench.sh": "--runs"}[name]
    res = run([script(name), opt])
    assert res.returncode != 0 and "option {} needs a value".format(opt) in res.stderr


# ------------------------------------------------------------------ build_plugin.sh detection

def fake_toolchain(tmp_path, cuda="10.2", cmake="3.10.2", trt=(8, 2, 1), enterprise_macros=False,
                   jetpack_pkg=None, gpu_codes=None):
    """Fake nvcc/cmake/dpkg-query, TensorRT headers and Jetson files; returns (env, paths)."""
    b = sandbox_bin(tmp_path)
    calls = tmp_path / "cmake_calls.txt"
    if cuda:
        codes = "\n".join(gpu_codes) if gpu_codes else ""
        write_exe(b / "nvcc", "#!/bin/bash\n"
                  "if [[ $1 == --list-gpu-code ]]; then [[ -n '{codes}' ]] || exit 1; printf '%s\\n' '{codes}'; exit 0; fi\n"
                  "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                  "echo 'Cuda compilation tools, release {v}, V{v}.300'\n".format(v=cuda, codes=codes))
    if cmake:
        write_exe(b / "cmake", "#!/bin/bash\n"
                  "if [[ $1 == --version ]]; then echo 'cmake version {v}'; exit 0; fi\n"
                  "echo \"$PWD :: $*\" >> '{calls}'\n"
                  "if [[ $1 == --build ]]; then mkdir -p \"$2\" && : > \"$2/libtrt_sparse_plugin.so\"; fi\n".format(
                      v=cmake, calls=calls))
    if jetpack_pkg:
        write_exe(b / "dpkg-query", "#!/bin/bash\n"
                  "for a; do last=$a; done\n"
                  "[[ $last == nvidia-jetpack ]] && printf '%s' '{}' && exit 0\nexit 1\n".format(jetpack_pkg))
    inc = tmp_path / "trt" / "include"
    inc.mkdir(parents=True)
    if enterprise_macros:
        ver = ("#define TRT_MAJOR_ENTERPRISE {}\n#define TRT_MINOR_ENTERPRISE {}\n#define TRT_PATCH_ENTERPRISE {}\n"
               "#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< major\n"
               "#define NV_TENSORRT_MINOR TRT_MINOR_ENTERPRISE //!< minor\n"
               "#define NV_TENSORRT_PATCH TRT_PATCH_ENTERPRISE //!< patch\n").format(*trt)
    else:
        ver = ("#define NV_TENSORRT_MAJOR {} //!< TensorRT major version.\n#define NV_TENSORRT_MINOR {} //!< minor\n"
               "#define NV_TENSORRT_PATCH {} //!< patch\n#define NV_TENSORRT_BUILD 8 //!< build\n").format(*trt)
    (inc / "NvInferVersion.h").write_text("#ifndef NV_INFER_VERSION_H\n#define NV_INFER_VERSION_H\n" + ver + "#endif\n")
    (inc / "NvInfer.h").write_text("// stand-in\n")
    rel = tmp_path / "nv_tegra_release"
    rel.write_text("# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t210ref, EABI: aarch64, "
                   "DATE: Sat Feb 19 17:05:08 UTC 2022\n")
    compat = tmp_path / "compatible"
    compat.write_bytes(b"nvidia,p3450-0000\0nvidia,jetson-nano\0nvidia,tegra210\0")
    env = {"PATH": str(b), "NV_TEGRA_RELEASE_FILE": str(rel), "DEVICE_TREE_COMPATIBLE": str(compat),
           "CUDA_HOME": "", "CUDA_PATH": "", "TENSORRT_ROOT": ""}
    return env, {"include": str(inc), "calls": str(calls), "compat": compat, "release": rel, "bin": b}


def test_detect_nano_jetpack46(tmp_path):
    env, p = fake_toolchain(tmp_path)
    res = run([script("build_plugin.sh"), "--detect-only", "--tensorrt-include", p["include"]], env=env)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "L4T:        32.7.1" in out
    assert "JetPack:    4.6.1 (from L4T 32.7.1)" in out
    assert "Tegra chip: tegra210" in out
    assert "TensorRT:   8.2.1" in out
    assert "CUDA:       10.2" in out
    assert "CMake:      3.10.2" in out
    assert "GPU arch:   sm_53 (from device tree (tegra210: Nano/TX1))" in out


@pytest.mark.parametrize("chip,arch", [("tegra186", 62), ("tegra194", 72), ("tegra234", 87)])
def test_detect_arch_from_device_tree(tmp_path, chip, arch):
    env, p = fake_toolchain(tmp_path)
    p["compat"].write_bytes(b"nvidia,p3737-0000+p3701-0000\0nvidia," + chip.encode() + b"\0")
    res = run([script("build_plugin.sh"), "--detect-only"], env=env)
    assert "GPU arch:   sm_{} (from device tree ({}".format(arch, chip) in res.stdout


def test_detect_jetpack_from_dpkg_and_enterprise_header_macros(tmp_path):
    env, p = fake_toolchain(tmp_path, cuda="12.6", cmake="3.22.1", trt=(10, 16, 0), enterprise_macros=True,
                            jetpack_pkg="6.1+b123")
    res = run([script("build_plugin.sh"), "--detect-only", "--tensorrt-root", os.path.dirname(p["include"])], env=env)
    assert res.returncode == 0, res.stderr
    assert "JetPack:    6.1 (dpkg nvidia-jetpack)" in res.stdout
    assert "TensorRT:   10.16.0" in res.stdout


def test_x86_arch_from_nvidia_smi(tmp_path):
    env, p = fake_toolchain(tmp_path, cuda="12.4", cmake="3.28.0")
    os.unlink(str(p["release"]))
    os.unlink(str(p["compat"]))
    write_exe(p["bin"] / "nvidia-smi", "#!/bin/bash\necho '8.0'\n")
    res = run([script("build_plugin.sh"), "--detect-only"], env=env)
    assert "L4T:        not a Jetson" in res.stdout
    assert "GPU arch:   sm_80 (from nvidia-smi compute_cap 8.0)" in res.stdout


def test_dry_run_old_cmake_passes_kernel_archs(tmp_path):
    env, p = fake_toolchain(tmp_path)
    res = run([script("build_plugin.sh"), "--dry-run", "--tensorrt-include", p["include"],
               "--build-dir", str(tmp_path / "b")], env=env)
    assert res.returncode == 0, res.stderr
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("mkdir -p ")][0]
    words = shlex.split(line)  # the dry run prints a shell-quoted command line
    assert "-DTSC_CUDA_ARCHS=53" in words  # the kernels' -gencode fallback for CMake < 3.18
    assert not any("CMAKE_CUDA_ARCHITECTURES" in w for w in words)
    assert "-DTENSORRT_INCLUDE_DIR={}".format(p["include"]) in words
    assert "-DCMAKE_CUDA_COMPILER={}".format(p["bin"] / "nvcc") in words


def test_build_new_cmake_uses_cuda_architectures_and_writes_env(tmp_path):
    env2, p2 = fake_toolchain(tmp_path, cuda="11.4", cmake="3.18.0", gpu_codes=["sm_72", "sm_87"])
    p2["compat"].write_bytes(b"nvidia,tegra234\0")
    build = tmp_path / "build-jetson"
    res = run([script("build_plugin.sh"), "--tensorrt-include", p2["include"], "--build-dir", str(build), "--jobs", "3"],
              env=env2)
    assert res.returncode == 0, res.stderr
    with open(p2["calls"]) as f:
        calls = f.read().splitlines()
    # configured from inside the build folder (no -S/-B: CMake 3.10), then built with -j
    assert calls[0].startswith(str(build) + " :: " + os.path.join(ROOT, "plugin") + " ")
    assert "-DCMAKE_CUDA_ARCHITECTURES=87" in calls[0] and "-DTSC_CUDA_ARCHS=87" in calls[0]
    assert calls[1].endswith(":: --build {} -- -j3".format(build))
    with open(str(build / "jetson_env.txt")) as f:
        envtxt = dict(line.strip().split("=", 1) for line in f)
    assert envtxt["arch"] == "sm_87" and envtxt["tensorrt"] == "8.2.1" and envtxt["cuda"] == "11.4"
    assert envtxt["plugin"] == str(build / "libtrt_sparse_plugin.so")
    assert "built: {}".format(build / "libtrt_sparse_plugin.so") in res.stdout


@pytest.mark.parametrize("kw,args,message", [
    (dict(cmake=None), [], "cmake not found on PATH"),
    (dict(cmake="3.5.1"), [], "CMake 3.5.1 is too old"),
    (dict(), ["--cuda-root", "/nonexistent/cuda"], "no nvcc in /nonexistent/cuda/bin"),
    (dict(), ["--tensorrt-root", "/nonexistent/trt"], "TensorRT headers (NvInfer.h, NvInferVersion.h) not found"),
    (dict(cuda="13.0"), [], "CUDA 13.0 cannot compile for sm_53"),
    (dict(gpu_codes=["sm_75", "sm_80"]), [], "cannot generate code for sm_53"),
    (dict(trt=(7, 1, 3)), [], "TensorRT 7.1.3 is too old"),
    (dict(), ["--arch", "8.7"], "--arch must be digits"),
    (dict(), ["--jobs", "0"], "--jobs must be a positive integer"),
])
def test_build_plugin_prerequisite_errors(tmp_path, kw, args, message):
    env, p = fake_toolchain(tmp_path, **kw)
    if "--tensorrt-root" not in args:
        args = args + ["--tensorrt-include", p["include"]]
    res = run([script("build_plugin.sh"), "--build-dir", str(tmp_path / "b")] + args, env=env)
    assert res.returncode != 0
    assert message in res.stderr, res.stderr
    assert res.stderr.startswith("build_plugin.sh: error: ")
    assert not (tmp_path / "b").exists()


def test_no_arch_detectable(tmp_path):
    env, p = fake_toolchain(tmp_path)
    os.unlink(str(p["compat"]))
    res = run([script("build_plugin.sh"), "--tensorrt-include", p["include"]], env=env)
    assert res.returncode != 0 and "cannot detect the GPU architecture" in res.stderr and "pass --arch" in res.stderr


@pytest.mark.slow
def test_real_cmake_build_of_plugin_here(tmp_path):
    """The real plugin/ CMake project through build_plugin.sh (x86 here: sm_75, TensorRT 10.16 headers)."""
    if not os.path.isfile(os.path.join(ROOT, "plugin", "kernels", "CMakeLists.txt")):
        pytest.skip("plugin/kernels/CMakeLists.txt not in the tree yet")
    inc = os.path.join(ROOT, ".trt", "10.16", "include")
    if not os.path.isfile(os.path.join(inc, "NvInfer.h")):
        pytest.skip("TensorRT headers not extracted (.trt/10.16/include: ../shared/tools/trt-headers)")
    if not (shutil.which("cmake") and (shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"))):
        pytest.skip("cmake or nvcc missing")
    build = tmp_path / "build"
    res = subprocess.run(["bash", script("build_plugin.sh"), "--arch", "75", "--tensorrt-include", inc,
                          "--build-dir", str(build), "--jobs", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=900)
    assert res.returncode == 0, res.stdout[-4000:]
    lib = build / "libtrt_sparse_plugin.so"
    assert lib.is_file()
    syms = subprocess.check_output(["nm", "-D", "--defined-only", str(lib)], universal_newlines=True)
    assert "getCreators" in syms


# ------------------------------------------------------------------ trtexec stand-in

def fake_trtexec_env(tmp_path, version):
    b = sandbox_bin(tmp_path)
    write_exe(b / "trtexec", "#!/bin/bash\nexec '{}' '{}' \"$@\"\n".format(
        sys.executable, os.path.join(FIX, "fake_trtexec.py")))
    calls = tmp_path / "trtexec_calls.jsonl"
    env = {"PATH": str(b), "FAKE_TRT": version, "FAKE_TRTEXEC_CALLS": str(calls), "TRT_SPARSE_PLUGIN_LIB": ""}
    return env, b, calls


def read_calls(calls):
    if not os.path.exists(str(calls)):
        return []
    with open(str(calls)) as f:
        return [json.loads(line) for line in f if line.strip()]


def make_plugin(tmp_path, v3):
    """A tiny shared library; v3=True exports getCreators like the TensorRT 10 plugin does."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to make a stand-in plugin library")
    src = tmp_path / "plugin.c"
    src.write_text("int getCreators(int *n) { *n = 0; return 0; }\n" if v3 else "int trt_sparse_register(void) { return 1; }\n")
    lib = tmp_path / ("libv3.so" if v3 else "libv2.so")
    subprocess.check_call([cc, "-shared", "-fPIC", "-o", str(lib), str(src)])
    return str(lib)


def onnx_pair(tmp_path):
    d = tmp_path / "models"
    d.mkdir()
    (d / "resnet18.onnx").write_bytes(b"dense")
    (d / "resnet18_sparse.onnx").write_bytes(b"sparse")
    return str(d / "resnet18.onnx"), str(d / "resnet18_sparse.onnx")


@pytest.mark.parametrize("version,v3,flag,build_only,workspace", [
    ("8.2", False, "--plugins", "--buildOnly", "--workspace=512"),
    ("10.3", True, "--dynamicPlugins", "--skipInference", "--memPoolSize=workspace:512"),
    ("10.3", False, "--staticPlugins", "--skipInference", "--memPoolSize=workspace:512"),
])
def test_build_engines_flags_per_tensorrt_version(tmp_path, version, v3, flag, build_only, workspace):
    env, _, calls = fake_trtexec_env(tmp_path, version)
    lib = make_plugin(tmp_path, v3)
    dense, sparse = onnx_pair(tmp_path)
    out = tmp_path / "out"
    res = run([script("build_engines.sh"), "--dense", dense, "--sparse", sparse, "--plugin", lib,
               "--precision", "fp32,fp16", "--workspace", "512", "--out-dir", str(out)], env=env)
    assert res.returncode == 0, res.stderr
    engines = sorted(os.listdir(str(out / "engines")))
    assert engines == ["resnet18_dense_fp16.engine", "resnet18_dense_fp32.engine",
                       "resnet18_sparse_fp16.engine", "resnet18_sparse_fp32.engine"]  # no .tmp left
    builds = [c for c in read_calls(calls) if any(a.startswith("--onnx=") for a in c)]
    assert len(builds) == 4
    for c in builds:
        assert build_only in c and workspace in c
        is_sparse = "--onnx=" + sparse in c
        assert (flag + "=" + lib in c) == is_sparse
        assert ("--fp16" in c) == any("_fp16.engine.tmp" in a for a in c)
    assert os.path.getsize(str(out / "engines" / "resnet18_sparse_fp16.engine")) == 900
    assert "TensorRT {}".format({"8.2": "8.2.1", "10.3": "10.3.0"}[version]) in res.stdout
    # a second call keeps the engines (newer than their inputs); --force rebuilds
    n = len(read_calls(calls))
    res = run([script("build_engines.sh"), "--dense", dense, "--sparse", sparse, "--plugin", lib,
               "--out-dir", str(out)], env=env)
    assert res.returncode == 0 and "keeping" in res.stderr
    assert len([c for c in read_calls(calls)[n:] if "--help" not in c]) == 0
    # a newer plugin rebuilds the sparse engine only
    future = os.path.getmtime(str(out / "engines" / "resnet18_dense_fp16.engine")) + 10
    os.utime(lib, (future, future))
    n = len(read_calls(calls))
    res = run([script("build_engines.sh"), "--dense", dense, "--sparse", sparse, "--plugin", lib,
               "--out-dir", str(out)], env=env)
    rebuilt = [c for c in read_calls(calls)[n:] if "--help" not in c]
    assert res.returncode == 0 and len(rebuilt) == 1 and "--onnx=" + sparse in rebuilt[0]


def test_build_engines_reports_trtexec_failure(tmp_path):
    env, _, _ = fake_trtexec_env(tmp_path, "10.3")
    lib = make_plugin(tmp_path, v3=True)
    dense, sparse = onnx_pair(tmp_path)
    out = tmp_path / "out"
    # a getCreators library passed with --staticPlugins registers nothing: the parser fails
    res = run([script("build_engines.sh"), "--sparse", sparse, "--plugin", lib, "--plugin-mode", "static",
               "--out-dir", str(out)], env=env)
    assert res.returncode != 0
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("build_engines.sh: error: trtexec failed to build")
    assert "Plugin not found" in err and "resnet18_sparse_fp16.build.log" in err
    assert os.listdir(str(out / "engines")) == []
    assert (out / "logs" / "resnet18_sparse_fp16.build.log").is_file()


def test_build_engines_input_errors(tmp_path):
    env, _, _ = fake_trtexec_env(tmp_path, "8.2")
    dense, sparse = onnx_pair(tmp_path)
    cases = [
        ([], "give --dense and/or --sparse"),
        (["--dense", str(tmp_path / "missing.onnx")], "ONNX file not found"),
        (["--sparse", sparse], "no plugin library"),
        (["--dense", dense, "--precision", "int8"], "--precision takes fp16, fp32"),
        (["--dense", dense, "--workspace", "1G"], "--workspace must be a positive integer"),
        (["--dense", dense, "--name", "a b"], "--name 'a b' may only hold"),
        (["--dense", dense, "--trtexec", str(tmp_path / "nope")], "is not an executable file"),
    ]
    for args, message in cases:
        res = run([script("build_engines.sh"), "--out-dir", str(tmp_path / "o")] + args, env=env)
        assert res.returncode != 0 and message in res.stderr, (args, res.stderr)


def test_trtexec_not_found(tmp_path):
    b = sandbox_bin(tmp_path)
    dense, _ = onnx_pair(tmp_path)
    res = run([script("build_engines.sh"), "--dense", dense], env={"PATH": str(b), "TRTEXEC": "", "TENSORRT_ROOT": ""})
    if os.path.exists("/usr/src/tensorrt/bin/trtexec"):
        pytest.skip("a real trtexec is installed here")
    assert res.returncode != 0 and "trtexec not found" in res.stderr


# ------------------------------------------------------------------ bench.sh end to end

def fake_tegrastats(b):
    """tegrastats stand-in: appends the Nano fixture's lines to --logfile until killed."""
    write_exe(b / "tegrastats", """#!/bin/bash
log=""
while [[ $# -gt 0 ]]; do case $1 in --logfile) log=$2; shift 2 ;; *) shift ;; esac; done
[[ -n $log ]] || exit 2
trap 'exit 0' TERM
while :; do
  while IFS= read -r line; do echo "$line" >> "$log"; sleep 0.01; done < '{}'
done
""".format(os.path.join(FIX, "tegrastats_nano_jp46.log")))


def flag_for(version):
    return "--plugins" if version == "8.2" else "--dynamicPlugins"


@pytest.mark.parametrize("version", ["8.2", "10.3"])
def test_bench_end_to_end(tmp_path, version):
    env, b, calls = fake_trtexec_env(tmp_path, version)
    fake_tegrastats(b)
    lib = make_plugin(tmp_path, v3=(version == "10.3"))
    dense, sparse = onnx_pair(tmp_path)
    out = tmp_path / "out"
    res = run([script("bench.sh"), "--dense", dense, "--sparse", sparse, "--plugin", lib, "--runs", "2",
               "--duration", "1", "--warmup", "100", "--cooldown", "0", "--cuda-graph", "--power", "tegrastats",
               "--power-interval", "50", "--out-dir", str(out)], env=env)
    assert res.returncode == 0, res.stderr
    loads = [c for c in read_calls(calls) if any(a.startswith("--loadEngine=") for a in c)]
    runs = [c for c in loads if not any(a.startswith("--exportOutput=") for a in c)]
    checks = [c for c in loads if any(a.startswith("--exportOutput=") for a in c)]
    assert len(runs) == 4
    # the output check: dense and sparse once each on the same loaded input
    assert len(checks) == 2
    assert [a for a in checks[0] if a.startswith("--loadInputs=")] == [a for a in checks[1] if a.startswith("--loadInputs=")]
    assert (flag_for(version) + "=" + lib in checks[1]) and not any(a.startswith(flag_for(version)) for a in checks[0])
    check_txt = (out / "check.txt").read_text()
    assert "resnet18 fp16 output: 1000 values" in check_txt and check_txt.rstrip().endswith(": ok")
    assert "output check passed" in res.stdout
    # interleaved dense/sparse, trtexec's own timing options, plugin only for sparse
    assert ["_dense_" in c[0] for c in runs] == [True, False, True, False]
    flag = flag_for(version)
    for c in runs:
        assert {"--warmUp=100", "--duration=1", "--iterations=100", "--avgRuns=10", "--useCudaGraph"} <= set(c)
        assert (flag + "=" + lib in c) == ("_sparse_" in c[0])
    with open(str(out / "runs.csv")) as f:
        manifest = list(csv.DictReader(f))
    assert [(r["variant"], r["run"]) for r in manifest] == [("dense", "1"), ("sparse", "1"), ("dense", "2"),
                                                            ("sparse", "2")]
    assert all(os.path.getsize(str(out / r["power_log"])) > 0 for r in manifest)
    with open(str(out / "summary.csv")) as f:
        rows = {r["variant"]: r for r in csv.DictReader(f)}
    d, s = rows["dense"], rows["sparse"]
    if version == "8.2":
        assert float(s["speedup_latency"]) == pytest.approx(7.72021 / 5.95361, rel=1e-5)
        assert d["device"] == "NVIDIA Tegra X1" and d["trt_version"] == "8.2.1"
    else:
        assert float(s["speedup_latency"]) == pytest.approx(1.14404 / 0.946289, rel=1e-5)
        assert d["trt_version"] == "10.3.0"
    assert int(d["runs"]) == 2
    assert float(d["engine_mib"]) == pytest.approx(2400 / 2.0 ** 20, rel=1e-4)
    assert float(s["engine_size_ratio"]) == pytest.approx(900 / 2400.0, rel=1e-4)
    assert d["power_rail"] == "POM_5V_IN" and 2000 < float(d["power_total_mw"]) < 5300
    text = (out / "summary.txt").read_text()
    assert "speedup" in text and "resnet18" in text
    env_txt = (out / "env.txt").read_text()
    assert "runs=2" in env_txt and "power=tegrastats" in env_txt


def test_bench_dry_run_prints_commands(tmp_path):
    env, _, calls = fake_trtexec_env(tmp_path, "8.2")
    lib = make_plugin(tmp_path, v3=False)
    eng = tmp_path / "engines"
    eng.mkdir()
    (eng / "m_dense_fp32.engine").write_bytes(b"x")
    (eng / "m_sparse_fp32.engine").write_bytes(b"y")
    res = run([script("bench.sh"), "--engine-dir", str(eng), "--plugin", lib, "--runs", "1", "--dry-run",
               "--out-dir", str(tmp_path / "o")], env=env)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if "--loadEngine=" in ln]
    assert len(lines) == 2 and "--plugins=" + lib in lines[1] and "--plugins" not in lines[0]
    res = run([script("bench.sh"), "--engine-dir", str(eng), "--plugin", lib, "--runs", "1", "--dry-run",
               "--shapes", "input:4x3x224x224", "--out-dir", str(tmp_path / "o")], env=env)
    assert res.returncode == 0, res.stderr
    assert all("--shapes=input:4x3x224x224" in ln for ln in res.stdout.splitlines() if "--loadEngine=" in ln)
    assert not (tmp_path / "o").exists()
    assert all("--help" in c for c in read_calls(calls))


def test_bench_errors(tmp_path):
    env, b, _ = fake_trtexec_env(tmp_path, "8.2")
    eng = tmp_path / "engines"
    eng.mkdir()
    res = run([script("bench.sh"), "--engine-dir", str(eng)], env=env)
    assert res.returncode != 0 and "no *.engine files in" in res.stderr
    (eng / "weird.engine").write_bytes(b"x")
    res = run([script("bench.sh"), "--engine-dir", str(eng)], env=env)
    assert res.returncode != 0 and "is not named NAME_{dense,sparse}_{fp16,fp32}.engine" in res.stderr
    os.unlink(str(eng / "weird.engine"))
    (eng / "m_sparse_fp16.engine").write_bytes(b"x")
    res = run([script("bench.sh"), "--engine-dir", str(eng)], env=env)
    assert res.returncode != 0 and "sparse engines need the plugin" in res.stderr
    res = run([script("bench.sh"), "--engine-dir", str(eng), "--runs", "0"], env=env)
    assert res.returncode != 0 and "--runs must be a positive integer" in res.stderr
    os.rename(str(eng / "m_sparse_fp16.engine"), str(eng / "m_dense_fp16.engine"))
    res = run([script("bench.sh"), "--engine-dir", str(eng), "--power", "tegrastats"], env=env)
    assert res.returncode != 0 and "tegrastats not found" in res.stderr
    res = run([script("bench.sh"), "--precision", "fp16"], env=env)
    assert res.returncode != 0 and "only apply with --dense/--sparse" in res.stderr


def test_bench_failed_run_stops_with_reason(tmp_path):
    env, _, _ = fake_trtexec_env(tmp_path, "10.3")
    lib = make_plugin(tmp_path, v3=True)
    eng = tmp_path / "engines"
    eng.mkdir()
    (eng / "m_sparse_fp16.engine").write_bytes(b"x")
    out = tmp_path / "o"
    res = run([script("bench.sh"), "--engine-dir", str(eng), "--plugin", lib, "--plugin-mode", "static",
               "--runs", "1", "--cooldown", "0", "--power", "none", "--out-dir", str(out)], env=env)
    assert res.returncode != 0
    assert "trtexec failed (exit 1)" in res.stderr and "IPluginCreator not found" in res.stderr
    assert not (out / "runs.csv").exists()


@pytest.mark.parametrize("error,precision,expect_rc", [("1e-5", "fp32", 0), ("0.005", "fp32", 3), ("0.005", "fp16", 0),
                                                        ("0.2", "fp16", 3)])
def test_bench_output_check_tolerance(tmp_path, error, precision, expect_rc):
    env, _, _ = fake_trtexec_env(tmp_path, "8.2")
    env["FAKE_SPARSE_ERROR"] = error
    lib = make_plugin(tmp_path, v3=False)
    dense, sparse = onnx_pair(tmp_path)
    out = tmp_path / "out"
    res = run([script("bench.sh"), "--dense", dense, "--sparse", sparse, "--plugin", lib, "--precision", precision,
               "--runs", "1", "--cooldown", "0", "--power", "none", "--out-dir", str(out)], env=env)
    assert res.returncode == expect_rc, res.stderr
    check_txt = (out / "check.txt").read_text()
    assert ("MISMATCH" in check_txt) == (expect_rc == 3)
    assert (out / "summary.csv").is_file()  # the timings are summarised either way
    if expect_rc == 3:
        assert "differ from the dense engine's beyond the tolerance" in res.stderr
    res = run([script("bench.sh"), "--engine-dir", str(out / "engines"), "--plugin", lib, "--runs", "1",
               "--cooldown", "0", "--power", "none", "--no-check", "--out-dir", str(tmp_path / "o2")], env=env)
    assert res.returncode == 0 and not (tmp_path / "o2" / "check.txt").exists()


@pytest.mark.parametrize("version,flag", [("10.3", "--dynamicPlugins"), ("8.2", "--plugins")])
def test_plugin_flag_without_nm_follows_the_version(tmp_path, version, flag):
    env, b, _ = fake_trtexec_env(tmp_path, version)
    lib = make_plugin(tmp_path, v3=(version == "10.3"))
    os.unlink(str(b / "nm"))
    _, sparse = onnx_pair(tmp_path)
    res = run([script("build_engines.sh"), "--sparse", sparse, "--plugin", lib, "--dry-run"], env=env)
    assert res.returncode == 0, res.stderr
    assert "(passed as {})".format(flag) in res.stderr and flag + "=" + lib in res.stdout


# ------------------------------------------------------------------ old-architecture compile check

def test_old_arch_check_reports_missing_prerequisites(tmp_path):
    res = run([script("check_old_arch_compile.sh"), "--pip-target", str(tmp_path / "nothing")])
    assert res.returncode == 3
    assert "lacks nvidia/cuda_nvcc/bin/ptxas" in res.stderr or "no clang++" in res.stderr
    res = run([script("check_old_arch_compile.sh")])
    assert res.returncode in (1, 3) and ("give --cuda-path or --pip-target" in res.stderr or "no clang++" in res.stderr)


@pytest.mark.slow
def test_kernels_compile_for_sm53_with_cuda11_headers():
    """plugin/kernels for a Jetson Nano (sm_53) with clang + CUDA 11.8 headers/ptxas (nvcc 13 cannot target it)."""
    target = os.environ.get("TRT_SPARSE_CUDA11_TARGET", "")
    if not shutil.which("clang++"):
        pytest.skip("clang++ not installed (apt-get install clang)")
    if not (target and os.path.isfile(os.path.join(target, "nvidia", "cuda_nvcc", "bin", "ptxas"))):
        pytest.skip("set TRT_SPARSE_CUDA11_TARGET to a 'pip install --target DIR nvidia-cuda-nvcc-cu11==11.8.89 "
                    "nvidia-cuda-runtime-cu11==11.8.89' folder")
    res = subprocess.run(["bash", script("check_old_arch_compile.sh"), "--pip-target", target, "--arch", "53"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "failed 0" in res.stdout and "sm_53: OK" in res.stdout
