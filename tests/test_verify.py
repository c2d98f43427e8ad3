"""trt_sparse.verify: split execution (onnxruntime + reference), error metric, tampering detection, CLI."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse.cli import main
from trt_sparse.convert import ConvertOptions, convert_model
from trt_sparse.errors import TrtSparseError
from trt_sparse.onnx_io import save_model_atomic
from trt_sparse.policy import ThresholdPolicy
from trt_sparse.verify import (SplitRunner, compare, make_inputs, parse_input_shapes, run_reference,
                               verify_models)

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")


def _w(shape, seed, sparsity=0.85):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    w.reshape(-1)[rng.permutation(w.size)[:int(sparsity * w.size)]] = 0
    return numpy_helper.from_array(w, "w{}".format(seed))


def residual_model():
    """Two parallel sparse branches, a residual Add, a sparse conv feeding a graph output directly, Concat."""
    inits = [_w((6, 4, 3, 3), 0), _w((6, 4, 1, 1), 1), _w((6, 6, 3, 3), 2), _w((3, 6, 1, 1), 3)]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], name="a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"], name="ar"),
        helper.make_node("Conv", ["x", "w1"], ["b"], name="b"),
        helper.make_node("Add", ["ar", "b"], ["s"], name="add"),
        helper.make_node("Conv", ["s", "w2"], ["c"], name="c", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Conv", ["c", "w3"], ["d"], name="d"),
        helper.make_node("MaxPool", ["s"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["c", "p"], ["cat"], name="cat", axis=1),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 10, 10])],
                          [helper.make_tensor_value_info("d", TensorProto.FLOAT, ["N", 3, 5, 5]),
                           helper.make_tensor_value_info("cat", TensorProto.FLOAT, ["N", 12, 5, 5])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def converted(model):
    return convert_model(model, ConvertOptions(policy=ThresholdPolicy(0.0))).model


def test_split_runner_matches_onnxruntime_on_branches_and_outputs():
    m = residual_model()
    s = converted(m)
    assert sum(n.op_type == "SparseConv2d" for n in s.graph.node) == 4
    runner = SplitRunner(s)
    assert len(runner.levels) >= 3  # dense stages separated by sparse nodes
    feeds = make_inputs(m, batch=3, seed=5)
    ref = run_reference(m, feeds)
    got = runner.run(feeds)
    assert list(got) == ["d", "cat"]
    for k in ref:
        assert got[k].dtype == np.float32 and got[k].shape == ref[k].shape
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-5)


def test_tampered_weights_are_detected(tmp_path, capsys):
    m = residual_model()
    s = converted(m)
    node = [n for n in s.graph.node if n.name == "c"][0]
    attr = [a for a in node.attribute if a.name == "values"][0]
    vals = numpy_helper.to_array(attr.t).copy()
    vals[len(vals) // 2] += 0.05
    attr.t.CopyFrom(numpy_helper.from_array(vals, attr.t.name))
    res = verify_models(m, s)
    assert not res.passed and res.max_rel > 1e-4
    save_model_atomic(m, str(tmp_path / "o.onnx"))
    save_model_atomic(s, str(tmp_path / "s.onnx"))
    rc = main(["verify", str(tmp_path / "o.onnx"), str(tmp_path / "s.onnx")])
    out = capsys.readouterr().out
    assert rc == 1 and "FAILED" in out


def test_tampered_activation_is_detected():
    m = residual_model()
    s = converted(m)
    node = [n for n in s.graph.node if n.name == "a"][0]
    [a for a in node.attribute if a.name == "activation"][0].i = 0  # drop the fused Relu
    assert not verify_models(m, s).passed


def test_corrupt_node_is_a_one_line_error_naming_node_and_field(tmp_path, capsys):
    m = residual_model()
    s = converted(m)
    node = [n for n in s.graph.node if n.name == "b"][0]
    keep = [a for a in node.attribute if a.name != "row_offsets"]
    del node.attribute[:]
    node.attribute.extend(keep)
    with pytest.raises(TrtSparseError, match="SparseConv2d b.*row_offsets"):
        verify_models(m, s)
    save_model_atomic(m, str(tmp_path / "o.onnx"))
    save_model_atomic(s, str(tmp_path / "s.onnx"))
    rc = main(["verify", str(tmp_path / "o.onnx"), str(tmp_path / "s.onnx")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "row_offsets" in err


def test_dynamic_spatial_dims_need_input_shape():
    m = residual_model()
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    with pytest.raises(TrtSparseError, match="--input-shape x:"):
        make_inputs(m)
    feeds = make_inputs(m, parse_input_shapes(["x:2x4x10x10"]))
    assert feeds["x"].shape == (2, 4, 10, 10)
    a = make_inputs(m, {"x": (1, 4, 10, 10)}, seed=1)["x"]
    b = make_inputs(m, {"x": (1, 4, 10, 10)}, seed=1)["x"]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("spec", ["x", "x:", "x:0x3", ":1x2", "x:1xa"])
def test_parse_input_shapes_rejects(spec):
    with pytest.raises(TrtSparseError):
        parse_input_shapes([spec])


def test_compare_metric():
    ref = {"y": np.array([[10.0, -2.0, 0.0]])}
    ok = compare(ref, {"y": np.array([[10.0005, -2.0, 0.0]])}, atol=0.0, rtol=1e-4)[0]
    assert ok.passed and ok.max_abs == pytest.approx(5e-4) and ok.rel == pytest.approx(5e-5)
    bad = compare(ref, {"y": np.array([[10.0, -2.0, 0.01]])}, atol=0.0, rtol=1e-4)[0]
    assert not bad.passed
    nan = compare({"y": np.array([1.0, np.nan])}, {"y": np.array([1.0, 1.0])}, 1.0, 1.0)[0]
    assert not nan.passed
    both_nan = compare({"y": np.array([1.0, np.nan])}, {"y": np.array([1.0, np.nan])}, 0.0, 0.0)[0]
    assert both_nan.passed
    with pytest.raises(TrtSparseError, match="shape"):
        compare(ref, {"y": np.zeros((1, 2))}, 0, 0)
    with pytest.raises(TrtSparseError, match="different outputs"):
        compare(ref, {"z": ref["y"]}, 0, 0)


def test_verify_rejects_models_with_different_outputs(tmp_path, capsys):
    m = residual_model()
    other = residual_model()
    other.graph.output[0].name = "zz"
    other.graph.node[5].output[0] = "zz"
    save_model_atomic(m, str(tmp_path / "a.onnx"))
    save_model_atomic(other, str(tmp_path / "b.onnx"))
    rc = main(["verify", str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")])
    assert rc == 2 and "different outputs" in capsys.readouterr().err


def test_fp16_model_runs_split():
    """A float16 model: the plugin node takes fp16 activations; the reference output is cast back to fp16."""
    w = _w((4, 4, 3, 3), 7)
    w16 = numpy_helper.from_array(numpy_helper.to_array(w).astype(np.float16), "w7")
    nodes = [helper.make_node("Conv", ["x", "w7"], ["y"], name="c", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["y"], ["z"], name="r")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT16, [1, 4, 6, 6])], initializer=[w16])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    try:
        run_reference(m, make_inputs(m))
    except TrtSparseError as exc:
        pytest.skip("onnxruntime has no fp16 Conv on this CPU: {}".format(exc))
    res = convert_model(m, ConvertOptions(policy=ThresholdPolicy(0.0)))
    assert res.layers[0].dtype == "fp16" and res.layers[0].decision == "sparse"
    v = verify_models(m, res.model, rtol=2e-3)
    assert v.passed, v.summary()
    assert run_reference(res.model, make_inputs(m))["z"].dtype == np.float16


def test_unsorted_graph_runs():
    m = residual_model()
    s = converted(m)
    nodes = list(s.graph.node)
    del s.graph.node[:]
    s.graph.node.extend(reversed(nodes))
    assert verify_models(m, s).passed
    s.graph.node[0].input[0] = "nowhere"
    with pytest.raises(TrtSparseError, match="nowhere"):
        verify_models(m, s)


def test_large_original_is_loaded_from_its_path(tmp_path, monkeypatch):
    """Over 2 GB a model cannot be serialized: onnxruntime then reads the original from its file."""
    import trt_sparse.verify as v

    m = residual_model()
    path = str(tmp_path / "o.onnx")
    save_model_atomic(m, path)
    feeds = make_inputs(m)
    expected = run_reference(m, feeds)
    monkeypatch.setattr(v, "_PROTO_LIMIT", 16)
    monkeypatch.setattr(type(m), "SerializeToString", lambda self: (_ for _ in ()).throw(AssertionError("serialized")))
    got = run_reference(m, feeds, path=path)
    for k in expected:
        np.testing.assert_array_equal(got[k], expected[k])
