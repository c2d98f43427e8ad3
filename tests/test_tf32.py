"""Opt-in TF32 math through the converter (CPU): ``convert --allow-tf32`` / ``ConvertOptions(allow_tf32=...)``
writes ``allow_tf32 = 1`` on the SparseConv2d nodes of fp32 layers and nothing by default; ``inspect`` shows it;
``verify`` keeps its exact tolerances; ``bench`` picks the fp32 TF32 tolerance; bad values are refused naming
the node (the plugin side is tested in tests/test_plugin.py)."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse import engine
from trt_sparse.cli import main
from trt_sparse.commands import bench_cmd, inspect_cmd
from trt_sparse.convert import ConvertOptions, convert_model
from trt_sparse.errors import FormatError, TrtSparseError
from trt_sparse.onnx_io import allow_tf32_value, save_model_atomic, tf32_layers
from trt_sparse.policy import ThresholdPolicy

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")


def _pruned(shape, seed, dtype=np.float32, sparsity=0.9):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    w.reshape(-1)[rng.permutation(w.size)[:int(sparsity * w.size)]] = 0
    return w.astype(dtype)


def two_conv_model(dtype=np.float32):
    """x -> Conv 3x3 (8->8) -> Relu -> Conv 1x1 (8->8, bias) -> y, 90% zeros, dynamic batch."""
    et = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    inits = [numpy_helper.from_array(_pruned((8, 8, 3, 3), 0, dtype), "w0"),
             numpy_helper.from_array(_pruned((8, 8, 1, 1), 1, dtype), "w1"),
             numpy_helper.from_array(np.linspace(-1, 1, 8).astype(dtype), "b1")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["h"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["r"], name="relu0"),
             helper.make_node("Conv", ["r", "w1", "b1"], ["y"], name="conv1")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", et, ["N", 8, 10, 10])],
                          [helper.make_tensor_value_info("y", et, ["N", 8, 10, 10])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _sparse_nodes(model):
    return [n for n in model.graph.node if n.op_type == "SparseConv2d"]


def _without_allow_tf32(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for n in _sparse_nodes(m):
        keep = [a for a in n.attribute if a.name != "allow_tf32"]
        del n.attribute[:]
        n.attribute.extend(keep)
    return m


def _convert(model, **kw):
    return convert_model(model, ConvertOptions(policy=ThresholdPolicy(0.5), **kw))


def _set_attr(model, node_name, attr):
    for n in model.graph.node:
        if n.name == node_name:
            keep = [a for a in n.attribute if a.name != attr.name]
            del n.attribute[:]
            n.attribute.extend(keep + [attr])
    return model


# ------------------------------------------------------------------ converter
def test_default_writes_no_attribute_and_same_bytes():
    model = two_conv_model()
    default = _convert(model)
    explicit_off = _convert(model, allow_tf32=False)
    assert len(_sparse_nodes(default.model)) == 2
    assert not any(a.name == "allow_tf32" for n in _sparse_nodes(default.model) for a in n.attribute)
    assert default.model.SerializeToString() == explicit_off.model.SerializeToString()
    assert all(layer.allow_tf32 is False for layer in default.converted)
    assert default.totals()["tf32_layers"] == 0


def test_allow_tf32_writes_int_attribute_on_fp32_layers_only_difference():
    model = two_conv_model()
    on = _convert(model, allow_tf32=True)
    nodes = _sparse_nodes(on.model)
    assert len(nodes) == 2
    for n in nodes:
        attrs = [a for a in n.attribute if a.name == "allow_tf32"]
        assert len(attrs) == 1 and attrs[0].type == onnx.AttributeProto.INT and attrs[0].i == 1
        assert allow_tf32_value(n) == 1
    assert tf32_layers(on.model) == ["conv0", "conv1"]
    # the attribute is the only difference to the default output
    assert _without_allow_tf32(on.model).SerializeToString() == _convert(model).model.SerializeToString()
    assert [layer.allow_tf32 for layer in on.converted] == [True, True]
    assert on.totals()["tf32_layers"] == 2
    assert on.options.to_dict()["allow_tf32"] is True
    onnx.checker.check_model(on.model, full_check=True)


def test_allow_tf32_ignored_for_fp16_layers():
    res = _convert(two_conv_model(np.float16), allow_tf32=True)
    assert len(res.converted) == 2
    assert tf32_layers(res.model) == []
    assert not any(a.name == "allow_tf32" for n in _sparse_nodes(res.model) for a in n.attribute)
    assert res.totals()["tf32_layers"] == 0


def test_cli_convert_allow_tf32(tmp_path, capsys):
    src = str(tmp_path / "m.onnx")
    save_model_atomic(two_conv_model(), src)
    out_default, out_tf32 = str(tmp_path / "d.onnx"), str(tmp_path / "t.onnx")
    report = str(tmp_path / "r.json")
    assert main(["convert", src, "-o", out_default, "--min-sparsity", "0.5"]) == 0
    default_text = capsys.readouterr().out
    assert main(["convert", src, "-o", out_tf32, "--min-sparsity", "0.5", "--allow-tf32", "--report", report]) == 0
    text = capsys.readouterr().out
    assert "TF32" not in default_text
    assert "TF32 allowed on 2 of 2 converted layers" in text and "exact+tf32" in text
    assert tf32_layers(onnx.load(out_tf32)) == ["conv0", "conv1"]
    assert tf32_layers(onnx.load(out_default)) == []
    with open(report) as f:
        doc = json.load(f)
    assert doc["options"]["allow_tf32"] is True and doc["totals"]["tf32_layers"] == 2
    assert all(layer["allow_tf32"] for layer in doc["layers"])
    # verification ran at the exact tolerance (TF32 is not emulated: it checks the rewrite in float64)
    assert doc["verification"]["passed"] and doc["verification"]["rtol"] == 1e-4


# ------------------------------------------------------------------ attribute validation
@pytest.mark.parametrize("attr,needle", [
    (helper.make_attribute("allow_tf32", 2), "allow_tf32 = 2 is not 0 (exact fp32) or 1 (TF32 allowed)"),
    (helper.make_attribute("allow_tf32", -1), "allow_tf32 = -1 is not 0"),
    (helper.make_attribute("allow_tf32", 1.0), "must be an INT (0 or 1), got FLOAT"),
    (helper.make_attribute("allow_tf32", [1]), "must be an INT (0 or 1), got INTS"),
    (helper.make_attribute("allow_tf32", "1"), "must be an INT (0 or 1), got STRING"),
])
def test_invalid_allow_tf32_rejected_naming_the_node(attr, needle):
    model = _set_attr(_convert(two_conv_model()).model, "conv1", attr)
    node = _sparse_nodes(model)[1]
    with pytest.raises(FormatError) as info:
        allow_tf32_value(node)
    assert "SparseConv2d conv1: attribute " in str(info.value) and needle in str(info.value)
    with pytest.raises(TrtSparseError, match="SparseConv2d conv1: attribute allow_tf32"):
        tf32_layers(model)
    with pytest.raises(TrtSparseError, match="SparseConv2d conv1: attribute allow_tf32"):
        engine._count_tf32_nodes(model)


def test_allow_tf32_zero_and_absent():
    model = _convert(two_conv_model()).model
    assert [allow_tf32_value(n) for n in _sparse_nodes(model)] == [0, 0]
    _set_attr(model, "conv0", helper.make_attribute("allow_tf32", 0))
    assert [allow_tf32_value(n) for n in _sparse_nodes(model)] == [0, 0] and tf32_layers(model) == []


# ------------------------------------------------------------------ inspect
def test_inspect_shows_tf32_layers(tmp_path, capsys):
    model = _convert(two_conv_model(), allow_tf32=True).model
    _set_attr(model, "conv1", helper.make_attribute("allow_tf32", 0))
    report = inspect_cmd.inspect_model(model)
    rows = {r["name"]: r for r in report["layers"]}
    assert rows["conv0"]["allow_tf32"] is True and rows["conv1"]["allow_tf32"] is False
    assert "SparseConv2d (exact, TF32 allowed)" in rows["conv0"]["notes"]
    assert "SparseConv2d (exact)" in rows["conv1"]["notes"]
    assert report["totals"]["tf32_layers"] == 1
    path = str(tmp_path / "s.onnx")
    save_model_atomic(model, path)
    assert main(["inspect", path]) == 0
    out = capsys.readouterr().out
    assert "2 SparseConv2d layers (1 with TF32 allowed: allow_tf32=1)" in out
    assert "TF32 allowed" in [l for l in out.splitlines() if l.startswith("conv0")][0]
    assert main(["inspect", path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [l["allow_tf32"] for l in doc["layers"]] == [True, False] and doc["totals"]["tf32_layers"] == 1
    # a dense model: no TF32 anywhere, title unchanged
    dense = str(tmp_path / "d.onnx")
    save_model_atomic(two_conv_model(), dense)
    assert main(["inspect", dense]) == 0
    assert "TF32" not in capsys.readouterr().out


def test_inspect_notes_invalid_allow_tf32_naming_the_node():
    model = _set_attr(_convert(two_conv_model()).model, "conv0", helper.make_attribute("allow_tf32", 7))
    row = inspect_cmd.inspect_model(model)["layers"][0]
    assert row["allow_tf32"] is None
    assert any("SparseConv2d conv0: attribute allow_tf32 = 7 is not 0" in n for n in row["notes"])


# ------------------------------------------------------------------ verify
def test_verify_keeps_exact_tolerance_with_tf32_nodes(tmp_path, capsys):
    orig = str(tmp_path / "m.onnx")
    sparse = str(tmp_path / "s.onnx")
    model = two_conv_model()
    save_model_atomic(model, orig)
    save_model_atomic(_convert(model, allow_tf32=True).model, sparse)
    assert main(["verify", orig, sparse]) == 0
    out, err = capsys.readouterr()
    assert "rtol 0.0001" in out and "verification passed" in out
    assert "2 SparseConv2d node(s) allow TF32" in err and "exact tolerances" in err


def test_verify_rejects_invalid_allow_tf32_naming_the_node(tmp_path, capsys):
    orig = str(tmp_path / "m.onnx")
    sparse = str(tmp_path / "s.onnx")
    model = two_conv_model()
    save_model_atomic(model, orig)
    save_model_atomic(_set_attr(_convert(model).model, "conv1", helper.make_attribute("allow_tf32", 2)), sparse)
    assert main(["verify", orig, sparse]) == 2
    err = capsys.readouterr().err
    assert "SparseConv2d conv1: attribute allow_tf32 = 2 is not 0" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ bench tolerance
def test_bench_default_rtol_selection():
    assert bench_cmd.default_rtol("fp32", 0) == (1e-3, "fp32")
    assert bench_cmd.default_rtol("fp32", None) == (1e-3, "fp32")
    rtol, why = bench_cmd.default_rtol("fp32", 3)
    assert rtol == bench_cmd.DEFAULT_RTOL_TF32 == 3e-3 and "TF32 allowed on 3 sparse layer(s)" in why
    assert bench_cmd.default_rtol("fp16", 3) == (2e-2, "fp16")  # fp16 plans ignore allow_tf32


def test_bench_tf32_node_count_from_onnx_and_engine_sidecar(tmp_path):
    model = two_conv_model()
    on, off = str(tmp_path / "on.onnx"), str(tmp_path / "off.onnx")
    save_model_atomic(_convert(model, allow_tf32=True).model, on)
    save_model_atomic(_convert(model).model, off)
    assert bench_cmd.tf32_node_count(on) == 2 and bench_cmd.tf32_node_count(off) == 0
    eng = str(tmp_path / "s.engine")
    with open(eng, "wb") as f:
        f.write(b"ENGINE")
    assert bench_cmd.tf32_node_count(eng) is None  # no sidecar: the default fp32 tolerance
    engine.write_json_atomic(engine.sidecar_path(eng), {"onnx": {"sparse_conv_nodes": 2, "allow_tf32_nodes": 2}})
    assert bench_cmd.tf32_node_count(eng) == 2
    bad = str(tmp_path / "bad.onnx")
    save_model_atomic(_set_attr(_convert(model).model, "conv0", helper.make_attribute("allow_tf32", 1.0)), bad)
    with pytest.raises(TrtSparseError, match="SparseConv2d conv0: attribute allow_tf32 must be an INT"):
        bench_cmd.tf32_node_count(bad)


def test_build_engine_refuses_invalid_allow_tf32_before_tensorrt(tmp_path):
    path = str(tmp_path / "bad.onnx")
    save_model_atomic(_set_attr(_convert(two_conv_model()).model, "conv1", helper.make_attribute("allow_tf32", 3)),
                      path)
    with pytest.raises(TrtSparseError, match="SparseConv2d conv1: attribute allow_tf32 = 3"):
        engine.build_engine(path)
