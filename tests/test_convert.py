"""trt_sparse.convert: candidates, fusion, the SparseConv2d node's attributes, preservation, policies."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse import format as fmt
from trt_sparse.convert import (PLUGIN_DOMAIN, PLUGIN_OP, ConvertOptions, check_output_model, convert_model)
from trt_sparse.errors import TrtSparseError
from trt_sparse.policy import DEFAULT_MODEL_MARGIN, MeasuredPolicy, ModelPolicy, ThresholdPolicy, make_policy
from trt_sparse.verify import sparse_node_params, verify_models

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")

# the attribute set of docs/FORMAT.md with the ONNX type each must have
FORMAT_ATTRS = {
    "plugin_version": onnx.AttributeProto.STRING, "plugin_namespace": onnx.AttributeProto.STRING,
    "format_version": onnx.AttributeProto.INT, "weight_shape": onnx.AttributeProto.INTS,
    "strides": onnx.AttributeProto.INTS, "pads": onnx.AttributeProto.INTS, "dilations": onnx.AttributeProto.INTS,
    "activation": onnx.AttributeProto.INT, "clip_min": onnx.AttributeProto.FLOAT,
    "clip_max": onnx.AttributeProto.FLOAT, "weight_format": onnx.AttributeProto.INT,
    "row_offsets": onnx.AttributeProto.TENSOR, "indices": onnx.AttributeProto.TENSOR,
    "values": onnx.AttributeProto.TENSOR, "packed": onnx.AttributeProto.TENSOR, "bias": onnx.AttributeProto.TENSOR,
}
TENSOR_DTYPES = {"row_offsets": TensorProto.INT32, "indices": TensorProto.INT32, "values": TensorProto.FLOAT,
                 "packed": TensorProto.INT32, "bias": TensorProto.FLOAT}


def sparse_weight(shape, sparsity=0.9, seed=0):
    """Random fp32 weight with an exact fraction of zeros."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    flat = w.reshape(-1)
    flat[rng.permutation(flat.size)[:int(round(sparsity * flat.size))]] = 0.0
    return w


class G(object):
    """Tiny graph builder for tests."""

    def __init__(self, seed=0):
        self.nodes, self.inits, self.rng = [], [], np.random.default_rng(seed)

    def init(self, name, arr, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype), name))
        return name

    def node(self, op, ins, out, name=None, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=name or out, **attrs))
        return out

    def conv(self, x, w, name, bias=None, const_weight=False, **attrs):
        ins = [x]
        if const_weight:
            self.nodes.append(helper.make_node("Constant", [], [name + ".W"], name=name + ".Wc",
                                               value=numpy_helper.from_array(w.astype(np.float32))))
            ins.append(name + ".W")
        else:
            ins.append(self.init(name + ".W", w))
        if bias is not None:
            ins.append(self.init(name + ".B", bias))
        return self.node("Conv", ins, name + ".y", name=name, **attrs)

    def bn(self, x, c, name):
        r = self.rng
        ins = [x] + [self.init(name + s, v) for s, v in (
            (".g", r.uniform(0.5, 1.5, c)), (".b", r.uniform(-0.3, 0.3, c)),
            (".m", r.uniform(-0.3, 0.3, c)), (".v", r.uniform(0.5, 1.5, c)))]
        return self.node("BatchNormalization", ins, name + ".y", name=name, epsilon=1e-3)

    def model(self, inputs, outputs, opset=17, value_info=()):
        g = helper.make_graph(self.nodes, "g", inputs, outputs, initializer=self.inits, value_info=list(value_info))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tests")
        m.ir_version = 8
        return m


def finput(name="x", shape=("N", 4, 12, 12)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def foutput(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["o0", "o1", "o2", "o3"])


def sparse_nodes(model):
    return [n for n in model.graph.node if n.op_type == PLUGIN_OP]


def convert0(model, **kw):
    """Convert with threshold 0 (every candidate) unless a policy is given."""
    kw.setdefault("policy", ThresholdPolicy(0.0))
    return convert_model(model, ConvertOptions(**kw))


def assert_verified(orig, res, rtol=1e-5, **kw):
    v = verify_models(orig, res.model, **kw)
    assert v.passed, v.summary()
    assert v.max_rel < rtol, v.summary()
    return v


# -- the node -----------------------------------------------------------------------------
@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"strides": [1, 2], "pads": [0, 2, 1, 0], "dilations": [2, 1]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER"},
    {"auto_pad": "VALID", "dilations": [2, 2]},
])
@pytest.mark.parametrize("bias", [False, True])
def test_single_conv_geometries(attrs, bias):
    w = sparse_weight((6, 4, 3, 3), 0.8)
    g = G()
    b = np.linspace(-1, 1, 6) if bias else None
    y = g.conv("x", w, "c0", bias=b, **attrs)
    m = g.model([finput()], [foutput(y)])
    res = convert0(m)
    (node,) = sparse_nodes(res.model)
    assert node.name == "c0" and node.domain == PLUGIN_DOMAIN
    assert list(node.input) == ["x"] and list(node.output) == [y]
    params = sparse_node_params(node)
    np.testing.assert_array_equal(fmt.unpack(params["weight"]), w)
    if bias:
        np.testing.assert_allclose(params["bias"], b.astype(np.float32))
    else:
        assert params["bias"] is None
    assert check_output_model(res.model) is None  # the full check passes, custom domain included
    assert_verified(m, res)


def test_attribute_set_and_types_match_format_md():
    g = G()
    y = g.conv("x", sparse_weight((5, 4, 3, 3)), "c0", bias=np.ones(5))
    res = convert0(g.model([finput()], [foutput(y)]))
    (node,) = sparse_nodes(res.model)
    got = {a.name: a.type for a in node.attribute}
    exact = set(FORMAT_ATTRS) - {"packed"}
    assert set(got) == exact
    for a in node.attribute:
        assert a.type == FORMAT_ATTRS[a.name], a.name
        if a.type == onnx.AttributeProto.TENSOR:
            assert a.t.data_type == TENSOR_DTYPES[a.name], a.name  # never INT64
    vals = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    assert vals["plugin_version"] == b"1" and vals["plugin_namespace"] == b""
    assert vals["format_version"] == fmt.FORMAT_VERSION and vals["weight_format"] == 0
    assert list(vals["weight_shape"]) == [5, 4, 3, 3]
    assert {(o.domain, o.version) for o in res.model.opset_import} == {("", 17), (PLUGIN_DOMAIN, 1)}


def test_packed32_mode_node_and_rounding_report():
    w = sparse_weight((8, 4, 3, 3), 0.7, seed=3)
    g = G()
    y = g.conv("x", w, "c0")
    m = g.model([finput()], [foutput(y)])
    res = convert0(m, weights="packed32")
    (node,) = sparse_nodes(res.model)
    names = {a.name for a in node.attribute}
    assert "packed" in names and "indices" not in names and "values" not in names
    assert [a.i for a in node.attribute if a.name == "weight_format"] == [1]
    layer = res.layers[0]
    exp_abs, exp_rel = fmt.packed32_rounding_error(w)
    assert layer.packed32_max_abs_err == pytest.approx(exp_abs) and exp_abs > 0
    assert layer.packed_bytes == 4 * 9 + 4 * layer.nnz
    np.testing.assert_array_equal(fmt.unpack(sparse_node_params(node)["weight"]),
                                  w.astype(np.float16).astype(np.float32))
    v = verify_models(m, res.model, mode="packed32")
    assert v.passed and 0 < v.max_rel < 1e-2


def test_packed32_too_large_layer_stays_dense():
    w = sparse_weight((2, 8200, 3, 3), 0.95)  # C*R*S = 73800 > 65536
    g = G()
    y = g.conv("x", w, "big")
    res = convert0(g.model([finput(shape=(1, 8200, 3, 3))], [foutput(y)]), weights="packed32")
    assert not sparse_nodes(res.model)
    assert res.layers[0].decision == "dense" and "65536" in res.layers[0].reason


def test_weight_from_constant_node_and_constant_removed():
    w = sparse_weight((6, 4, 3, 3))
    g = G()
    y = g.conv("x", w, "c0", const_weight=True, pads=[1, 1, 1, 1])
    m = g.model([finput()], [foutput(y)])
    res = convert0(m)
    assert [n.op_type for n in res.model.graph.node] == [PLUGIN_OP]
    assert_verified(m, res)


# -- fusion -------------------------------------------------------------------------------
def test_bn_fold_and_relu_fuse():
    g = G()
    h = g.node("Relu", [g.bn(g.conv("x", sparse_weight((6, 4, 3, 3)), "c0", pads=[1, 1, 1, 1]), 6, "bn0")], "r0")
    y = g.node("Relu", [g.bn(g.conv(h, sparse_weight((5, 6, 1, 1), seed=1), "c1", bias=np.ones(5)), 5, "bn1")], "out")
    m = g.model([finput()], [foutput(y)])
    res = convert0(m)
    assert [n.op_type for n in res.model.graph.node] == [PLUGIN_OP, PLUGIN_OP]
    assert res.layers[0].fused == ["BatchNormalization", "Relu"] and res.layers[0].activation == 1
    assert [list(n.output) for n in res.model.graph.node] == [["r0"], ["out"]]
    assert len(res.model.graph.initializer) == 0  # BN parameters and dense weights are gone
    assert_verified(m, res)


@pytest.mark.parametrize("opset", [17, 6])
def test_clip_fused_with_constant_bounds(opset):
    g = G()
    c = g.conv("x", sparse_weight((6, 4, 3, 3)), "c0")
    if opset >= 11:
        g.nodes.append(helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.array(-0.5, np.float32))))
        g.nodes.append(helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.array(2.0, np.float32))))
        y = g.node("Clip", [c, "lo", "hi"], "y")
    else:
        y = g.node("Clip", [c], "y", min=-0.5, max=2.0)
    m = g.model([finput()], [foutput(y)], opset=opset)
    res = convert0(m)
    assert [n.op_type for n in res.model.graph.node] == [PLUGIN_OP]
    p = sparse_node_params(res.model.graph.node[0])
    assert (p["activation"], p["clip_min"], p["clip_max"]) == (2, -0.5, 2.0)
    assert_verified(m, res)


def test_clip_with_runtime_bound_not_fused():
    g = G()
    y = g.node("Clip", [g.conv("x", sparse_weight((6, 4, 3, 3)), "c0"), "lo"], "y")
    m = g.model([finput(), helper.make_tensor_value_info("lo", TensorProto.FLOAT, [])], [foutput(y)])
    res = convert0(m)
    assert [n.op_type for n in res.model.graph.node] == [PLUGIN_OP, "Clip"]
    assert sparse_node_params(res.model.graph.node[0])["activation"] == 0


def test_no_fusion_when_conv_output_has_two_consumers_or_is_graph_output():
    g = G()
    c = g.conv("x", sparse_weight((4, 4, 3, 3)), "c0", pads=[1, 1, 1, 1])
    r = g.node("Relu", [c], "r")
    y = g.node("Add", [r, c], "y")
    c2 = g.conv("x", sparse_weight((4, 4, 1, 1), seed=2), "c1")
    r2 = g.node("Relu", [c2], "r2")
    m = g.model([finput()], [foutput(y), foutput(c2), foutput(r2)])
    res = convert0(m)
    ops = [n.op_type for n in res.model.graph.node]
    assert ops.count("Relu") == 2 and ops.count(PLUGIN_OP) == 2
    assert all(layer.fused == [] for layer in res.layers)
    assert_verified(m, res)


def test_no_fuse_option_keeps_bn_and_relu():
    g = G()
    y = g.node("Relu", [g.bn(g.conv("x", sparse_weight((6, 4, 3, 3)), "c0"), 6, "bn0")], "y")
    m = g.model([finput()], [foutput(y)])
    res = convert0(m, fuse=False)
    assert [n.op_type for n in res.model.graph.node] == [PLUGIN_OP, "BatchNormalization", "Relu"]
    assert_verified(m, res)


def test_dense_layer_keeps_its_bn_and_relu():
    g = G()
    y = g.node("Relu", [g.bn(g.conv("x", sparse_weight((6, 4, 3, 3), 0.1), "c0"), 6, "bn0")], "y")
    m = g.model([finput()], [foutput(y)])
    res = convert_model(m, ConvertOptions(policy=ThresholdPolicy(0.8)))
    assert [n.op_type for n in res.model.graph.node] == ["Conv", "BatchNormalization", "Relu"]
    assert res.layers[0].decision == "dense" and "< --min-sparsity 0.80" in res.layers[0].reason
    assert res.layers[0].fused == []


# -- what stays dense, and why ---------------------------------------------------------------
def test_grouped_dynamic_and_1d_convs_stay_dense_with_reason():
    g = G()
    a = g.conv("x", sparse_weight((4, 2, 3, 3)), "grouped", group=2, pads=[1, 1, 1, 1])
    b = g.node("Conv", ["x", "wdyn"], "dyn", name="dynamic")
    c = g.conv("x", sparse_weight((4, 4, 3, 3)), "ok", pads=[1, 1, 1, 1])
    m = g.model([finput(), helper.make_tensor_value_info("wdyn", TensorProto.FLOAT, [4, 4, 3, 3])],
                [foutput(a), foutput(b), foutput(c)])
    res = convert0(m)
    by = {layer.name: layer for layer in res.layers}
    assert by["grouped"].decision == "dense" and "group = 2" in by["grouped"].reason
    assert by["dynamic"].decision == "dense" and "not a constant" in by["dynamic"].reason
    assert by["ok"].decision == "sparse"
    assert [n.op_type for n in res.model.graph.node].count("Conv") == 2


def test_same_padding_with_dynamic_hw_and_stride_2_stays_dense():
    g = G()
    a = g.conv("x", sparse_weight((4, 4, 3, 3)), "s2", auto_pad="SAME_UPPER", strides=[2, 2])
    b = g.conv("x", sparse_weight((4, 4, 3, 3), seed=1), "s1", auto_pad="SAME_UPPER")
    m = g.model([finput(shape=("N", 4, "H", "W"))], [foutput(a), foutput(b)])
    res = convert0(m)
    by = {layer.name: layer for layer in res.layers}
    assert by["s2"].decision == "dense" and "--input-shape" in by["s2"].reason
    assert by["s1"].decision == "sparse" and tuple(by["s1"].pads) == (1, 1, 1, 1)
    res2 = convert0(m, input_shapes={"x": (1, 4, 11, 11)})
    assert all(layer.decision == "sparse" for layer in res2.layers)
    assert_verified(m, res2, input_shapes={"x": (1, 4, 11, 11)})


# -- errors -------------------------------------------------------------------------------
def test_no_conv_is_an_error():
    g = G()
    y = g.node("Relu", ["x"], "y")
    with pytest.raises(TrtSparseError, match="no Conv"):
        convert0(g.model([finput()], [foutput(y)]))


def test_only_dynamic_weights_is_an_error():
    g = G()
    y = g.node("Conv", ["x", "w"], "y", name="c_dyn")
    m = g.model([finput(), helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 4, 3, 3])], [foutput(y)])
    with pytest.raises(TrtSparseError, match="c_dyn.*not a constant"):
        convert0(m)


def test_unsupported_attribute_is_an_error_naming_node():
    g = G()
    y = g.conv("x", sparse_weight((4, 4, 3, 3)), "weird", auto_pad="FOO")
    with pytest.raises(TrtSparseError, match="weird.*auto_pad"):
        convert0(g.model([finput()], [foutput(y)]))


def test_existing_sparseconv2d_or_domain_collides():
    g = G()
    y = g.conv("x", sparse_weight((4, 4, 3, 3)), "c0")
    m = g.model([finput()], [foutput(y)])
    res = convert0(m)
    with pytest.raises(TrtSparseError, match="already"):
        convert0(res.model)
    m2 = g.model([finput()], [foutput(y)])
    m2.opset_import.append(helper.make_opsetid(PLUGIN_DOMAIN, 3))
    with pytest.raises(TrtSparseError, match="trt_sparse"):
        convert0(m2)


# -- preservation ------------------------------------------------------------------------------
def test_preserves_io_names_dims_opset_metadata_and_other_nodes():
    g = G()
    h = g.conv("x", sparse_weight((6, 4, 3, 3)), "c0", pads=[1, 1, 1, 1])
    y = g.node("Relu", [h], "features")
    g.node("GlobalAveragePool", [y], "pooled")
    m = g.model([finput(shape=("batch", 4, "h", "w"))], [
        helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 6, "h", "w"]),
        helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", 6, 1, 1])], opset=13)
    m.graph.initializer.append(numpy_helper.from_array(np.arange(3, dtype=np.float32), "unused"))
    m.doc_string = "doc"
    m.model_version = 7
    helper.set_model_props(m, {"author": "me", "license": "x"})
    res = convert0(m)
    out = res.model
    assert [i.name for i in out.graph.input] == ["x"] and [o.name for o in out.graph.output] == ["features", "pooled"]
    dims = [d.dim_param for d in out.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "", "h", "w"]
    assert [d.dim_param or d.dim_value for d in out.graph.output[0].type.tensor_type.shape.dim] == ["batch", 6, "h", "w"]
    assert ("", 13) in {(o.domain, o.version) for o in out.opset_import}
    assert {p.key: p.value for p in out.metadata_props} == {"author": "me", "license": "x"}
    assert (out.doc_string, out.model_version, out.producer_name, out.ir_version) == ("doc", 7, "tests", 8)
    assert [n.op_type for n in out.graph.node] == [PLUGIN_OP, "GlobalAveragePool"]
    assert [i.name for i in out.graph.initializer] == ["unused"]  # kept; the replaced conv's weight is gone
    assert_verified(m, res, input_shapes={"x": (2, 4, 9, 7)})


def test_input_model_is_not_modified():
    g = G()
    y = g.node("Relu", [g.conv("x", sparse_weight((4, 4, 3, 3)), "c0")], "y")
    m = g.model([finput()], [foutput(y)])
    before = m.SerializeToString()
    convert0(m)
    assert m.SerializeToString() == before


# -- policies ---------------------------------------------------------------------------------
def _two_layer_model():
    g = G()
    h = g.node("Relu", [g.conv("x", sparse_weight((8, 4, 3, 3), 0.9), "a", pads=[1, 1, 1, 1])], "h")
    y = g.conv(h, sparse_weight((8, 8, 1, 1), 0.9, seed=1), "b")
    return g.model([finput()], [foutput(y)])


def test_model_policy_uses_predicted_speedup():
    calls = []

    def predict(layer, nnz, batch, dtype):
        calls.append((dict(layer), nnz, batch, dtype))
        return 2.0 if layer["R"] == 3 else 0.5

    res = convert_model(_two_layer_model(), ConvertOptions(policy=ModelPolicy(0.0, batch=4, dtype="fp16",
                                                                              predict=predict)))
    by = {layer.name: layer for layer in res.layers}
    assert by["a"].decision == "sparse" and by["a"].predicted_speedup == 2.0
    assert by["b"].decision == "dense" and "dense is faster" in by["b"].reason
    layer, nnz, batch, dtype = calls[0]
    assert (layer["C"], layer["K"], layer["H"], layer["W"], layer["pads"]) == (4, 8, 12, 12, [1, 1, 1, 1])
    assert (nnz, batch, dtype) == (int(round(0.1 * 8 * 4 * 9)), 4, "fp16")


@pytest.mark.parametrize("margin, decision", [(None, "dense"), (1.0, "sparse"), (1.3, "dense")])
def test_model_policy_margin(margin, decision):
    """A layer predicted 1.2x faster stays dense under the default margin (within the model's error), is converted
    with --model-margin 1; a layer predicted 2x is converted under every margin here."""
    def predict(layer, nnz, batch, dtype):
        return 1.2 if layer["R"] == 3 else 2.0

    policy = ModelPolicy(0.0, predict=predict, **({} if margin is None else {"margin": margin}))
    assert policy.describe()["margin"] == (DEFAULT_MODEL_MARGIN if margin is None else margin)
    res = convert_model(_two_layer_model(), ConvertOptions(policy=policy))
    by = {layer.name: layer for layer in res.layers}
    assert by["a"].decision == decision, by["a"].reason
    if decision == "dense":
        assert "within the model's error" in by["a"].reason and "1.20x" in by["a"].reason
    assert by["b"].decision == "sparse"


def test_model_margin_validation():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(TrtSparseError, match="--model-margin"):
            make_policy("model", model_margin=bad)
    with pytest.raises(TrtSparseError, match="only used with --policy model"):
        make_policy("threshold", model_margin=1.1)


def test_model_policy_without_cost_model_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "trt_sparse.cost_model", None)
    with pytest.raises(TrtSparseError, match="cost model not available"):
        make_policy("model")


def test_measured_policy_matches_geometry_batch_dtype_nearest_sparsity(tmp_path):
    def entry(C, K, k, pad, sparsity, sparse_us, dense_us, batch=1, dtype="fp32"):
        return {"layer": {"name": "l", "C": C, "K": K, "H": 12, "W": 12, "kernel": k, "stride": 1, "pad": pad,
                          "dilation": 1}, "batch": batch, "sparsity": sparsity, "dtype": dtype,
                "sparse_us": sparse_us, "dense_us": {"cudnn": dense_us, "gemm": dense_us * 2}}
    doc = {"meta": {"device": "test"}, "results": [
        entry(4, 8, 3, 1, 0.5, 10.0, 5.0),   # far sparsity, slower
        entry(4, 8, 3, 1, 0.88, 2.0, 5.0),   # nearest to 0.9, faster -> convert
        entry(4, 8, 3, 1, 0.9, 2.0, 5.0, batch=8),  # other batch: ignored
        entry(8, 8, 1, 0, 0.9, 9.0, 3.0),    # b: slower -> dense
    ]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    res = convert_model(_two_layer_model(), ConvertOptions(policy=MeasuredPolicy(str(path), 0.0, 1, "fp32")))
    by = {layer.name: layer for layer in res.layers}
    assert by["a"].decision == "sparse" and by["a"].predicted_speedup == pytest.approx(2.5)
    assert by["b"].decision == "dense" and by["b"].predicted_speedup == pytest.approx(1 / 3.0)
    res16 = convert_model(_two_layer_model(), ConvertOptions(policy=MeasuredPolicy(str(path), 0.0, 1, "fp16")))
    assert all("no measurement" in layer.reason for layer in res16.layers)


def test_measured_policy_uses_the_lower_bound_measurement(tmp_path):
    # the layer's speedup is bounded below by a measurement at a lower sparsity, never by a sparser one
    def entry(sparsity, sparse_us, dense_us=5.0):
        return {"layer": {"name": "l", "C": 4, "K": 8, "H": 12, "W": 12, "kernel": 3, "stride": 1, "pad": 1,
                          "dilation": 1}, "batch": 1, "sparsity": sparsity, "dtype": "fp32",
                "sparse_us": sparse_us, "dense_us": {"cudnn": dense_us}}

    def decide(results, sparsity):
        path = tmp_path / "bench.json"
        path.write_text(json.dumps({"meta": {}, "results": results}))
        policy = MeasuredPolicy(str(path), 0.0, 1, "fp32")
        layer = {"C": 4, "K": 8, "H": 12, "W": 12, "R": 3, "S": 3, "stride_h": 1, "stride_w": 1,
                 "pads": [1, 1, 1, 1], "dilation_h": 1, "dilation_w": 1}
        return policy.decide(layer, int(round((1 - sparsity) * 288)), sparsity)

    # 0.93 lies between a losing 0.90 and a winning 0.95: the nearest (0.95) would convert, the bound keeps it dense
    ok, reason, speedup = decide([entry(0.90, 6.0), entry(0.95, 4.0)], 0.93)
    assert not ok and speedup == pytest.approx(5.0 / 6.0) and "0.900" in reason
    # at (or within the tolerance of) a winning measurement: converts
    ok, reason, speedup = decide([entry(0.90, 6.0), entry(0.95, 4.0)], 0.948)
    assert ok and speedup == pytest.approx(1.25) and "0.950" in reason
    # less sparse than every measurement: a win there is only an upper bound -> dense, with the reason
    ok, reason, speedup = decide([entry(0.95, 4.0)], 0.90)
    assert not ok and "upper bound" in reason and speedup == pytest.approx(1.25)
    # ... and a loss there is still a loss
    ok, reason, _ = decide([entry(0.95, 6.0)], 0.90)
    assert not ok and "dense is faster" in reason


def test_measured_policy_rejects_malformed_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": [{"layer": {"C": 1}}]}')
    with pytest.raises(TrtSparseError, match=r"results\[0\]"):
        make_policy("measured", measurements=str(bad))
    with pytest.raises(TrtSparseError, match="needs --measurements"):
        make_policy("measured")


def test_totals_count_bytes():
    res = convert_model(_two_layer_model(), ConvertOptions(policy=ThresholdPolicy(0.5)))
    t = res.totals()
    assert t["conv_layers"] == 2 and t["converted"] == 2
    assert t["weight_bytes_before"] == 4 * (8 * 4 * 9 + 8 * 8)
    assert t["weight_bytes_after"] == sum(4 * 9 + 8 * layer.nnz for layer in res.layers)


def test_default_domain_spelled_ai_onnx_becomes_empty():
    """TensorRT 8.2 looks the default opset up as "" when a model imports several domains."""
    g = G()
    y = g.conv("x", sparse_weight((4, 4, 3, 3)), "c0")
    m = g.model([finput()], [foutput(y)])
    m.opset_import[0].domain = "ai.onnx"
    res = convert0(m)
    assert {(o.domain, o.version) for o in res.model.opset_import} == {("", 17), (PLUGIN_DOMAIN, 1)}
    assert_verified(m, res)


def test_initializers_listed_as_inputs_stay_inputs_unless_replaced():
    """Old exporters list weights as graph inputs too: kept for dense layers, dropped with replaced weights."""
    g = G()
    a = g.conv("x", sparse_weight((4, 4, 3, 3), 0.9), "a")
    b = g.conv("x", sparse_weight((4, 4, 3, 3), 0.1, seed=1), "b")
    m = g.model([finput(), helper.make_tensor_value_info("a.W", TensorProto.FLOAT, [4, 4, 3, 3]),
                 helper.make_tensor_value_info("b.W", TensorProto.FLOAT, [4, 4, 3, 3])], [foutput(a), foutput(b)])
    res = convert_model(m, ConvertOptions(policy=ThresholdPolicy(0.5)))
    assert [n.op_type for n in res.model.graph.node] == [PLUGIN_OP, "Conv"]
    assert [i.name for i in res.model.graph.input] == ["x", "b.W"]
    assert [i.name for i in res.model.graph.initializer] == ["b.W"]
    assert_verified(m, res)


def test_weights_auto_uses_packed32_only_where_lossless():
    g = G()
    exact_w = sparse_weight((4, 4, 3, 3), 0.8)  # random fp32: not fp16-representable
    half_w = exact_w.astype(np.float16).astype(np.float32)
    a = g.conv("x", exact_w, "a")
    b = g.conv("x", half_w, "b")
    m = g.model([finput()], [foutput(a), foutput(b)])
    res = convert0(m)  # default --weights auto
    by = {layer.name: layer for layer in res.layers}
    assert by["a"].weight_format == "exact" and by["b"].weight_format == "packed32"
    assert by["b"].packed32_max_abs_err == 0.0
    formats = {n.name: [x.i for x in n.attribute if x.name == "weight_format"][0] for n in sparse_nodes(res.model)}
    assert formats == {"a": 0, "b": 1}
    assert_verified(m, res, rtol=1e-6)
    assert all(layer.weight_format == "exact" for layer in convert0(m, weights="exact").layers)


def test_model_policy_with_the_real_cost_model():
    cost_model = pytest.importorskip("trt_sparse.cost_model", reason="trt_sparse.cost_model not in this checkout")
    policy = make_policy("model", batch=2, dtype="fp32")
    res = convert_model(_two_layer_model(), ConvertOptions(policy=policy))
    assert policy.margin == DEFAULT_MODEL_MARGIN > 1.0
    for layer in res.layers:
        assert layer.predicted_speedup is not None
        assert layer.converted == (layer.predicted_speedup > policy.margin)
    a = res.layers[0]
    expected = cost_model.predict_speedup({"C": 4, "K": 8, "R": 3, "S": 3, "H": 12, "W": 12, "stride_h": 1,
                                           "stride_w": 1, "pads": [1, 1, 1, 1], "dilation_h": 1,
                                           "dilation_w": 1}, a.nnz, 2, "fp32")
    assert a.predicted_speedup == pytest.approx(expected)


def test_exclude_patterns_keep_layers_dense():
    res = convert_model(_two_layer_model(), ConvertOptions(policy=ThresholdPolicy(0.0), exclude=["a*"]))
    by = {layer.name: layer for layer in res.layers}
    assert by["a"].decision == "dense" and by["a"].reason == "excluded by --exclude a*"
    assert by["b"].decision == "sparse"
    assert [n.op_type for n in res.model.graph.node] == ["Conv", "Relu", PLUGIN_OP]


def test_fp16_model_layers_are_fp16_even_where_the_input_dtype_is_not_inferred():
    g = G()
    h = g.node("Relu", [g.conv("x", sparse_weight((8, 4, 3, 3), 0.9).astype(np.float16), "a", pads=[1, 1, 1, 1])],
               "h")
    y = g.conv(h, sparse_weight((8, 8, 1, 1), 0.9, seed=1).astype(np.float16), "b")
    g.inits = [numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name) for t in g.inits]
    model = g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", 4, 12, 12])],
                    [helper.make_tensor_value_info(y, TensorProto.FLOAT16, ["o0", "o1", "o2", "o3"])])
    seen = []

    def predict(layer, nnz, batch, dtype):
        seen.append((layer["name"] if "name" in layer else None, dtype))
        return 2.0

    res = convert_model(model, ConvertOptions(policy=ModelPolicy(0.0, batch=1, dtype=None, predict=predict)))
    by = {layer.name: layer for layer in res.layers}
    assert by["a"].dtype == "fp16" and by["b"].dtype == "fp16"
    assert [d for _, d in seen] == ["fp16", "fp16"]


def test_union16_measures_shared_positions():
    from trt_sparse.cost_model import measured_union_fraction as union16

    w = np.zeros((32, 4, 3, 3), np.float32)
    w[0:16, 1, 1, 1] = 1.0            # group 0: one position shared by all 16 channels
    w[16, 0, 0, 0] = w[17, 2, 2, 2] = 1.0  # group 1: two positions
    assert union16(w) == pytest.approx((1 / 36 + 2 / 36) / 2)
    assert union16(np.zeros((5, 2, 1, 1), np.float32)) == 0.0
    assert union16(np.ones((20, 3, 3, 3), np.float32)) == 1.0


def test_model_policy_gets_the_measured_union():
    seen = []

    def predict(layer, nnz, batch, dtype):
        seen.append(layer.get("union16"))
        return 2.0

    convert_model(_two_layer_model(), ConvertOptions(policy=ModelPolicy(0.0, predict=predict)))
    assert len(seen) == 2 and all(0.0 < u <= 1.0 for u in seen)
