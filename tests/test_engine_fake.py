"""build_engine's version-dependent choices, checked against fake TensorRT 8.2 / 10.x / 11.x modules.

No real TensorRT 8/10/11 exists here; the fakes record the calls build_engine makes
(names and arguments as in the 8.2 / 10.3 / 11.1 Python bindings sources) so the
flag logic (EXPLICIT_BATCH, FP16/TF32 flags, workspace API, strong typing with the
fp16 ONNX conversion, profiles, timing cache, parser errors) is tested.
"""
import enum
import importlib.util
import os
import types

import pytest

from trt_sparse import engine, trt_loader
from trt_sparse.errors import TrtSparseError

from _fake_tensorrt import ILogger

_spec = importlib.util.spec_from_file_location(
    "_trt_sparse_engine_models", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_engine_models.py"))
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)


class DataType(enum.Enum):
    FLOAT = 0


def make_trt(version, calls, parse_ok=True, errors=()):
    major = int(version.split(".")[0])
    flags = {"STRONGLY_TYPED": 1} if major >= 11 else {"EXPLICIT_BATCH": 0, "STRONGLY_TYPED": 1}
    if major < 9:
        flags.pop("STRONGLY_TYPED")
    NetFlag = enum.IntEnum("NetworkDefinitionCreationFlag", flags)
    bflags = {"TF32": 7} if major >= 11 else {"FP16": 0, "TF32": 7}
    BuilderFlag = enum.Enum("BuilderFlag", bflags)

    class Tensor:
        def __init__(self, name, shape):
            self.name, self.shape, self.dtype = name, shape, DataType.FLOAT

    class Network:
        num_inputs = 1
        num_outputs = 1

        def get_input(self, i):
            return Tensor("x", (-1, 3, 16, 16))

        def get_output(self, i):
            return Tensor("y", (-1, 8))

    class Parser:
        def __init__(self, network, logger):
            self.errs = list(errors)

        def parse_from_file(self, path):
            calls.append(("parse_from_file", os.path.basename(path)))
            return parse_ok

        def parse(self, data, path=None):
            calls.append(("parse", len(data) > 0, os.path.basename(path)))
            return parse_ok

        @property
        def num_errors(self):
            return len(self.errs)

        def get_error(self, i):
            return self.errs[i]

    class Profile:
        def set_shape(self, name, lo, opt, hi):
            calls.append(("set_shape", name, tuple(lo), tuple(opt), tuple(hi)))

    class Cache:
        def serialize(self):
            return b"CACHE"

    class Config:
        def __init__(self):
            if major < 9:
                self.max_workspace_size = 0

        def set_flag(self, f):
            calls.append(("set_flag", f.name))

        def clear_flag(self, f):
            calls.append(("clear_flag", f.name))

        def add_optimization_profile(self, p):
            calls.append(("add_optimization_profile",))

        def create_timing_cache(self, blob):
            calls.append(("create_timing_cache", bytes(blob)))
            return Cache()

        def set_timing_cache(self, cache, ignore_mismatch):
            calls.append(("set_timing_cache", ignore_mismatch))

        def get_timing_cache(self):
            return Cache()

        def __setattr__(self, k, v):
            if k == "max_workspace_size" and v:
                calls.append(("max_workspace_size", v))
            object.__setattr__(self, k, v)

    if major >= 9:
        def set_memory_pool_limit(self, pool, size):
            calls.append(("set_memory_pool_limit", pool, size))
        Config.set_memory_pool_limit = set_memory_pool_limit

    class Builder:
        platform_has_fast_fp16 = True

        def __init__(self, logger):
            calls.append(("Builder",))

        def create_network(self, flags):
            calls.append(("create_network", flags))
            return Network()

        def create_builder_config(self):
            return Config()

        def create_optimization_profile(self):
            return Profile()

        def build_serialized_network(self, network, config):
            calls.append(("build_serialized_network",))
            return bytearray(b"ENGINE" * 10)

    mod = types.SimpleNamespace(
        __name__="tensorrt", __version__=version, Builder=Builder, Logger=ILogger, ILogger=ILogger,
        OnnxParser=Parser, NetworkDefinitionCreationFlag=NetFlag, BuilderFlag=BuilderFlag,
        MemoryPoolType=types.SimpleNamespace(WORKSPACE="WORKSPACE"))
    if major >= 11:
        del mod.Builder.platform_has_fast_fp16
    return mod


@pytest.fixture
def onnx_path(tmp_path):
    path = tmp_path / "tiny.onnx"
    M.tiny_convnet(str(path))
    return path


def _build(monkeypatch, trt, onnx_path, **kw):
    monkeypatch.setattr(trt_loader, "import_tensorrt", lambda backend="auto": trt)
    kw.setdefault("progress", False)
    return engine.build_engine(str(onnx_path), **kw)


def _names(calls):
    return [c[0] for c in calls]


def test_trt82_fp16_weak_typing(monkeypatch, onnx_path, tmp_path):
    calls = []
    trt = make_trt("8.2.1.8", calls)
    res = _build(monkeypatch, trt, onnx_path, precision="fp16", workspace=1 << 30, tf32=False,
                 shapes={"x": ((1, 3, 16, 16), (2, 3, 16, 16), (4, 3, 16, 16))},
                 save_path=str(tmp_path / "e.engine"))
    assert ("create_network", 1 << 0) in calls  # EXPLICIT_BATCH
    assert ("set_flag", "FP16") in calls and ("clear_flag", "TF32") in calls
    assert ("max_workspace_size", 1 << 30) in calls and "set_memory_pool_limit" not in _names(calls)
    assert ("parse_from_file", "tiny.onnx") in calls  # weak typing: the model is parsed as it is
    assert ("set_shape", "x", (1, 3, 16, 16), (2, 3, 16, 16), (4, 3, 16, 16)) in calls
    assert res.metadata["strongly_typed"] is False and res.metadata["fp16_conversion"] is None
    assert (tmp_path / "e.engine").read_bytes() == b"ENGINE" * 10


def test_trt10_default_weak_and_optional_strong(monkeypatch, onnx_path):
    calls = []
    trt = make_trt("10.3.0", calls)
    _build(monkeypatch, trt, onnx_path, precision="fp16", workspace=123)
    assert ("create_network", 0) in calls and ("set_flag", "FP16") in calls
    assert ("set_memory_pool_limit", "WORKSPACE", 123) in calls
    calls.clear()
    res = _build(monkeypatch, trt, onnx_path, precision="fp16", strongly_typed=True)
    assert ("create_network", 1 << 1) in calls  # STRONGLY_TYPED
    assert "set_flag" not in _names(calls)
    assert ("parse", True, "tiny.onnx") in calls  # the fp16-converted model, parsed from memory
    assert res.metadata["fp16_conversion"]["initializers"] > 0


def test_trt11_is_strongly_typed_only(monkeypatch, onnx_path):
    calls = []
    trt = make_trt("11.1.0", calls)
    res = _build(monkeypatch, trt, onnx_path, precision="fp16")
    assert ("create_network", 0) in calls and "set_flag" not in _names(calls)
    assert res.metadata["strongly_typed"] is True and res.metadata["fp16_conversion"]["io_casts"] == 2
    with pytest.raises(TrtSparseError, match="strongly typed networks only"):
        _build(monkeypatch, trt, onnx_path, strongly_typed=False)


def test_dynamic_input_without_profile_gets_batch_1(monkeypatch, onnx_path, capsys):
    calls = []
    _build(monkeypatch, make_trt("10.3.0", calls), onnx_path)
    assert ("set_shape", "x", (1, 3, 16, 16), (1, 3, 16, 16), (1, 3, 16, 16)) in calls
    assert "dynamic shape" in capsys.readouterr().err


def test_timing_cache_read_and_written(monkeypatch, onnx_path, tmp_path):
    calls = []
    cache = tmp_path / "tc.bin"
    cache.write_bytes(b"OLD")
    _build(monkeypatch, make_trt("10.3.0", calls), onnx_path, timing_cache=str(cache))
    assert ("create_timing_cache", b"OLD") in calls and ("set_timing_cache", False) in calls
    assert cache.read_bytes() == b"CACHE"


class _Err82:
    def __init__(self, node, desc):
        self._n, self._d = node, desc

    def node(self):
        return self._n

    def desc(self):
        return self._d


def test_parser_failure_names_onnx_node_on_trt82(monkeypatch, onnx_path):
    calls = []
    trt = make_trt("8.2.1.8", calls, parse_ok=False, errors=[_Err82(2, "Assertion failed")])
    import onnx

    node = onnx.load(str(onnx_path)).graph.node[2]
    with pytest.raises(TrtSparseError) as info:
        _build(monkeypatch, trt, onnx_path)
    assert "node {} ({}): Assertion failed".format(node.name, node.op_type) in str(info.value)
    assert "build_serialized_network" not in _names(calls)


def test_sparse_model_without_plugin_library(monkeypatch, tmp_path):
    from onnx import TensorProto, helper
    import onnx

    g = helper.make_graph([helper.make_node("SparseConv2d", ["x"], ["y"], name="sc0")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "s.onnx"
    onnx.save(m, str(path))
    monkeypatch.setattr(trt_loader, "find_plugin_library", lambda explicit=None: None)
    with pytest.raises(TrtSparseError, match="SparseConv2d nodes but no plugin library"):
        engine.build_engine(str(path))
