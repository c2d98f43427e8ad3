"""trt_sparse.prune and ``trt-sparse prune``: exact sparsity, magnitude order, scopes, skip, vector pattern, errors."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse.cli import main
from trt_sparse.errors import TrtSparseError
from trt_sparse.onnx_io import save_model_atomic
from trt_sparse.prune import prune_model


def model3(const_middle=False, grouped_last=False):
    """x -> conv a (8x3x3x3) -> conv b (16x8x3x3) -> conv c (16x16x1x1 or depthwise) -> y."""
    rng = np.random.default_rng(0)
    wa = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    wb = (rng.standard_normal((16, 8, 3, 3)) * 3).astype(np.float32)  # larger scale: global favours it
    wc = rng.standard_normal((16, 1, 1, 1) if grouped_last else (16, 16, 1, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(wa, "wa"), numpy_helper.from_array(wc, "wc")]
    nodes = []
    if const_middle:
        nodes.append(helper.make_node("Constant", [], ["wb"], value=numpy_helper.from_array(wb, "wb")))
    else:
        inits.append(numpy_helper.from_array(wb, "wb"))
    nodes += [helper.make_node("Conv", ["x", "wa"], ["a"], name="a", pads=[1, 1, 1, 1]),
              helper.make_node("Conv", ["a", "wb"], ["b"], name="b", pads=[1, 1, 1, 1]),
              helper.make_node("Conv", ["b", "wc"], ["y"], name="c", group=16 if grouped_last else 1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def weights(model):
    out = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            out[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    return out


def test_layer_scope_exact_sparsity_and_magnitude_order():
    m = model3()
    orig = weights(m)
    prune_model(m, 0.75)
    new = weights(m)
    for k, w in orig.items():
        p = new[k]
        assert np.count_nonzero(p == 0) == int(round(0.75 * w.size)), k
        kept = np.abs(w[p != 0])
        dropped = np.abs(w[p == 0])
        assert dropped.max() <= kept.min(), k  # the smallest magnitudes went
        np.testing.assert_array_equal(p[p != 0], w[p != 0])  # survivors unchanged


def test_global_scope_single_threshold():
    m = model3()
    orig = weights(m)
    prune_model(m, 0.6, scope="global")
    new = weights(m)
    allw = np.concatenate([orig[k].reshape(-1) for k in sorted(orig)])
    alln = np.concatenate([new[k].reshape(-1) for k in sorted(orig)])
    assert np.count_nonzero(alln == 0) == int(round(0.6 * allw.size))
    assert np.abs(allw[alln == 0]).max() <= np.abs(allw[alln != 0]).min()
    # the larger-scale layer keeps more than the average
    assert 1 - np.count_nonzero(new["wb"]) / new["wb"].size < 0.6


def test_skip_first_last_and_constant_node_weights():
    m = model3(const_middle=True)
    orig = weights(m)
    rows = prune_model(m, 0.9, skip_first_last=True)
    new = weights(m)
    np.testing.assert_array_equal(new["wa"], orig["wa"])
    np.testing.assert_array_equal(new["wc"], orig["wc"])
    assert np.count_nonzero(new["wb"] == 0) == int(round(0.9 * orig["wb"].size))
    assert sum("first/last" in r.note for r in rows) == 2


def test_grouped_conv_skipped():
    m = model3(grouped_last=True)
    orig = weights(m)
    rows = prune_model(m, 0.5)
    np.testing.assert_array_equal(weights(m)["wc"], orig["wc"])
    assert any(r.name == "c" and "group = 16" in r.note for r in rows)


def test_vector_pattern_shares_positions():
    m = model3()
    prune_model(m, 0.75, pattern="vector:4")
    wb = weights(m)["wb"].reshape(4, 4, -1)  # (K/V, V, CRS)
    nz = wb != 0
    assert np.all(nz == nz[:, :1, :])  # all V channels of a group share the zero positions
    groups_positions = 4 * 72  # (K / V) * C*R*S
    assert (~nz).sum() == (groups_positions - int(round(0.25 * groups_positions))) * 4
    m2 = model3()
    rows = prune_model(m2, 0.5, pattern="vector:3")  # K = 8 / 16 not multiples of 3: unstructured fallback
    assert all("unstructured" in r.note for r in rows if r.after is not None)


@pytest.mark.parametrize("kw,match", [
    (dict(sparsity=1.0), "sparsity"), (dict(sparsity=-0.1), "sparsity"),
    (dict(sparsity=0.5, scope="all"), "scope"), (dict(sparsity=0.5, pattern="block:4"), "pattern"),
    (dict(sparsity=0.5, pattern="vector:2", scope="global"), "layer"),
])
def test_bad_arguments(kw, match):
    with pytest.raises(TrtSparseError, match=match):
        prune_model(model3(), **kw)


def test_cli_prune(tmp_path, capsys):
    src = str(tmp_path / "m.onnx")
    save_model_atomic(model3(), src)
    out = str(tmp_path / "p.onnx")
    assert main(["prune", src, "-o", out, "--sparsity", "0.8", "--scope", "global"]) == 0
    text = capsys.readouterr().out
    assert "fine-tun" in text and "overall sparsity 0.800" in text
    w = weights(onnx.load(out))
    total = sum(v.size for v in w.values())
    assert sum(np.count_nonzero(v == 0) for v in w.values()) == int(round(0.8 * total))
    before = open(src, "rb").read()
    assert main(["prune", src, "-o", src, "--sparsity", "0.5"]) == 2
    assert open(src, "rb").read() == before
    assert "input" in capsys.readouterr().err
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    save_model_atomic(helper.make_model(g), str(tmp_path / "noconv.onnx"))
    assert main(["prune", str(tmp_path / "noconv.onnx"), "-o", str(tmp_path / "x.onnx"), "--sparsity", "0.5"]) == 2
    assert "no Conv" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists()
