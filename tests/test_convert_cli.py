"""``trt-sparse convert`` end to end through the CLI: outputs, reports, and every bad input (exit 2, one line)."""
import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse.cli import main
from trt_sparse.onnx_io import save_model_atomic

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")


def _pruned(shape, seed=0, sparsity=0.9):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    w.reshape(-1)[rng.permutation(w.size)[:int(sparsity * w.size)]] = 0
    return w


def small_model(conv_attrs=None, weight_input=False, extra_nodes=(), opset=17, ch=8):
    """x -> Conv(3x3, ch->ch) -> Relu -> Conv(1x1) -> y; weights 90% zeros."""
    inits = [numpy_helper.from_array(_pruned((ch, ch, 3, 3)), "w0"),
             numpy_helper.from_array(_pruned((ch, ch, 1, 1), 1), "w1"),
             numpy_helper.from_array(np.linspace(-1, 1, ch).astype(np.float32), "b1")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", ch, 10, 10])]
    w0 = "w0"
    if weight_input:
        inputs.append(helper.make_tensor_value_info("wdyn", TensorProto.FLOAT, [ch, ch, 3, 3]))
        w0 = "wdyn"
    nodes = [helper.make_node("Conv", ["x", w0], ["h"], name="conv0", pads=[1, 1, 1, 1], **(conv_attrs or {})),
             helper.make_node("Relu", ["h"], ["r"], name="relu0"),
             helper.make_node("Conv", ["r", "w1", "b1"], ["y"], name="conv1")] + list(extra_nodes)
    g = helper.make_graph(nodes, "g", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", ch, 10, 10])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def write(model, path):
    save_model_atomic(model, str(path))
    return str(path)


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err, *needles):
    assert rc == 2
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("verifying:")]
    assert len(lines) == 1, err
    assert lines[0].startswith("trt-sparse convert: error:") or lines[0].startswith("trt-sparse verify: error:"), err
    for n in needles:
        assert n in lines[0], (n, err)
    assert "Traceback" not in err


def test_convert_writes_model_and_reports(tmp_path, capsys):
    src = write(small_model(), tmp_path / "m.onnx")
    out = tmp_path / "m.sparse.onnx"
    rc, stdout, _ = run_cli(capsys, "convert", src, "-o", out, "--report", tmp_path / "r.json")
    assert rc == 0
    assert "converted 2 of 2 Conv layers" in stdout and "verification passed" in stdout
    assert "conv0" in stdout and "conv1" in stdout  # per-layer table
    model = onnx.load(str(out))
    assert [n.op_type for n in model.graph.node] == ["SparseConv2d", "SparseConv2d"]
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["totals"]["converted"] == 2 and rep["verification"]["passed"]
    assert rep["verification"]["max_rel"] < 1e-5
    assert [layer["name"] for layer in rep["layers"]] == ["conv0", "conv1"]
    assert rep["layers"][0]["fused"] == ["Relu"] and rep["layers"][0]["decision"] == "sparse"
    rc, stdout, _ = run_cli(capsys, "convert", src, "-o", tmp_path / "m2.onnx", "--report", tmp_path / "r.md", "-q")
    assert rc == 0
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("# trt-sparse convert report") and "| conv0 |" in md
    rc, stdout, _ = run_cli(capsys, "verify", src, out)
    assert rc == 0 and "verification passed" in stdout


def test_external_data(tmp_path, capsys):
    src = write(small_model(ch=64), tmp_path / "m.onnx")  # tensors > 1 KiB go to the data file
    out = tmp_path / "ext.onnx"
    rc, _, _ = run_cli(capsys, "convert", src, "-o", out, "--external-data", "--no-verify", "--min-sparsity", "0")
    assert rc == 0
    assert os.path.exists(str(out) + ".data") and os.path.getsize(str(out) + ".data") > 0
    model = onnx.load(str(out))  # loads the external data back
    node = model.graph.node[0]
    vals = [a for a in node.attribute if a.name == "values"][0]
    assert vals.t.data_location == onnx.TensorProto.EXTERNAL or vals.t.raw_data
    assert onnx.numpy_helper.to_array(vals.t).size == np.count_nonzero(_pruned((64, 64, 3, 3)))
    raw = onnx.load(str(out), load_external_data=False)
    assert any(a.t.data_location == onnx.TensorProto.EXTERNAL for a in raw.graph.node[0].attribute if a.name == "values")
    rc, stdout, _ = run_cli(capsys, "verify", src, out)
    assert rc == 0


def test_dense_model_converts_nothing_but_still_writes(tmp_path, capsys):
    m = small_model()
    for init in m.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(np.ones(numpy_helper.to_array(init).shape, np.float32), init.name))
    src = write(m, tmp_path / "dense.onnx")
    rc, stdout, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx")
    assert rc == 0 and "converted 0 of 2" in stdout and "no layer was converted" in err


# -- bad input ------------------------------------------------------------------------------------
def test_nonexistent_input(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "convert", tmp_path / "nope.onnx", "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err, "nope.onnx")
    assert not (tmp_path / "o.onnx").exists()


def test_corrupt_input(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf model\xff\xfe" * 10)
    rc, _, err = run_cli(capsys, "convert", bad, "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err, "bad.onnx")
    assert not (tmp_path / "o.onnx").exists()
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    rc, _, err = run_cli(capsys, "convert", empty, "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err)


def test_no_conv(tmp_path, capsys):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    src = write(helper.make_model(g), tmp_path / "noconv.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err, "no Conv")
    assert not (tmp_path / "o.onnx").exists()


def test_dynamic_weights(tmp_path, capsys):
    m = small_model(weight_input=True)
    # make the other conv dynamic too: feed its weight from a graph input
    m.graph.node[2].input[1] = "wdyn1"
    m.graph.input.append(helper.make_tensor_value_info("wdyn1", TensorProto.FLOAT, [8, 8, 1, 1]))
    src = write(m, tmp_path / "dyn.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err, "conv0", "not a constant")
    assert not (tmp_path / "o.onnx").exists()


def test_unsupported_attribute(tmp_path, capsys):
    src = write(small_model(conv_attrs={"foo": 3}), tmp_path / "attr.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err, "conv0", "foo")
    assert not (tmp_path / "o.onnx").exists()


def test_names_colliding_with_ours(tmp_path, capsys):
    extra = [helper.make_node("SparseConv2d", ["y"], ["z"], name="mine")]
    src = write(small_model(extra_nodes=extra), tmp_path / "coll.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx")
    assert_one_line_error(rc, err, "mine", "SparseConv2d")
    assert not (tmp_path / "o.onnx").exists()
    # converting an already converted model is the same collision
    good = write(small_model(), tmp_path / "m.onnx")
    assert run_cli(capsys, "convert", good, "-o", tmp_path / "s.onnx")[0] == 0
    rc, _, err = run_cli(capsys, "convert", tmp_path / "s.onnx", "-o", tmp_path / "s2.onnx")
    assert_one_line_error(rc, err, "already")
    assert not (tmp_path / "s2.onnx").exists()


def test_output_equals_input(tmp_path, capsys):
    src = write(small_model(), tmp_path / "m.onnx")
    before = open(src, "rb").read()
    rc, _, err = run_cli(capsys, "convert", src, "-o", src)
    assert_one_line_error(rc, err, "input")
    assert open(src, "rb").read() == before
    link = tmp_path / "alias.onnx"
    os.symlink(src, str(link))
    rc, _, err = run_cli(capsys, "convert", src, "-o", link)
    assert_one_line_error(rc, err, "input")
    assert open(src, "rb").read() == before


def test_verification_failure_writes_nothing(tmp_path, capsys):
    src = write(small_model(), tmp_path / "m.onnx")
    out = tmp_path / "o.onnx"
    rc, _, err = run_cli(capsys, "convert", src, "-o", out, "--weights", "packed32", "--rtol", "0", "--atol", "0",
                         "--report", tmp_path / "r.json")
    assert_one_line_error(rc, err, "verification failed", "not written")
    assert not out.exists() and not (tmp_path / "r.json").exists()
    assert not [p for p in os.listdir(str(tmp_path)) if p.endswith(".tmp")]


def test_bad_flags(tmp_path, capsys):
    src = write(small_model(), tmp_path / "m.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx", "--report", tmp_path / "r.txt")
    assert_one_line_error(rc, err, "--report")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx", "--policy", "measured")
    assert_one_line_error(rc, err, "--measurements")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx", "--input-shape", "x:1xbad")
    assert_one_line_error(rc, err, "--input-shape")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx", "--input-shape", "nosuch:1x8x10x10")
    assert_one_line_error(rc, err, "nosuch")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "missing" / "o.onnx")
    assert_one_line_error(rc, err, "does not exist")
    assert not os.listdir(str(tmp_path)) == []  # only the source is there
    assert sorted(os.listdir(str(tmp_path))) == ["m.onnx"]


def test_model_policy_without_cost_model(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "trt_sparse.cost_model", None)
    src = write(small_model(), tmp_path / "m.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "o.onnx", "--policy", "model")
    assert_one_line_error(rc, err, "cost model not available")
    assert not (tmp_path / "o.onnx").exists()


def test_model_margin_flag(tmp_path, capsys):
    """--model-margin reaches the model policy (written to the report); with another policy it is a one-line error
    and nothing is written."""
    src = write(small_model(), tmp_path / "m.onnx")
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "t.onnx", "--model-margin", "1.1")
    assert_one_line_error(rc, err, "only used with --policy model")
    assert not (tmp_path / "t.onnx").exists()
    rc, _, err = run_cli(capsys, "convert", src, "-o", tmp_path / "z.onnx", "--policy", "model", "--model-margin", "0")
    assert_one_line_error(rc, err, "--model-margin must be")
    assert not (tmp_path / "z.onnx").exists()
    for margin in ("1", "3.5"):
        out = tmp_path / "o{}.onnx".format(margin)
        rc, _, err = run_cli(capsys, "convert", src, "-o", out, "--policy", "model", "--model-margin", margin,
                             "--report", tmp_path / "r{}.json".format(margin))
        assert rc == 0, err
        report = json.loads((tmp_path / "r{}.json".format(margin)).read_text())
        assert report["options"]["policy"]["margin"] == float(margin)
