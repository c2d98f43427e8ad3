"""trt_sparse.reference vs onnxruntime's dense Conv (fp32) on generated and hand-picked cases."""
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trt_sparse import format as F
from trt_sparse import reference as R
from trt_sparse.errors import TrtSparseError, UnsupportedError

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")

REL_TOL = 1e-5


def make_weight(rng, shape, sparsity, empty_channels=(), mode="exact"):
    """Random dense weight with the given fraction of zeros (and whole zero output channels), packed."""
    w = rng.standard_normal(shape).astype(np.float32)
    w[rng.random(shape) < sparsity] = 0.0
    if sparsity >= 1.0:
        w[...] = 0.0
    for k in empty_channels:
        w[k] = 0.0
    return F.pack(w, mode)


def rel_error(got, ref):
    """||got - ref|| / ||ref||, or ||got|| when the reference is exactly zero."""
    ref = np.asarray(ref, np.float64)
    diff = np.linalg.norm(np.asarray(got, np.float64) - ref)
    norm = np.linalg.norm(ref)
    return diff / norm if norm > 0 else diff


def compare_with_ort(conv_model, ort_run, case, seed):
    """Run the reference and onnxruntime on one case; return (reference, ort output, relative error)."""
    rng = np.random.default_rng(seed)
    sw = make_weight(rng, case["wshape"], case["sparsity"], case.get("empty", ()), case.get("mode", "exact"))
    K, C = case["wshape"][:2]
    x = rng.standard_normal((case["N"], C) + tuple(case["hw"])).astype(np.float32)
    bias = rng.standard_normal(K).astype(np.float32) if case.get("bias") else None
    act = case.get("act", 0)
    lo, hi = case.get("clip", (0.0, 6.0))
    ref = R.sparse_conv2d(x, sw, bias, case["strides"], case["pads"], case["dilations"], act, lo, hi)
    model = conv_model(x.shape, F.unpack(sw), bias, strides=case["strides"], pads=case["pads"],
                       dilations=case["dilations"], activation=act, clip_min=lo, clip_max=hi)
    out = ort_run(model, {"x": x})[0]
    assert ref.dtype == np.float64
    assert out.shape == ref.shape, (out.shape, ref.shape)
    return ref, out, rel_error(out, ref)


# -- generated cases ---------------------------------------------------------------------------
@st.composite
def conv_cases(draw):
    R_, S_ = draw(st.sampled_from([1, 2, 3, 5, 7])), draw(st.sampled_from([1, 2, 3, 5, 7]))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilations = (draw(st.sampled_from([1, 1, 2, 3])), draw(st.sampled_from([1, 1, 2, 3])))
    pads = tuple(draw(st.sampled_from([0, 0, 1, 2, 3, 5, 8])) for _ in range(4))
    hw = []
    for k, d, lo_pad, hi_pad in ((R_, dilations[0], pads[0], pads[2]), (S_, dilations[1], pads[1], pads[3])):
        min_size = max(1, d * (k - 1) + 1 - lo_pad - hi_pad)  # at least one output pixel
        hw.append(draw(st.integers(min_size, min_size + 11)))
    K = draw(st.integers(1, 7))
    case = dict(
        N=draw(st.integers(1, 3)),
        wshape=(K, draw(st.sampled_from([1, 1, 2, 3, 4, 7])), R_, S_),
        hw=tuple(hw), strides=strides, pads=pads, dilations=dilations,
        sparsity=draw(st.sampled_from([0.0, 0.5, 0.9, 0.95, 1.0]) | st.floats(0.0, 1.0)),
        empty=draw(st.lists(st.integers(0, K - 1), max_size=K)),
        bias=draw(st.booleans()),
        act=draw(st.sampled_from([0, 1, 2])),
        clip=draw(st.sampled_from([(0.0, 6.0), (-0.5, 0.5), (0.0, 1.0)])),
        mode=draw(st.sampled_from(["exact", "exact", "packed32"])),
    )
    return case


@settings(max_examples=250, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 2 ** 32 - 1))
def test_reference_matches_onnxruntime_generated(conv_model, ort_run, case, seed):
    _, _, err = compare_with_ort(conv_model, ort_run, case, seed)
    assert err < REL_TOL


# -- hand-picked cases (named so each situation is always covered) ----------------------------------
def _case(wshape, hw, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), N=1, **kw):
    c = dict(wshape=wshape, hw=hw, strides=strides, pads=pads, dilations=dilations, N=N, sparsity=0.9)
    c.update(kw)
    return c


CASES = {
    "1x1": _case((8, 6, 1, 1), (5, 7)),
    "1x1-stride2": _case((8, 6, 1, 1), (9, 8), strides=(2, 2)),
    "3x3-same": _case((6, 5, 3, 3), (11, 13), pads=(1, 1, 1, 1), bias=True, act=1),
    "5x5-pad2": _case((4, 3, 5, 5), (9, 10), pads=(2, 2, 2, 2)),
    "7x7-stride2-pad3": _case((8, 3, 7, 7), (23, 19), strides=(2, 2), pads=(3, 3, 3, 3), bias=True, act=1),
    "C=1": _case((5, 1, 3, 3), (6, 6), pads=(1, 1, 1, 1), sparsity=0.5),
    "K=1": _case((1, 4, 3, 3), (6, 6), sparsity=0.5),
    "pads>kernel-asymmetric": _case((4, 3, 3, 3), (5, 6), pads=(4, 0, 5, 6)),
    "stride2-dilation2": _case((6, 4, 3, 3), (15, 14), strides=(2, 2), pads=(2, 2, 2, 2), dilations=(2, 2)),
    "dilation3-rect": _case((3, 2, 2, 5), (12, 17), dilations=(3, 2), strides=(1, 3)),
    "odd-1x1-image": _case((3, 2, 1, 1), (1, 1), N=3),
    "1x1-image-padded-3x3": _case((3, 2, 3, 3), (1, 1), pads=(1, 1, 1, 1), sparsity=0.3),
    "empty-output-channels": _case((6, 4, 3, 3), (7, 7), pads=(1, 1, 1, 1), empty=(0, 2, 5), bias=True),
    "sparsity-0": _case((6, 4, 3, 3), (7, 8), sparsity=0.0, bias=True),
    "sparsity-100-bias-relu": _case((6, 4, 3, 3), (7, 8), sparsity=1.0, bias=True, act=1),
    "sparsity-100-no-bias": _case((6, 4, 3, 3), (7, 8), sparsity=1.0),
    "relu6": _case((6, 4, 3, 3), (8, 8), pads=(1, 1, 1, 1), bias=True, act=2, clip=(0.0, 6.0), sparsity=0.2),
    "clip-narrow": _case((6, 4, 3, 3), (8, 8), bias=True, act=2, clip=(-0.3, 0.4)),
    "packed32": _case((6, 4, 3, 3), (8, 8), pads=(1, 1, 1, 1), mode="packed32", bias=True),
    "batch4": _case((5, 3, 3, 3), (9, 9), N=4, strides=(2, 2), pads=(1, 1, 1, 1)),
    "resnet-1x1-bottleneck": _case((64, 32, 1, 1), (14, 14), bias=True, act=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_onnxruntime_named(conv_model, ort_run, name):
    ref, out, err = compare_with_ort(conv_model, ort_run, CASES[name], seed=sum(map(ord, name)))
    assert err < REL_TOL
    if CASES[name]["sparsity"] >= 1.0 and not CASES[name].get("bias"):
        assert not np.any(ref) and not np.any(out)


# -- properties that do not need onnxruntime ---------------------------------------------------------
def test_empty_channel_is_bias_plus_activation():
    rng = np.random.default_rng(5)
    sw = make_weight(rng, (4, 3, 3, 3), 0.5, empty_channels=(1, 3))
    bias = np.array([0.5, -2.0, 1.0, 3.5])
    x = rng.standard_normal((2, 3, 6, 6))
    y = R.sparse_conv2d(x, sw, bias, pads=(1, 1, 1, 1), activation=2, clip_min=0.0, clip_max=3.0)
    assert np.all(y[:, 1] == 0.0) and np.all(y[:, 3] == 3.0)


def test_chunking_gives_same_result(monkeypatch):
    """Tiny chunks split output channels across chunks; the sum must not change."""
    rng = np.random.default_rng(6)
    sw = make_weight(rng, (9, 5, 3, 3), 0.4, empty_channels=(4,))
    x = rng.standard_normal((2, 5, 7, 6))
    full = R.sparse_conv2d(x, sw, strides=(2, 1), pads=(1, 2, 0, 1))
    for chunk in (1, 7 * 2 * 4, 2 * 4 * 6 * 13):
        monkeypatch.setattr(R, "_CHUNK_ELEMENTS", chunk)
        np.testing.assert_allclose(R.sparse_conv2d(x, sw, strides=(2, 1), pads=(1, 2, 0, 1)), full, rtol=1e-13, atol=1e-13)


def test_float64_exactness_on_integers():
    """Small integer inputs and weights: the float64 sum is exact, so compare with exact integer arithmetic."""
    rng = np.random.default_rng(7)
    w = rng.integers(-3, 4, size=(4, 3, 2, 3)).astype(np.float32)
    x = rng.integers(-5, 6, size=(2, 3, 5, 6))
    y = R.sparse_conv2d(x, F.pack(w), strides=(1, 2), pads=(1, 0, 0, 2), dilations=(2, 1))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 2)))
    P, Q = R.conv_output_size(5, 6, 2, 3, (1, 2), (1, 0, 0, 2), (2, 1))
    expect = np.zeros((2, 4, P, Q), np.int64)
    for p in range(P):
        for q in range(Q):
            patch = xp[:, :, p:p + 3:2, 2 * q:2 * q + 3]  # rows p + 2r, cols 2q + s
            expect[:, :, p, q] = np.einsum("ncrs,kcrs->nk", patch, w.astype(np.int64))
    np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_input_dtypes(dtype):
    rng = np.random.default_rng(8)
    sw = make_weight(rng, (3, 2, 3, 3), 0.5)
    x = (rng.standard_normal((1, 2, 5, 5)) * 4).astype(dtype)
    y = R.sparse_conv2d(x, sw, pads=(1, 1, 1, 1))
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, R.sparse_conv2d(x.astype(np.float64), sw, pads=(1, 1, 1, 1)), rtol=0, atol=0)


def test_never_densifies_huge_weight():
    """K = C = 65536 with 3x3 taps: a dense copy would need ~300 GB; the reference works from the CSR."""
    K = C = 65536
    rng = np.random.default_rng(9)
    ks = np.sort(rng.choice(K, size=64, replace=False))
    counts = np.zeros(K, np.int64)
    counts[ks] = 1
    offsets = np.concatenate(([0], np.cumsum(counts)))
    cs = rng.integers(0, C, size=64)
    indices = cs * 9 + 4  # centre tap
    sw = F.SparseConvWeight((K, C, 3, 3), offsets, indices, np.ones(64, np.float32))
    x = rng.standard_normal((1, C, 3, 3))
    y = R.sparse_conv2d(x, sw, pads=(1, 1, 1, 1))
    assert y.shape == (1, K, 3, 3)
    np.testing.assert_array_equal(y[0, ks], x[0, cs])
    assert np.count_nonzero(np.abs(y).sum(axis=(0, 2, 3))) == 64


def test_resnet50_layer_is_fast():
    """A ResNet-50 3x3 layer (256 -> 256, 14x14) at 90 % sparsity: well under two seconds (vectorized)."""
    rng = np.random.default_rng(10)
    sw = make_weight(rng, (256, 256, 3, 3), 0.9)
    x = rng.standard_normal((1, 256, 14, 14)).astype(np.float32)
    t0 = time.perf_counter()
    y = R.sparse_conv2d(x, sw, pads=(1, 1, 1, 1), activation=1)
    elapsed = time.perf_counter() - t0
    assert y.shape == (1, 256, 14, 14)
    assert elapsed < 5.0, "reference took {:.2f} s".format(elapsed)  # ~0.15 s measured; loose for busy CI


# -- errors -----------------------------------------------------------------------------------------------
def test_conv_output_size():
    assert R.conv_output_size(224, 224, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1)) == (112, 112)
    assert R.conv_output_size(5, 6, 3, 3, (1, 1), (4, 0, 5, 6), (1, 1)) == (12, 10)
    assert R.conv_output_size(10, 10, 3, 3, (3, 1), (0, 0, 0, 0), (2, 4)) == (2, 2)
    with pytest.raises(UnsupportedError, match="empty"):
        R.conv_output_size(2, 8, 3, 3)
    with pytest.raises(UnsupportedError, match="empty"):
        R.conv_output_size(8, 8, 3, 3, dilations=(1, 4))
    with pytest.raises(UnsupportedError, match="strides"):
        R.conv_output_size(8, 8, 3, 3, strides=(0, 1))


@pytest.mark.parametrize("kwargs,exc,pattern", [
    (dict(group=2), UnsupportedError, "group"),
    (dict(activation=3), UnsupportedError, "activation"),
    (dict(activation=2, clip_min=1.0, clip_max=0.0), UnsupportedError, "clip_min <= clip_max"),
    (dict(bias=np.zeros(5)), TrtSparseError, "bias has 5"),
    (dict(strides=(1,)), UnsupportedError, "2 strides"),
    (dict(pads=(1, 1)), UnsupportedError, "4 pads"),
])
def test_bad_arguments(kwargs, exc, pattern):
    sw = F.pack(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(exc, match=pattern):
        R.sparse_conv2d(np.zeros((1, 3, 5, 5)), sw, **kwargs)


def test_bad_inputs():
    sw = F.pack(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(TrtSparseError, match="6 channels.*C = 3"):
        R.sparse_conv2d(np.zeros((1, 6, 5, 5)), sw)
    with pytest.raises(TrtSparseError, match="4-D"):
        R.sparse_conv2d(np.zeros((3, 5, 5)), sw)
    with pytest.raises(UnsupportedError, match="empty"):
        R.sparse_conv2d(np.zeros((1, 3, 2, 2)), sw)
    with pytest.raises(TrtSparseError, match="SparseConvWeight"):
        R.sparse_conv2d(np.zeros((1, 3, 5, 5)), np.ones((4, 3, 3, 3)))
