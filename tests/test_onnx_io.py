"""trt_sparse.onnx_io: loading with one-line errors, atomic saving, Conv attribute resolution, constants."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse import onnx_io
from trt_sparse.errors import TrtSparseError, UnsupportedError


@pytest.fixture
def small_model(conv_model):
    rng = np.random.default_rng(0)
    return conv_model((1, 3, 8, 8), rng.standard_normal((4, 3, 3, 3)), bias=rng.standard_normal(4), pads=(1, 1, 1, 1))


# -- load_model --------------------------------------------------------------------------
def test_load_missing_file(tmp_path):
    with pytest.raises(TrtSparseError, match="no such file"):
        onnx_io.load_model(tmp_path / "nope.onnx")


def test_load_directory(tmp_path):
    with pytest.raises(TrtSparseError, match="is a directory"):
        onnx_io.load_model(tmp_path)


@pytest.mark.parametrize("payload", [b"", b"hello, this is not a model\n", b"\x08\x07\x12", bytes(range(256)) * 4],
                         ids=["empty", "text", "truncated", "binary"])
def test_load_non_onnx(tmp_path, payload):
    path = tmp_path / "bad.onnx"
    path.write_bytes(payload)
    with pytest.raises(TrtSparseError, match="not an ONNX model") as info:
        onnx_io.load_model(path)
    assert "\n" not in str(info.value)


def test_load_roundtrip(tmp_path, small_model):
    path = tmp_path / "m.onnx"
    onnx.save_model(small_model, str(path))
    loaded = onnx_io.load_model(path)
    assert loaded.SerializeToString() == small_model.SerializeToString()


def test_load_missing_external_data(tmp_path, small_model):
    path = tmp_path / "m.onnx"
    onnx.save_model(small_model, str(path), save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    os.unlink(str(tmp_path / "m.onnx.data"))
    with pytest.raises(TrtSparseError, match="external data"):
        onnx_io.load_model(path)
    # without loading external data the graph is still readable
    assert onnx_io.load_model(path, load_external_data=False).graph.node[0].op_type == "Conv"


# -- save_model_atomic -------------------------------------------------------------------
def test_save_atomic_writes_and_leaves_no_temp(tmp_path, small_model):
    out = tmp_path / "out.onnx"
    onnx_io.save_model_atomic(small_model, out)
    assert sorted(os.listdir(str(tmp_path))) == ["out.onnx"]
    assert onnx.load_model(str(out)).SerializeToString() == small_model.SerializeToString()


def test_save_atomic_file_mode(tmp_path, small_model):
    umask = os.umask(0o022)
    try:
        out = tmp_path / "new.onnx"
        onnx_io.save_model_atomic(small_model, out, external_data=False)
        assert os.stat(str(out)).st_mode & 0o777 == 0o644  # not mkstemp's 0600
        os.chmod(str(out), 0o640)
        onnx_io.save_model_atomic(small_model, out)
        assert os.stat(str(out)).st_mode & 0o777 == 0o640  # a replaced file keeps its mode
        ext = tmp_path / "ext.onnx"
        onnx_io.save_model_atomic(small_model, ext, external_data=True)
        assert os.stat(str(ext)).st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)


def test_save_refuses_input_path(tmp_path, small_model):
    src = tmp_path / "in.onnx"
    onnx.save_model(small_model, str(src))
    before = src.read_bytes()
    with pytest.raises(TrtSparseError, match="overwrite the input"):
        onnx_io.save_model_atomic(small_model, str(tmp_path / "." / "in.onnx"), src_path=src)
    link = tmp_path / "link.onnx"
    os.symlink(str(src), str(link))
    with pytest.raises(TrtSparseError, match="overwrite the input"):
        onnx_io.save_model_atomic(small_model, link, src_path=src)
    assert src.read_bytes() == before


def test_save_missing_directory(tmp_path, small_model):
    with pytest.raises(TrtSparseError, match="directory does not exist"):
        onnx_io.save_model_atomic(small_model, tmp_path / "nodir" / "out.onnx")


def test_save_failure_keeps_old_output(tmp_path, small_model, monkeypatch):
    out = tmp_path / "out.onnx"
    out.write_bytes(b"old")

    def boom(*args, **kwargs):
        with open(args[1], "wb") as fh:
            fh.write(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(onnx_io.onnx, "save_model", boom)
    with pytest.raises(RuntimeError):
        onnx_io.save_model_atomic(small_model, out)
    assert out.read_bytes() == b"old"
    assert sorted(os.listdir(str(tmp_path))) == ["out.onnx"]


def test_save_external_data(tmp_path, conv_model):
    rng = np.random.default_rng(3)
    small_model = conv_model((1, 8, 8, 8), rng.standard_normal((16, 8, 3, 3)), bias=rng.standard_normal(16))
    out = tmp_path / "big.onnx"
    before = [numpy_helper.to_array(t) for t in small_model.graph.initializer]
    onnx_io.save_model_atomic(small_model, out, external_data=True)
    assert sorted(os.listdir(str(tmp_path))) == ["big.onnx", "big.onnx.data"]
    # the caller's model still carries its data in memory
    for t, b in zip(small_model.graph.initializer, before):
        assert t.data_location != TensorProto.EXTERNAL and not t.external_data
        np.testing.assert_array_equal(numpy_helper.to_array(t), b)
    raw = onnx.load_model(str(out), load_external_data=False)
    assert any(t.data_location == TensorProto.EXTERNAL for t in raw.graph.initializer)
    loaded = onnx_io.load_model(out)
    for a, b in zip(loaded.graph.initializer, small_model.graph.initializer):
        np.testing.assert_array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))


# -- conv_params ---------------------------------------------------------------------------
def test_conv_params_defaults():
    p = onnx_io.conv_params("c", {}, (8, 3, 3, 5))
    assert p == onnx_io.ConvParams("c", (8, 3, 3, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1)


def test_conv_params_explicit_from_node():
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="n", strides=[2, 1], pads=[1, 2, 3, 4],
                            dilations=[1, 2], group=1, kernel_shape=[3, 3], auto_pad="NOTSET")
    p = onnx_io.conv_params("n", onnx_io.node_attributes(node), (4, 2, 3, 3))
    assert (p.strides, p.pads, p.dilations, p.group) == ((2, 1), (1, 2, 3, 4), (1, 2), 1)


def test_conv_params_valid():
    assert onnx_io.conv_params("v", {"auto_pad": b"VALID"}, (1, 1, 3, 3)).pads == (0, 0, 0, 0)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("hw,kernel,stride,dil", [
    ((7, 8), (3, 3), (1, 1), (1, 1)),
    ((7, 8), (2, 4), (2, 2), (1, 1)),
    ((9, 6), (3, 2), (2, 3), (1, 1)),
    ((5, 5), (1, 1), (2, 2), (1, 1)),
])
def test_conv_params_same_matches_onnxruntime(conv_model, ort_run, auto_pad, hw, kernel, stride, dil):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((2, 3) + kernel).astype(np.float32)
    x = rng.standard_normal((1, 3) + hw).astype(np.float32)
    ref = ort_run(conv_model(x.shape, w, strides=stride, dilations=dil, auto_pad=auto_pad), {"x": x})[0]
    p = onnx_io.conv_params("s", {"auto_pad": auto_pad, "strides": stride, "dilations": dil}, w.shape, input_hw=hw)
    got = ort_run(conv_model(x.shape, w, strides=stride, dilations=dil, pads=p.pads), {"x": x})[0]
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_conv_params_same_with_dilation_matches_onnx_reference(conv_model, auto_pad):
    # onnxruntime refuses dilation with SAME padding; the ONNX reference evaluator implements the spec
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(2)
    w = rng.standard_normal((2, 3, 3, 2)).astype(np.float32)
    x = rng.standard_normal((1, 3, 10, 7)).astype(np.float32)
    kw = dict(strides=(2, 3), dilations=(2, 2))
    ref = ReferenceEvaluator(conv_model(x.shape, w, auto_pad=auto_pad, **kw)).run(None, {"x": x})[0]
    p = onnx_io.conv_params("s", dict(auto_pad=auto_pad, **kw), w.shape, input_hw=(10, 7))
    assert sum(p.pads) % 2 == 1  # an odd total pad: UPPER and LOWER differ
    got = ReferenceEvaluator(conv_model(x.shape, w, pads=p.pads, **kw)).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("attrs,shape,hw,pattern", [
    ({}, (4, 3, 3), None, "only 2-D"),
    ({}, (4, 3, 3, 3, 3), None, "only 2-D"),
    ({"strides": [1, 1, 1]}, (4, 3, 3, 3), None, "strides"),
    ({"pads": [1, 1]}, (4, 3, 3, 3), None, "pads"),
    ({"pads": [1, -1, 1, 1]}, (4, 3, 3, 3), None, "pads"),
    ({"strides": [0, 1]}, (4, 3, 3, 3), None, "strides"),
    ({"kernel_shape": [5, 5]}, (4, 3, 3, 3), None, "kernel_shape"),
    ({"auto_pad": "SAME_UPPER"}, (4, 3, 3, 3), None, "SAME_UPPER needs a static"),
    ({"auto_pad": "SAME_LOWER"}, (4, 3, 3, 3), (None, 8), "SAME_LOWER needs a static"),
    ({"auto_pad": "FOO"}, (4, 3, 3, 3), None, "auto_pad"),
    ({"auto_pad": "VALID", "pads": [1, 1, 1, 1]}, (4, 3, 3, 3), None, "together with auto_pad"),
    ({"group": 0}, (4, 3, 3, 3), None, "group"),
    ({"foo": 1}, (4, 3, 3, 3), None, "unsupported attribute"),
    ({}, (4, "C", 3, 3), None, "not static"),
])
def test_conv_params_rejects(attrs, shape, hw, pattern):
    with pytest.raises(UnsupportedError, match=pattern) as info:
        onnx_io.conv_params("layer_7", attrs, shape, input_hw=hw)
    assert "layer_7" in str(info.value)


def test_conv_params_keeps_group():
    assert onnx_io.conv_params("g", {"group": 4}, (8, 2, 3, 3)).group == 4


# -- constant_value / tensor_shapes -------------------------------------------------------------
def test_constant_value_initializer_and_constant_nodes(conv_model):
    w = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    m = conv_model((1, 3, 4, 4), w, weight_as_constant=True)
    np.testing.assert_array_equal(onnx_io.constant_value(m.graph, "W"), w)
    m2 = conv_model((1, 3, 4, 4), w, bias=[1.0, 2.0])
    np.testing.assert_array_equal(onnx_io.constant_value(m2, "W"), w)
    np.testing.assert_array_equal(onnx_io.constant_value(m2.graph, "B"), np.array([1, 2], np.float32))
    assert onnx_io.constant_value(m2.graph, "x") is None
    assert onnx_io.constant_value(m2.graph, "y") is None


@pytest.mark.parametrize("kwargs,expected", [
    ({"value_float": 1.5}, np.float32(1.5)),
    ({"value_floats": [1.0, 2.0]}, np.array([1.0, 2.0], np.float32)),
    ({"value_int": 3}, np.int64(3)),
    ({"value_ints": [3, 4]}, np.array([3, 4], np.int64)),
])
def test_constant_value_scalar_forms(kwargs, expected):
    node = helper.make_node("Constant", [], ["c"], **kwargs)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
    val = onnx_io.constant_value(graph, "c")
    np.testing.assert_array_equal(val, expected)
    assert val.dtype == np.asarray(expected).dtype


def test_tensor_shapes(conv_model):
    m = conv_model((2, 3, 9, 7), np.ones((5, 3, 3, 3)), strides=(2, 2))
    shapes = onnx_io.tensor_shapes(m)
    assert shapes["x"] == (2, 3, 9, 7)
    assert shapes["W"] == (5, 3, 3, 3)
    assert shapes["y"] == (2, 5, 4, 3)
