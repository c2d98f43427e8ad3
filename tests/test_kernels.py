"""Kernel library binding without a GPU: lookup, output dims, weight validation messages."""
import json

import numpy as np
import pytest

from trt_sparse import cuda as tcuda
from trt_sparse import format as fmt
from trt_sparse.errors import TrtSparseError

needs_lib = pytest.mark.skipif(tcuda.find_library() is None,
                               reason="kernel library not built (cmake -S plugin -B build && cmake --build build)")


class _FakeWeight(object):
    """Duck-typed SparseConvWeight that skips Python validation (to reach the C checks)."""

    def __init__(self, shape, row_offsets, indices, values):
        self.shape = shape
        self.row_offsets = np.asarray(row_offsets, np.int32)
        self.indices = np.asarray(indices, np.int32)
        self.values = np.asarray(values, np.float32)


def test_missing_library_message(monkeypatch, tmp_path):
    monkeypatch.setenv("TRT_SPARSE_KERNELS_LIB", str(tmp_path / "nope.so"))
    monkeypatch.setattr(tcuda, "_lib", None)
    monkeypatch.setattr(tcuda, "library_candidates", lambda: [str(tmp_path / "nope.so")])
    with pytest.raises(TrtSparseError, match="not found"):
        tcuda.load_library()


def test_pointer_of():
    assert tcuda.pointer_of(None) == 0
    assert tcuda.pointer_of(1234) == 1234

    class T(object):
        def data_ptr(self):
            return 77
    assert tcuda.pointer_of(T()) == 77


@needs_lib
@pytest.mark.parametrize("H,W,R,strides,pads,dil,expect", [
    (56, 56, 3, (1, 1), (1, 1, 1, 1), (1, 1), (56, 56)),
    (56, 56, 3, (2, 2), (1, 1, 1, 1), (1, 1), (28, 28)),
    (11, 9, 3, (1, 1), (2, 0, 1, 3), (1, 1), (12, 10)),
    (15, 14, 3, (1, 1), (2, 2, 2, 2), (2, 2), (15, 14)),
    (23, 23, 7, (2, 2), (3, 3, 3, 3), (1, 1), (12, 12)),
])
def test_output_dims_match_reference(H, W, R, strides, pads, dil, expect):
    from trt_sparse.reference import conv_output_size
    got = tcuda.output_dims((4, 3, R, R), H, W, strides, pads, dil)
    assert got == expect == conv_output_size(H, W, R, R, strides, pads, dil)


@needs_lib
def test_output_dims_empty_is_error():
    with pytest.raises(tcuda.KernelError, match="INVALID_ARGUMENT"):
        tcuda.output_dims((4, 3, 5, 5), 2, 2)


@needs_lib
@pytest.mark.parametrize("weight,msg", [
    (_FakeWeight((2, 1, 1, 1), [0, 1, 0], [0], [1.0]), "non-decreasing"),
    (_FakeWeight((1, 2, 1, 1), [0, 2], [1, 0], [1.0, 2.0]), "strictly increasing"),
    (_FakeWeight((1, 2, 1, 1), [0, 1], [5], [1.0]), "out of range"),
    (_FakeWeight((1, 2, 1, 1), [0, 1], [0], [np.inf]), "not finite"),
    (_FakeWeight((1, 2, 1, 1), [1, 1], [0], [1.0]), "row_offsets\\[0\\]"),
])
def test_plan_rejects_bad_weights(weight, msg):
    with pytest.raises(tcuda.KernelError, match=msg):
        tcuda.SparseConvPlan(weight)


@needs_lib
def test_plan_rejects_bad_geometry():
    sw = fmt.pack(np.ones((2, 2, 3, 3), np.float32))
    with pytest.raises(tcuda.KernelError, match="strides"):
        tcuda.SparseConvPlan(sw, strides=(0, 1))
    with pytest.raises(tcuda.KernelError, match="activation"):
        tcuda.SparseConvPlan(sw, activation=5)
    with pytest.raises(TrtSparseError, match="bias"):
        tcuda.SparseConvPlan(sw, bias=np.zeros(3))
    with pytest.raises(TrtSparseError, match="dtype"):
        tcuda.SparseConvPlan(sw, dtype="int8")


# -- bench-kernels command (no GPU needed for these parts) -------------------------------------
from trt_sparse.commands import bench_kernels_cmd as bk  # noqa: E402


def test_load_layers_errors(tmp_path):
    with pytest.raises(TrtSparseError, match="no such file"):
        bk.load_layers(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TrtSparseError, match="not valid JSON"):
        bk.load_layers(str(bad))
    empty = tmp_path / "empty.json"
    empty.write_text('{"layers": []}')
    with pytest.raises(TrtSparseError, match="non-empty 'layers'"):
        bk.load_layers(str(empty))
    neg = tmp_path / "neg.json"
    neg.write_text('{"layers": [{"name": "a", "C": 0, "K": 1, "H": 4, "W": 4, "kernel": 3}]}')
    with pytest.raises(TrtSparseError, match="non-positive"):
        bk.load_layers(str(neg))


def test_load_layers_own_sparsity(tmp_path):
    def write(sp):
        path = tmp_path / "own.json"
        path.write_text(json.dumps({"layers": [{"name": "a", "C": 4, "K": 8, "H": 6, "W": 6, "kernel": 3,
                                                "sparsity": sp}]}))
        return str(path)

    assert bk.load_layers(write(0.913))[0]["sparsity"] == [0.913]
    assert bk.load_layers(write([0.5, 0.9]))[0]["sparsity"] == [0.5, 0.9]
    for bad in (1.0, -0.1, [], "x", [0.5, 2]):
        with pytest.raises(TrtSparseError, match="'sparsity' must be"):
            bk.load_layers(write(bad))
    lay = bk.load_layers(write(0.913))[0]
    assert bk.layer_sparsities(lay, None) == [0.913]            # the layer's own
    assert bk.layer_sparsities(lay, [0.5]) == [0.5]             # --sparsity wins
    assert bk.layer_sparsities({"name": "b"}, None) == list(bk.DEFAULT_SPARSITIES)


def test_load_public_layers():
    import os
    layers = bk.load_layers(os.path.join(os.path.dirname(__file__), "..", "bench", "layers.json"))
    assert len(layers) == 23 and all(l["kernel"] in (1, 3) for l in layers)


def test_summary_geomeans():
    def res(name, k, st, sp_us, tf32, notf, sparsity=0.9):
        return {"layer": {"name": name, "kernel": k, "stride": st}, "batch": 1, "sparsity": sparsity,
                "dtype": "fp32", "sparse_us": sp_us, "floor_us": 1.0, "roofline_fraction": 1.0 / sp_us,
                "rel_err": 1e-7, "speedup": {"tf32_best": tf32 / sp_us, "fp32_notf32": notf / sp_us}}
    rs = [res("a", 3, 1, 2.0, 8.0, 16.0), res("b", 3, 1, 4.0, 4.0, 16.0), res("c", 1, 1, 1.0, 1.0, 1.0)]
    s = bk.summarize(rs)
    sub = s["fp32|b1|s0.9|3x3s1"]
    assert sub["layers"] == 2
    assert sub["geomean_vs_tf32_best"] == pytest.approx(2.0)  # sqrt(4 * 1)
    assert sub["min_vs_tf32_best"] == pytest.approx(1.0)
    assert s["fp32|b1|s0.9|all"]["layers"] == 3
    assert "fp32|b1|s0.9|3x3s1" in bk.format_summary(s)
    assert bk.geomean([]) is None


def test_bench_cli_without_gpu_is_a_clean_error(tmp_path, capsys):
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the no-GPU error path does not apply")
    from trt_sparse.cli import main
    import os
    layers = os.path.join(os.path.dirname(__file__), "..", "bench", "layers.json")
    rc = main(["bench-kernels", "--layers", layers, "--json", str(tmp_path / "o.json")])
    assert rc == 2
    assert "CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_pruned_weight_patterns():
    """vec=1 keeps the historic uniform masks (same seed, same weights); vec=V shares one mask per V channels."""
    import math as _m
    lay = {"name": "x", "C": 12, "K": 40, "H": 8, "W": 8, "kernel": 3}
    w1, sw1 = bk._pruned_weight(np.random.default_rng(3), lay, 0.8)
    rng = np.random.default_rng(3)  # the formula of rounds 1-3
    ref = (rng.standard_normal((40, 12, 3, 3)) * _m.sqrt(2.0 / (12 * 9))).astype(np.float32)
    ref[rng.random(ref.shape) < 0.8] = 0.0
    assert np.array_equal(w1, ref) and sw1.nnz == np.count_nonzero(ref)
    w16, _ = bk._pruned_weight(np.random.default_rng(4), lay, 0.8, 16)
    mask = w16 != 0
    for g in range(0, 40, 16):
        blk = mask[g:g + 16]
        assert np.array_equal(blk, np.broadcast_to(blk[:1], blk.shape)), g
    assert 0.7 < 1.0 - mask.mean() < 0.9


def test_bench_pattern_option(tmp_path, capsys):
    """--pattern is validated before any GPU work (a clean error naming the option)."""
    from trt_sparse.cli import main
    import os
    layers = os.path.join(os.path.dirname(__file__), "..", "bench", "layers.json")
    rc = main(["bench-kernels", "--layers", layers, "--pattern", "vector:0", "--json", str(tmp_path / "o.json")])
    assert rc == 2
    assert "--pattern" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_variant_times_compare_rows():
    """bench/variant_times.py --compare: old / new per family for the same case (pattern defaults)."""
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        "variant_rows", os.path.join(os.path.dirname(__file__), "..", "bench", "variant_rows.py"))
    vt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vt)
    old = [{"layer": "a", "batch": 1, "dtype": "fp16", "sparsity": 0.9,
            "best_per_family": {"mma": ["mma(x)", 8.0], "smem": ["smem(y)", 12.0]}}]
    new = {"layer": "a", "batch": 1, "dtype": "fp16", "sparsity": 0.9, "pattern": "unstructured",
           "best_per_family": {"mma": ["mma(x)", 4.0], "generic": ["generic", 30.0]}}
    assert vt.compare_rows(old, new) == {"mma": (8.0, 4.0, 2.0)}
    assert vt.compare_rows(old, dict(new, pattern="vector:16")) == {}
    assert vt.compare_rows(old, dict(new, sparsity=0.95)) == {}
