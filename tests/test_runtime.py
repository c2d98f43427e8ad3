"""runtime.py pure logic (statistics, inputs, output comparison, backend choice), the bench flow with a
fake runner, reports; and, marked ``tensorrt``, a real engine run where a TensorRT runtime and GPU exist."""
import collections
import importlib.util
import json
import os

import numpy as np
import pytest

from trt_sparse import bench_report, runtime
from trt_sparse.commands import bench_cmd
from trt_sparse.errors import TrtSparseError

_spec = importlib.util.spec_from_file_location(
    "_trt_sparse_engine_models", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_engine_models.py"))
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)


# ---------------------------------------------------------------- statistics

def test_latency_stats_against_sorted_sample_definition():
    rng = np.random.default_rng(3)
    times = rng.gamma(4.0, 0.5, size=1001)  # 1001 samples: percentiles fall on exact order statistics
    s = runtime.latency_stats(times)
    srt = np.sort(times)
    assert s["n"] == 1001
    assert s["median_ms"] == pytest.approx(srt[500])
    assert s["p90_ms"] == pytest.approx(srt[900])
    assert s["p99_ms"] == pytest.approx(srt[990])
    assert s["min_ms"] == srt[0] and s["max_ms"] == srt[-1]
    assert s["mean_ms"] == pytest.approx(sum(times) / len(times))
    assert s["min_ms"] <= s["median_ms"] <= s["p90_ms"] <= s["p95_ms"] <= s["p99_ms"] <= s["max_ms"]


def test_latency_stats_small_and_invalid():
    s = runtime.latency_stats([2.0, 1.0])
    assert s["median_ms"] == 1.5 and s["p90_ms"] == pytest.approx(1.9)
    with pytest.raises(ValueError):
        runtime.latency_stats([])
    with pytest.raises(ValueError):
        runtime.latency_stats([1.0, float("nan")])


def test_throughput():
    assert runtime.throughput(2.0, 8) == pytest.approx(4000.0)
    with pytest.raises(ValueError):
        runtime.throughput(0.0, 1)


# ---------------------------------------------------------------- inputs

def test_random_inputs_seeded_and_typed():
    specs = [("x", (2, 3), np.float16), ("ids", (4,), np.int32), ("m", (3,), np.bool_)]
    a = runtime.random_inputs(specs, seed=5)
    b = runtime.random_inputs(specs, seed=5)
    c = runtime.random_inputs(specs, seed=6)
    assert [v.dtype for v in a.values()] == [np.float16, np.int32, np.bool_]
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["x"], c["x"])
    assert a["ids"].min() >= 0 and a["ids"].max() < 10
    with pytest.raises(TrtSparseError, match="dynamic"):
        runtime.random_inputs([("x", (-1, 3), np.float32)])


def test_load_inputs_npy_npz_and_errors(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(str(tmp_path / "x.npy"), x)
    got = runtime.load_inputs(str(tmp_path / "x.npy"), ["input"])
    assert list(got) == ["input"] and np.array_equal(got["input"], x)
    with pytest.raises(TrtSparseError, match="one array but the engine has 2 inputs"):
        runtime.load_inputs(str(tmp_path / "x.npy"), ["a", "b"])
    np.savez(str(tmp_path / "in.npz"), a=x, b=x + 1)
    got = runtime.load_inputs(str(tmp_path / "in.npz"), ["b", "a"])
    assert list(got) == ["b", "a"] and np.array_equal(got["b"], x + 1)
    with pytest.raises(TrtSparseError, match="no array for input"):
        runtime.load_inputs(str(tmp_path / "in.npz"), ["a", "c"])
    with pytest.raises(TrtSparseError, match="not engine inputs"):
        runtime.load_inputs(str(tmp_path / "in.npz"), ["a"])
    (tmp_path / "junk.npy").write_bytes(b"garbage")
    with pytest.raises(TrtSparseError, match="cannot read"):
        runtime.load_inputs(str(tmp_path / "junk.npy"), ["a"])
    with pytest.raises(TrtSparseError, match="does not exist"):
        runtime.load_inputs(str(tmp_path / "none.npz"), ["a"])


def test_check_input():
    info = runtime.TensorInfo("x", True, np.dtype(np.float32), (-1, 3), ((1, 3), (2, 3), (4, 3)))
    out = runtime.check_input(info, np.ones((2, 3), np.float64))
    assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"]
    with pytest.raises(TrtSparseError, match="outside the engine's profile"):
        runtime.check_input(info, np.ones((8, 3), np.float32))
    with pytest.raises(TrtSparseError, match="dimension 1 must be 3"):
        runtime.check_input(info, np.ones((2, 4), np.float32))
    with pytest.raises(TrtSparseError, match="rank"):
        runtime.check_input(info, np.ones((2, 3, 1), np.float32))
    ints = runtime.TensorInfo("i", True, np.dtype(np.int32), (2,), None)
    with pytest.raises(TrtSparseError, match="needs int32"):
        runtime.check_input(ints, np.ones(2, np.float32))


def test_compare_outputs():
    a = {"y": np.array([1.0, -2.0, 4.0])}
    r = runtime.compare_outputs(a, {"y": np.array([1.0, -2.0, 4.002])}, rtol=1e-3)
    assert r["ok"] and r["outputs"]["y"]["max_abs"] == pytest.approx(0.002)
    assert r["outputs"]["y"]["max_rel"] == pytest.approx(0.0005)
    r = runtime.compare_outputs(a, {"y": np.array([1.0, -2.0, 4.1])}, rtol=1e-3)
    assert not r["ok"] and not r["outputs"]["y"]["ok"]
    r = runtime.compare_outputs(a, {"other": np.array([1.0, -2.0, 4.0])})  # positional match
    assert r["ok"]
    r = runtime.compare_outputs(a, {"y": np.array([1.0, np.nan, 4.0])})
    assert not r["ok"] and r["outputs"]["y"]["error"] == "non-finite values"
    r = runtime.compare_outputs(a, {"y": np.zeros(2)})
    assert not r["ok"] and "shape" in r["outputs"]["y"]["error"]
    with pytest.raises(TrtSparseError, match="different outputs"):
        runtime.compare_outputs(a, {"p": a["y"], "q": a["y"]})


# ---------------------------------------------------------------- backend choice

def _factory(name, log, fail=None):
    def make(device):
        log.append(name)
        if fail == "import":
            raise ImportError("No module named {}".format(name))
        if fail == "device":
            raise TrtSparseError("no CUDA device")
        obj = type("B", (), {})()
        obj.name = name
        return obj
    return make


def test_select_backend_order_and_fallback():
    log = []
    b = runtime.select_backend("auto", factories={"cuda-python": _factory("cuda-python", log),
                                                  "pycuda": _factory("pycuda", log)})
    assert b.name == "cuda-python" and log == ["cuda-python"]
    log = []
    b = runtime.select_backend("auto", factories={"cuda-python": _factory("cuda-python", log, "import"),
                                                  "pycuda": _factory("pycuda", log)})
    assert b.name == "pycuda" and log == ["cuda-python", "pycuda"]
    log = []
    b = runtime.select_backend("pycuda", factories={"cuda-python": _factory("cuda-python", log),
                                                    "pycuda": _factory("pycuda", log)})
    assert b.name == "pycuda" and log == ["pycuda"]


def test_select_backend_reports_every_failure():
    log = []
    with pytest.raises(TrtSparseError) as info:
        runtime.select_backend("auto", factories={"cuda-python": _factory("cuda-python", log, "device"),
                                                  "pycuda": _factory("pycuda", log, "import")})
    msg = str(info.value)
    assert "cuda-python: no CUDA device" in msg and "pycuda not installed" in msg and "pip install" in msg
    with pytest.raises(TrtSparseError, match="unknown CUDA backend"):
        runtime.select_backend("opencl")


def test_device_info_without_gpu_is_a_dict():
    info = runtime.device_info()
    assert "name" in info
    if info["name"] is None:
        assert info["error"]


# ---------------------------------------------------------------- bench flow with a fake runner

class _OrtRunner:
    """EngineRunner stand-in running an ONNX model in onnxruntime; latency is a fixed series."""

    def __init__(self, model, base_ms):
        import onnxruntime as ort

        self.sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        self.base_ms = base_ms
        i = self.sess.get_inputs()[0]
        self.inputs = [runtime.TensorInfo(i.name, True, np.dtype(np.float32), (-1, 3, 16, 16),
                                          ((1, 3, 16, 16), (1, 3, 16, 16), (8, 3, 16, 16)))]
        self.cuda = type("C", (), {"name": "fake"})()
        self.closed = False

    def default_input_shapes(self):
        return {"x": (1, 3, 16, 16)}

    def infer(self, inputs):
        return collections.OrderedDict(zip([o.name for o in self.sess.get_outputs()], self.sess.run(None, inputs)))

    def time(self, inputs, iterations, warmup, cuda_graph, progress):
        batch = next(iter(inputs.values())).shape[0]
        return [self.base_ms * batch * (1 + 0.01 * (i % 10)) for i in range(iterations)]

    def profile_layers(self, inputs, iterations=10):
        return [("conv_1", 0.5 * self.base_ms), ("relu_2", 0.1 * self.base_ms)]

    def device_memory(self):
        return {"engine_file_bytes": 1234, "activation_bytes": 4096, "measured_load_bytes": None}

    def close(self):
        self.closed = True


def _run_bench(tmp_path, perturb=0.0, batches=(1, 4)):
    pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")
    dense = M.tiny_convnet(seed=0)
    sparse = M.tiny_convnet(seed=0)
    if perturb:
        from onnx import numpy_helper

        init = sparse.graph.initializer[0]
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * (1 + perturb), init.name))
    runners = []

    def factory(which):
        r = _OrtRunner(dense if which == "dense.engine" else sparse, 2.0 if which == "dense.engine" else 1.0)
        runners.append(r)
        return r

    engines = collections.OrderedDict([("dense", "dense.engine"), ("sparse", "sparse.engine")])
    results, check, info = bench_cmd.benchmark(engines, factory, batches=list(batches), iterations=50, warmup=2,
                                               rtol=1e-3, progress=False)
    assert all(r.closed for r in runners)
    return results, check, info


def test_benchmark_flow_and_speedup(tmp_path):
    results, check, info = _run_bench(tmp_path)
    assert [(r["config"], r["batch"]) for r in results] == [("dense", 1), ("dense", 4), ("sparse", 1), ("sparse", 4)]
    assert check["ok"] and set(check["per_batch"]) == {1, 4}
    assert info["cuda_backend"] == "fake"
    sp = bench_report.speedups(results)
    assert [s["batch"] for s in sp] == [1, 4]
    assert all(s["median"] == pytest.approx(2.0) for s in sp)
    dense1 = results[0]
    assert dense1["throughput_per_s"] == pytest.approx(1000.0 / dense1["latency"]["median_ms"])
    assert dense1["layers"][0] == ["conv_1", 1.0]


def test_benchmark_detects_mismatch(tmp_path):
    _, check, _ = _run_bench(tmp_path, perturb=0.05, batches=(2,))
    assert not check["ok"] and check["per_batch"][2]["outputs"]["y"]["max_rel"] > 1e-3


def test_reports_json_md_plot(tmp_path):
    results, check, info = _run_bench(tmp_path)
    meta = bench_report.make_meta(tensorrt={"flavour": "tensorrt", "version": "10.3.0"},
                                  device={"name": "Fake GPU", "compute_capability": "8.7"},
                                  cuda_backend=info["cuda_backend"], precision="fp32", iterations=50)
    report = bench_report.make_report(meta, results, check)
    bench_report.write_report(report, str(tmp_path / "r.json"))
    back = json.loads((tmp_path / "r.json").read_text())
    assert back["speedup"][0]["median"] == pytest.approx(2.0)
    assert back["meta"]["device"]["name"] == "Fake GPU" and back["meta"]["date"].endswith("Z")
    bench_report.write_report(report, str(tmp_path / "r.md"))
    md = (tmp_path / "r.md").read_text()
    assert "| dense | 1 |" in md and "2.00x" in md and "overall: **match**" in md and "conv_1" in md
    with pytest.raises(TrtSparseError):
        bench_report.write_report(report, str(tmp_path / "r.txt"))
    pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install -e '.[bench]')")
    bench_report.plot_latency(report, str(tmp_path / "lat.png"))
    assert (tmp_path / "lat.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in os.listdir(str(tmp_path)) if p.startswith(".")]  # no temp files left


def test_run_shapes_and_make_inputs():
    info = [runtime.TensorInfo("x", True, np.dtype(np.float32), (-1, 3, 8, 8), None)]
    shapes = bench_cmd.run_shapes(info, {"x": (1, 3, 8, 8)}, {}, 6)
    assert shapes == {"x": (6, 3, 8, 8)}
    shapes = bench_cmd.run_shapes(info, {"x": (1, 3, 8, 8)}, {"x": (2, 3, 8, 8)}, None)
    assert shapes == {"x": (2, 3, 8, 8)}


# ---------------------------------------------------------------- real runtime (TensorRT + GPU)

def _runtime_skip_reason():
    from trt_sparse import trt_loader

    try:
        trt = trt_loader.import_tensorrt()
    except TrtSparseError as exc:
        return "no TensorRT: {}".format(exc)
    info = runtime.device_info()
    if info.get("name") is None:
        return "no CUDA device usable for TensorRT here: {}".format(info.get("error"))
    if trt_loader.flavour(trt) == "tensorrt-rtx" and float(info.get("compute_capability", "0")) >= 9.0 \
            and float(info.get("compute_capability", "0")) < 12.0:
        return "TensorRT-RTX does not run on compute capability {}".format(info["compute_capability"])
    return None


@pytest.mark.tensorrt
@pytest.mark.gpu
def test_engine_runs_and_matches_onnxruntime(tmp_path):
    reason = _runtime_skip_reason()
    if reason:
        pytest.skip(reason)
    from trt_sparse.engine import build_engine

    onnx_path = tmp_path / "tiny.onnx"
    model = M.tiny_convnet(str(onnx_path))
    res = build_engine(str(onnx_path), shapes={"x": ((1, 3, 16, 16), (2, 3, 16, 16), (4, 3, 16, 16))},
                       save_path=str(tmp_path / "tiny.engine"), progress=False)
    with runtime.EngineRunner(res.path) as runner:
        assert [t.name for t in runner.inputs] == ["x"]
        x = np.random.default_rng(0).standard_normal((3, 3, 16, 16)).astype(np.float32)
        out = runner.infer({"x": x})
        (ref,) = M.run_ort(model, {"x": x})
        assert runtime.compare_outputs({"y": ref}, out, rtol=1e-2)["ok"]
        times = runner.time({"x": x}, iterations=20, warmup=3)
        assert len(times) == 20 and all(t > 0 for t in times)
        if runner.cuda.supports_graphs:
            assert len(runner.time({"x": x}, iterations=5, warmup=1, cuda_graph=True)) == 5
        assert runner.device_memory()["engine_file_bytes"] == len(res.engine)
        assert isinstance(runner.profile_layers({"x": x}, iterations=2), list)


def test_meta_commit_from_env(monkeypatch):
    """TRT_SPARSE_COMMIT names the commit of a tree copied without its git state (the GPU machine's copy)."""
    monkeypatch.delenv("TRT_SPARSE_COMMIT", raising=False)
    own = bench_report.make_meta()["commit"]
    monkeypatch.setenv("TRT_SPARSE_COMMIT", "0123abcd")
    assert bench_report.make_meta()["commit"] == "0123abcd" != own
