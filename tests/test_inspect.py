"""``trt-sparse inspect``: the per-Conv report, its JSON form, and one-line errors with exit code 2."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse.cli import main
from trt_sparse.commands import inspect_cmd


def _sparse(rng, shape, sparsity):
    w = rng.standard_normal(shape).astype(np.float32)
    w[rng.random(shape) < sparsity] = 0.0
    return w


@pytest.fixture(scope="module")
def weights():
    rng = np.random.default_rng(42)
    return {
        "WA": _sparse(rng, (4, 3, 3, 3), 0.8),
        "WB": _sparse(rng, (4, 4, 5, 5), 0.5),
        "WC": _sparse(rng, (6, 2, 1, 1), 0.0),
    }


@pytest.fixture(scope="module")
def mixed_model(weights):
    """x -> convA (3x3, pads 1, bias) -> Relu -> convB (5x5, stride 2, SAME_UPPER, Constant weight)
    -> convC (1x1, group 2) -> convD (weight is a graph input)."""
    w = weights
    nodes = [
        helper.make_node("Conv", ["x", "WA", "BA"], ["a"], name="convA", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["a"], ["ar"], name="reluA"),
        helper.make_node("Constant", [], ["WB"], name="constWB", value=numpy_helper.from_array(w["WB"], "WB")),
        helper.make_node("Conv", ["ar", "WB"], ["b"], name="convB", strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("Conv", ["b", "WC"], ["c"], name="convC", group=2),
        helper.make_node("Conv", ["c", "WD"], ["y"], name="", pads=[0, 0, 0, 0]),
    ]
    graph = helper.make_graph(
        nodes, "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 15, 15]),
         helper.make_tensor_value_info("WD", TensorProto.FLOAT, [2, 6, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w["WA"], "WA"), numpy_helper.from_array(np.ones(4, np.float32), "BA"),
                     numpy_helper.from_array(w["WC"], "WC")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def mixed_path(tmp_path, mixed_model):
    path = tmp_path / "mixed.onnx"
    onnx.save_model(mixed_model, str(path))
    return str(path)


def _expect_bytes(w):
    k = w.shape[0]
    nnz = int(np.count_nonzero(w))
    nnz16 = int(np.count_nonzero(w.astype(np.float16)))
    return 4 * (k + 1) + 8 * nnz, 4 * (k + 1) + 4 * nnz16


def test_report_values(mixed_model, weights):
    rep = inspect_cmd.inspect_model(mixed_model)
    layers = {l["name"]: l for l in rep["layers"]}
    assert list(layers) == ["convA", "convB", "convC", "Conv (output y)"]
    for name, wname in (("convA", "WA"), ("convB", "WB"), ("convC", "WC")):
        w = weights[wname]
        l = layers[name]
        assert l["weight_shape"] == list(w.shape)
        assert l["nnz"] == int(np.count_nonzero(w))
        assert l["sparsity"] == pytest.approx(1 - np.count_nonzero(w) / w.size)
        assert l["dense_bytes"] == 4 * w.size
        assert (l["exact_bytes"], l["packed32_bytes"]) == _expect_bytes(w)
    assert layers["convA"]["pads"] == [1, 1, 1, 1] and layers["convA"]["strides"] == [1, 1]
    # SAME_UPPER on 15x15, 5x5, stride 2: out 8, total pad 4 -> 2 each side
    assert layers["convB"]["pads"] == [2, 2, 2, 2] and layers["convB"]["strides"] == [2, 2]
    assert layers["convC"]["group"] == 2 and any("group 2" in n for n in layers["convC"]["notes"])
    assert layers["Conv (output y)"]["nnz"] is None and "not a constant" in layers["Conv (output y)"]["notes"][0]
    t = rep["totals"]
    all_w = [weights[k] for k in ("WA", "WB", "WC")]
    assert t["conv_layers"] == 4 and t["constant_weight_layers"] == 3
    assert t["nnz"] == sum(int(np.count_nonzero(w)) for w in all_w)
    assert t["params"] == sum(w.size for w in all_w)
    assert t["exact_bytes"] == sum(_expect_bytes(w)[0] for w in all_w)
    assert t["packed32_bytes"] == sum(_expect_bytes(w)[1] for w in all_w)


def test_cli_table(mixed_path, weights, capsys):
    assert main(["inspect", mixed_path]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(l.startswith("convA") and "4x3x3x3" in l and str(np.count_nonzero(weights["WA"])) in l for l in lines)
    assert any(l.startswith("convB") and "2,2,2,2" in l for l in lines)
    assert any(l.startswith("TOTAL (4 layers)") for l in lines)
    assert "not a constant" in out


def test_layers_json_for_bench_kernels(mixed_path, weights, tmp_path, capsys):
    from trt_sparse.commands import bench_kernels_cmd as bk

    out = tmp_path / "layers.json"
    assert main(["inspect", mixed_path, "--layers-json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "2 layers, 2 skipped" in err and "convC" in err
    doc = json.loads(out.read_text())
    by = {l["name"]: l for l in doc["layers"]}
    assert set(by) == {"convA", "convB"}
    sp_a = 1 - np.count_nonzero(weights["WA"]) / weights["WA"].size
    assert by["convA"] == {"name": "convA", "C": 3, "K": 4, "H": 15, "W": 15, "kernel": 3, "stride": 1, "pad": 1,
                           "dilation": 1, "sparsity": round(sp_a, 4)}
    # SAME_UPPER 5x5 stride 2 on 15x15: symmetric pads of 2
    assert (by["convB"]["kernel"], by["convB"]["stride"], by["convB"]["pad"], by["convB"]["H"]) == (5, 2, 2, 15)
    reasons = {s["name"]: s["reason"] for s in doc["skipped"]}
    assert "group 2" in reasons["convC"] and "not a constant" in reasons["Conv (output y)"]
    # bench-kernels reads it back with each layer's own sparsity
    layers = bk.load_layers(str(out))
    assert [bk.layer_sparsities(l, None) for l in layers] == [[round(sp_a, 4)], [by["convB"]["sparsity"]]]
    # never overwrites the model
    assert main(["inspect", mixed_path, "--layers-json", mixed_path]) == 2
    assert "must not overwrite the model" in capsys.readouterr().err


def test_layers_json_needs_static_hw(tmp_path, weights, capsys):
    w = weights["WA"]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["y"], name="c", pads=[1, 1, 1, 1])], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "dyn.onnx"
    onnx.save_model(model, str(path))
    out = tmp_path / "layers.json"
    assert main(["inspect", str(path), "--layers-json", str(out)]) == 2  # no layer with a known H/W
    assert "input H/W unknown" in capsys.readouterr().err and not out.exists()
    assert main(["inspect", str(path), "--layers-json", str(out), "--input-shape", "x:1x3x20x24"]) == 0
    lay = json.loads(out.read_text())["layers"][0]
    assert (lay["H"], lay["W"], lay["C"], lay["K"]) == (20, 24, 3, 4)


def test_cli_json(mixed_path, mixed_model, capsys):
    assert main(["inspect", mixed_path, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["model"] == mixed_path
    expect = inspect_cmd.inspect_model(mixed_model)
    assert rep["layers"] == json.loads(json.dumps(expect["layers"]))
    assert rep["totals"] == expect["totals"]


def test_packed32_unavailable_layer(tmp_path, conv_model, capsys):
    w = np.zeros((2, 4097, 4, 4), np.float32)  # C*R*S = 65552 > 65536
    w[0, 0, 0, 0] = 1.0
    path = tmp_path / "wide.onnx"
    onnx.save_model(conv_model((1, 4097, 4, 4), w), str(path))
    assert main(["inspect", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    layer = rep["layers"][0]
    assert layer["packed32_bytes"] is None and any("packed32" in n for n in layer["notes"])
    assert layer["exact_bytes"] == 4 * 3 + 8
    assert rep["totals"]["packed32_unavailable"] == 1


def test_conv1d_is_listed_with_reason(tmp_path, capsys):
    w = np.ones((4, 3, 3), np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["y"], name="conv1d")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "W")])
    path = tmp_path / "c1d.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert main(["inspect", str(path)]) == 0
    assert "only 2-D" in capsys.readouterr().out


def test_external_data_model(tmp_path, mixed_model, capsys):
    path = tmp_path / "ext.onnx"
    copy = onnx.ModelProto()
    copy.CopyFrom(mixed_model)  # onnx.save_model moves the tensor bytes out of the model it saves
    onnx.save_model(copy, str(path), save_as_external_data=True, location="ext.onnx.data", size_threshold=0)
    assert main(["inspect", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["totals"] == inspect_cmd.inspect_model(mixed_model)["totals"]


# -- bad input: one line on stderr, exit code 2, no traceback ------------------------------------
def _no_conv_model(path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])])
    onnx.save_model(helper.make_model(graph), str(path))


def _bad_inputs(tmp_path):
    text = tmp_path / "notes.onnx"
    text.write_text("this is not an ONNX model\n")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    noconv = tmp_path / "noconv.onnx"
    _no_conv_model(noconv)
    return [
        (str(tmp_path / "missing.onnx"), "no such file"),
        (str(text), "not an ONNX model"),
        (str(empty), "not an ONNX model"),
        (str(tmp_path), "is a directory"),
        (str(noconv), "no Conv nodes"),
    ]


def test_bad_inputs_in_process(tmp_path, capsys):
    for path, pattern in _bad_inputs(tmp_path):
        assert main(["inspect", path]) == 2, path
        captured = capsys.readouterr()
        assert captured.out == ""
        err = captured.err.strip()
        assert err.startswith("trt-sparse inspect: error:") and pattern in err, err
        assert len(err.splitlines()) == 1


def _entry_point():
    exe = shutil.which("trt-sparse")
    if exe is None:
        candidate = os.path.join(os.path.dirname(sys.executable), "trt-sparse")
        exe = candidate if os.path.exists(candidate) else None
    return exe


def test_bad_inputs_entry_point(tmp_path):
    exe = _entry_point()
    if exe is None:
        pytest.skip("the trt-sparse entry point is not installed (pip install -e '.[test]')")
    cases = dict((pattern, path) for path, pattern in reversed(_bad_inputs(tmp_path)))
    # one of each kind (each start imports onnx, ~1 s); the in-process test covers every case
    for pattern in ("no such file", "not an ONNX model", "no Conv nodes"):
        path = cases[pattern]
        proc = subprocess.run([exe, "inspect", path], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (path, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and pattern in proc.stderr


def test_entry_point_table(mixed_path):
    exe = _entry_point()
    if exe is None:
        pytest.skip("the trt-sparse entry point is not installed (pip install -e '.[test]')")
    proc = subprocess.run([exe, "inspect", mixed_path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "convA" in proc.stdout and "TOTAL (4 layers)" in proc.stdout


# -- converted models: SparseConv2d nodes are read back from their attributes ------------------------
def _sparse_node(name, w, mode, out, inp="x", **geometry):
    from trt_sparse import format as F

    sw = F.pack(w, mode)
    tensors = F.to_arrays(sw)
    attrs = dict(plugin_version="1", plugin_namespace="", format_version=1, weight_shape=list(w.shape),
                 strides=geometry.get("strides", [1, 1]), pads=geometry.get("pads", [0, 0, 0, 0]),
                 dilations=[1, 1], activation=0, clip_min=0.0, clip_max=6.0,
                 weight_format=F.MODES.index(mode))
    for key, arr in tensors.items():
        attrs[key] = numpy_helper.from_array(arr, key)
    return helper.make_node("SparseConv2d", [inp], [out], name=name, domain="trt_sparse", **attrs)


def test_converted_model_lists_sparse_conv2d(tmp_path, weights, capsys):
    wa, wb = weights["WA"], weights["WB"]
    nodes = [_sparse_node("spA", wa, "exact", "a", pads=[1, 1, 1, 1]),
             _sparse_node("spB", wb, "packed32", "y", inp="a", strides=[2, 2])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_sparse", 1)])
    path = tmp_path / "sparse.onnx"
    onnx.save_model(model, str(path))
    assert main(["inspect", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    a, b = rep["layers"]
    assert a["op"] == b["op"] == "SparseConv2d"
    assert a["nnz"] == np.count_nonzero(wa) and a["weight_shape"] == list(wa.shape) and a["pads"] == [1, 1, 1, 1]
    assert (a["exact_bytes"], a["packed32_bytes"]) == _expect_bytes(wa)
    assert b["nnz"] == np.count_nonzero(wb.astype(np.float16)) and b["strides"] == [2, 2]
    assert "SparseConv2d (packed32)" in b["notes"]
    assert rep["totals"]["sparse_conv2d_layers"] == 2
    # the same numbers as the dense Conv model they came from
    assert a["sparsity"] == pytest.approx(1 - np.count_nonzero(wa) / wa.size)
    assert main(["inspect", str(path)]) == 0
    assert "0 Conv, 2 SparseConv2d layers" in capsys.readouterr().out


def test_corrupt_sparse_conv2d_is_reported_not_raised(tmp_path, weights, capsys):
    node = _sparse_node("spA", weights["WA"], "exact", "y")
    for attr in node.attribute:
        if attr.name == "indices":
            arr = numpy_helper.to_array(attr.t).copy()
            arr[0] = 10 ** 6  # out of range
            attr.t.CopyFrom(numpy_helper.from_array(arr, "indices"))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "corrupt.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "indices out of range" in out


def test_closed_pipe_is_not_an_error(mixed_path):
    exe = _entry_point()
    if exe is None:
        pytest.skip("the trt-sparse entry point is not installed (pip install -e '.[test]')")
    proc = subprocess.Popen([exe, "inspect", mixed_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before the table is written (like `| head -0`)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err
