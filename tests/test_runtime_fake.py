"""EngineRunner against fake TensorRT modules (10.x tensor API and 8.2 binding API) and a fake CUDA backend.

The fakes implement only what the TensorRT Python bindings document for these
calls (names and argument order checked against the 8.2 / 10.x bindings
sources); the engine computes y = 2 * x + 1 on the "device" buffers.
"""
import enum
import types

import numpy as np
import pytest

from trt_sparse import runtime, trt_loader
from trt_sparse.errors import TrtSparseError

from _fake_tensorrt import ILogger, Severity


class FakeCuda:
    """Host-memory stand-in for a CUDA backend (pointers index a dict of bytearrays)."""

    name = "fake-cuda"
    supports_graphs = True

    def __init__(self):
        self.mem, self.next, self.clock, self.launches, self.freed = {}, 4096, 0.0, 0, []

    def malloc(self, n):
        ptr = self.next
        self.mem[ptr] = bytearray(n)
        self.next += n + 256
        return ptr

    def free(self, ptr):
        self.freed.append(ptr)
        del self.mem[ptr]

    def stream(self):
        return "stream"

    def stream_handle(self, s):
        return 1234

    def sync(self, s):
        pass

    def destroy_stream(self, s):
        pass

    def htod(self, ptr, arr, s):
        self.mem[ptr][:arr.nbytes] = arr.tobytes()

    def dtoh(self, arr, ptr, s):
        arr[...] = np.frombuffer(bytes(self.mem[ptr][:arr.nbytes]), dtype=arr.dtype).reshape(arr.shape)

    def event(self):
        return {"t": None}

    def record(self, ev, s):
        self.clock += 0.5
        ev["t"] = self.clock

    def elapsed_ms(self, a, b):
        return b["t"] - a["t"]

    def destroy_event(self, ev):
        pass

    def mem_info(self):
        return (1 << 30) - sum(len(b) for b in self.mem.values()), 1 << 30

    def capture(self, stream, enqueue):
        enqueue()
        return ("graph", enqueue)

    def launch(self, graph, stream):
        self.launches += 1
        graph[1]()

    def destroy_graph(self, graph):
        pass


class IProfiler:
    def __init__(self):
        pass


class DataType(enum.Enum):
    FLOAT = 0
    HALF = 1


class TensorIOMode(enum.Enum):
    NONE = 0
    INPUT = 1
    OUTPUT = 2


def _nptype(dt):
    return {DataType.FLOAT: np.float32, DataType.HALF: np.float16}[dt]


class _Compute:
    """Shared 'kernel': reads x, writes y = 2x + 1 through the fake CUDA memory."""

    def __init__(self, cuda):
        self.cuda = cuda

    def run(self, x_ptr, y_ptr, shape):
        n = int(np.prod(shape))
        x = np.frombuffer(bytes(self.cuda.mem[x_ptr][:4 * n]), np.float32)
        self.cuda.mem[y_ptr][:4 * n] = (2 * x + 1).astype(np.float32).tobytes()


class Engine10:
    def __init__(self, compute):
        self.compute = compute
        self.num_io_tensors = 2
        self.device_memory_size_v2 = 777

    def get_tensor_name(self, i):
        return ["x", "y"][i]

    def get_tensor_mode(self, name):
        return TensorIOMode.INPUT if name == "x" else TensorIOMode.OUTPUT

    def get_tensor_dtype(self, name):
        return DataType.FLOAT

    def get_tensor_shape(self, name):
        return (-1, 4)

    def get_tensor_profile_shape(self, name, profile_index):
        assert profile_index == 0
        return [(1, 4), (2, 4), (8, 4)]

    def create_execution_context(self):
        return Context10(self)


class Context10:
    def __init__(self, engine):
        self.engine, self.shapes, self.addr, self.profiler, self.calls = engine, {}, {}, None, 0

    def set_input_shape(self, name, shape):
        self.shapes[name] = tuple(shape)
        return True

    def get_tensor_shape(self, name):
        return self.shapes["x"]

    def set_tensor_address(self, name, ptr):
        self.addr[name] = ptr

    def execute_async_v3(self, stream_handle):
        assert stream_handle == 1234
        self.calls += 1
        self.engine.compute.run(self.addr["x"], self.addr["y"], self.shapes["x"])
        if self.profiler is not None:
            self.profiler.report_layer_time("conv", 0.3)
            self.profiler.report_layer_time("relu", 0.1)
        return True


class Engine82:
    """TensorRT 8.2: binding indices only."""

    def __init__(self, compute):
        self.compute = compute
        self.num_bindings = 2
        self.device_memory_size = 555

    def get_binding_name(self, i):
        return ["x", "y"][i]

    def binding_is_input(self, i):
        return i == 0

    def get_binding_dtype(self, i):
        return DataType.FLOAT

    def get_binding_shape(self, i):
        return (-1, 4)

    def get_profile_shape(self, profile_index, binding):
        return [(1, 4), (2, 4), (8, 4)]

    def create_execution_context(self):
        return Context82(self)


class Context82:
    def __init__(self, engine):
        self.engine, self.shapes, self.profiler = engine, {}, None
        self.all_binding_shapes_specified = False

    def set_binding_shape(self, i, shape):
        self.shapes[i] = tuple(shape)
        self.all_binding_shapes_specified = True
        return True

    def get_binding_shape(self, i):
        return self.shapes[0]

    def execute_async_v2(self, bindings, stream_handle):
        self.engine.compute.run(bindings[0], bindings[1], self.shapes[0])
        return True


def _fake_trt(engine_cls, version, cuda, fail_deserialize=False):
    compute = _Compute(cuda)

    class Runtime:
        def __init__(self, logger):
            self.logger = logger

        def deserialize_cuda_engine(self, blob):
            if fail_deserialize:
                self.logger.log(Severity.ERROR, "version mismatch")
                return None
            assert blob == b"ENGINE"
            return engine_cls(compute)

    return types.SimpleNamespace(__name__="tensorrt", __version__=version, Builder=object, Logger=ILogger,
                                 ILogger=ILogger, IProfiler=IProfiler, TensorIOMode=TensorIOMode,
                                 nptype=_nptype, Runtime=Runtime)


@pytest.fixture(params=[("10.3.0", Engine10), ("8.2.1", Engine82)], ids=["trt10-tensors", "trt82-bindings"])
def runner(request, monkeypatch, tmp_path):
    version, engine_cls = request.param
    cuda = FakeCuda()
    trt = _fake_trt(engine_cls, version, cuda)
    monkeypatch.setattr(trt_loader, "import_tensorrt", lambda backend="auto": trt)
    monkeypatch.setattr(trt_loader, "find_plugin_library", lambda explicit=None: None)
    path = tmp_path / "m.engine"
    path.write_bytes(b"ENGINE")
    r = runtime.EngineRunner(str(path), backend=cuda)
    yield r
    r.close()
    assert not cuda.mem  # every device buffer freed


def test_describe_and_defaults(runner):
    assert [(t.name, t.is_input) for t in runner.tensors] == [("x", True), ("y", False)]
    assert runner.inputs[0].profile == ((1, 4), (2, 4), (8, 4))
    assert runner.default_input_shapes() == {"x": (2, 4)}
    mem = runner.device_memory()
    assert mem["engine_file_bytes"] == 6 and mem["activation_bytes"] in (777, 555)


def test_infer_computes_and_reallocates_on_shape_change(runner):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = runner.infer({"x": x})
    np.testing.assert_array_equal(out["y"], 2 * x + 1)
    x3 = np.ones((3, 4), np.float64)  # other batch and dtype: cast and rebound
    out = runner.infer({"x": x3})
    assert out["y"].shape == (3, 4) and out["y"].dtype == np.float32
    np.testing.assert_array_equal(out["y"], np.full((3, 4), 3.0, np.float32))
    assert len(runner.cuda.freed) == 2  # the batch-2 buffers were released


def test_time_and_graph_and_profile(runner):
    x = np.zeros((2, 4), np.float32)
    times = runner.time({"x": x}, iterations=300, warmup=2)  # > one chunk of 256 event pairs
    assert len(times) == 300 and all(t == pytest.approx(0.5) for t in times)
    times = runner.time({"x": x}, iterations=5, warmup=1, cuda_graph=True)
    assert len(times) == 5 and runner.cuda.launches == 6  # one check launch + 5 timed
    if runner.tensor_api:
        rows = runner.profile_layers({"x": x}, iterations=4)
        assert rows == [("conv", pytest.approx(0.3)), ("relu", pytest.approx(0.1))]
        assert runner.context.profiler is None  # detached again


def test_input_errors(runner):
    with pytest.raises(TrtSparseError, match="missing input"):
        runner.infer({})
    with pytest.raises(TrtSparseError, match="outside the engine's profile"):
        runner.infer({"x": np.zeros((9, 4), np.float32)})
    with pytest.raises(TrtSparseError, match="iterations"):
        runner.time({"x": np.zeros((1, 4), np.float32)}, iterations=0)


def test_deserialize_failure_is_reported(monkeypatch, tmp_path):
    cuda = FakeCuda()
    trt = _fake_trt(Engine10, "10.3.0", cuda, fail_deserialize=True)
    monkeypatch.setattr(trt_loader, "import_tensorrt", lambda backend="auto": trt)
    monkeypatch.setattr(trt_loader, "find_plugin_library", lambda explicit=None: None)
    path = tmp_path / "m.engine"
    path.write_bytes(b"ENGINE")
    with pytest.raises(TrtSparseError, match="could not deserialize.*version mismatch"):
        runtime.EngineRunner(str(path), backend=cuda)
    with pytest.raises(TrtSparseError, match="does not exist"):
        runtime.EngineRunner(str(tmp_path / "none.engine"), backend=cuda)


def test_graph_needs_capable_backend(runner):
    runner.cuda.supports_graphs = False
    with pytest.raises(TrtSparseError, match="cuda-python"):
        runner.time({"x": np.zeros((1, 4), np.float32)}, iterations=1, cuda_graph=True)


def test_sidecar_mismatches(tmp_path):
    lib = tmp_path / "libp.so"
    lib.write_bytes(b"plugin v1")
    trt = types.SimpleNamespace(__name__="tensorrt", __version__="10.3.0")
    meta = {"tensorrt": {"flavour": "tensorrt", "version": "10.3.0"},
            "plugin": {"path": str(lib), "sha256": trt_loader.file_sha256(str(lib))}}
    assert runtime.sidecar_mismatches(meta, trt, str(lib)) == []
    assert runtime.sidecar_mismatches(None, trt, None) == []
    other = types.SimpleNamespace(__name__="tensorrt", __version__="10.16.0")
    (problem,) = runtime.sidecar_mismatches(meta, other, str(lib))
    assert "10.3.0" in problem and "10.16.0" in problem
    (problem,) = runtime.sidecar_mismatches(meta, trt, None)
    assert "--plugin" in problem
    lib2 = tmp_path / "libp2.so"
    lib2.write_bytes(b"plugin v2")
    (problem,) = runtime.sidecar_mismatches(meta, trt, str(lib2))
    assert "differs" in problem


def test_runner_warns_about_sidecar_mismatch(monkeypatch, tmp_path, capsys):
    import json

    cuda = FakeCuda()
    trt = _fake_trt(Engine10, "10.3.0", cuda)
    monkeypatch.setattr(trt_loader, "import_tensorrt", lambda backend="auto": trt)
    monkeypatch.setattr(trt_loader, "find_plugin_library", lambda explicit=None: None)
    path = tmp_path / "m.engine"
    path.write_bytes(b"ENGINE")
    (tmp_path / "m.engine.json").write_text(json.dumps({"tensorrt": {"flavour": "tensorrt", "version": "8.6.1"}}))
    with runtime.EngineRunner(str(path), backend=cuda) as r:
        assert r.metadata["tensorrt"]["version"] == "8.6.1"
    assert "built with tensorrt 8.6.1, running with tensorrt 10.3.0" in capsys.readouterr().err
