"""trt_sparse.format: exact round-trips (hypothesis), packed32 encoding, stats and corrupt-blob rejection."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from trt_sparse import format as F
from trt_sparse.errors import FormatError

# -- strategies ------------------------------------------------------------------------------
shapes = st.tuples(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4))
fp32_values = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)
fp16_values = st.floats(width=16, allow_nan=False, allow_infinity=False, allow_subnormal=True)


@st.composite
def sparse_dense(draw, values):
    """A dense weight with a drawn sparsity pattern: 0 %, 100 %, random, empty output channels, -0.0."""
    shape = draw(shapes)
    w = draw(hnp.arrays(np.float32, shape, elements=values))
    kind = draw(st.sampled_from(["as-drawn", "dense", "empty", "random", "empty-channels", "neg-zero"]))
    if kind == "dense":
        w[w == 0] = 1.0
    elif kind == "empty":
        w[...] = 0.0
    elif kind == "random":
        seed = draw(st.integers(0, 2 ** 31 - 1))
        density = draw(st.floats(0.0, 1.0))
        w[np.random.default_rng(seed).random(shape) >= density] = 0.0
    elif kind == "empty-channels":
        ks = draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=shape[0]))
        w[ks] = 0.0
    elif kind == "neg-zero":
        seed = draw(st.integers(0, 2 ** 31 - 1))
        w[np.random.default_rng(seed).random(shape) < 0.5] = -0.0
    return w


def _check_canonical(sw, dense):
    """Independent check of the canonical order against a dense weight."""
    k = dense.shape[0]
    flat = dense.reshape(k, -1)
    for ch in range(k):
        lo, hi = sw.row_offsets[ch], sw.row_offsets[ch + 1]
        expect = np.flatnonzero(flat[ch] != 0)
        np.testing.assert_array_equal(sw.indices[lo:hi], expect)
        np.testing.assert_array_equal(sw.values[lo:hi], flat[ch, expect])
    assert sw.nnz == int(np.count_nonzero(dense))


# -- round trips -------------------------------------------------------------------------------
@settings(max_examples=150)
@given(sparse_dense(fp32_values))
def test_exact_roundtrip(w):
    sw = F.pack(w, "exact")
    _check_canonical(sw, w)
    back = F.unpack(sw)
    assert back.dtype == np.float32 and back.shape == w.shape
    # bit-exact except that -0.0 (never stored) comes back as +0.0
    np.testing.assert_array_equal(back.view(np.uint32), np.where(w == 0, np.float32(0), w).view(np.uint32))
    arrays = F.to_arrays(sw)
    assert set(arrays) == {"row_offsets", "indices", "values"}
    assert all(a.dtype in (np.int32, np.float32) for a in arrays.values())
    again = F.from_arrays(w.shape, arrays, "exact")
    np.testing.assert_array_equal(F.unpack(again), back)


@settings(max_examples=150)
@given(sparse_dense(fp16_values))
def test_packed32_roundtrip_fp16_values(w):
    sw = F.pack(w, "packed32")
    _check_canonical(sw, w)
    np.testing.assert_array_equal(F.unpack(sw).view(np.uint32), np.where(w == 0, np.float32(0), w).view(np.uint32))
    words = sw.to_packed32_words()
    assert words.dtype == np.uint32 and words.size == sw.nnz
    np.testing.assert_array_equal(words >> 16, sw.indices)
    np.testing.assert_array_equal((words & 0xFFFF).astype(np.uint16), sw.values.astype(np.float16).view(np.uint16))
    arrays = F.to_arrays(sw)
    assert set(arrays) == {"row_offsets", "packed"} and arrays["packed"].dtype == np.int32
    again = F.from_arrays(w.shape, arrays, "packed32")
    assert again.mode == "packed32"
    np.testing.assert_array_equal(again.indices, sw.indices)
    np.testing.assert_array_equal(again.values.view(np.uint32), sw.values.view(np.uint32))


@settings(max_examples=60)
@given(sparse_dense(st.floats(-60000, 60000, width=32)))
def test_packed32_rounds_fp32_to_fp16(w):
    sw = F.pack(w, "packed32")
    rounded = w.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(F.unpack(sw), rounded)
    max_abs, max_rel = F.packed32_rounding_error(w)
    assert max_abs == pytest.approx(float(np.max(np.abs(rounded.astype(np.float64) - w))) if w.size else 0.0)
    # half an fp16 ulp: 2^-11 relative for normal values, 2^-25 absolute in the subnormal range
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    assert max_abs <= max(2.0 ** -11 * scale, 2.0 ** -25)
    assert max_rel == (max_abs / scale if scale else 0.0)


@settings(max_examples=60)
@given(sparse_dense(fp32_values))
def test_stats_consistent(w):
    sw = F.pack(w)
    s = F.stats(sw)
    k = w.shape[0]
    assert s.nnz == np.count_nonzero(w)
    np.testing.assert_array_equal(s.nnz_per_channel, np.count_nonzero(w.reshape(k, -1), axis=1))
    assert s.empty_channels == int(np.sum(np.count_nonzero(w.reshape(k, -1), axis=1) == 0))
    assert s.dense_bytes == 4 * w.size
    assert s.packed_bytes == 4 * (k + 1) + 8 * s.nnz
    assert s.density + s.sparsity == pytest.approx(1.0)
    with np.errstate(over="ignore"):
        fits_fp16 = bool(np.all(np.isfinite(w.astype(np.float16))))
    if fits_fp16:
        assert F.pack(w, "packed32").packed_bytes() == 4 * (k + 1) + 4 * np.count_nonzero(w.astype(np.float16))


def test_fully_dense_and_fully_empty():
    w = np.arange(1, 1 + 2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3)
    sw = F.pack(w)
    assert F.stats(sw).sparsity == 0.0 and sw.nnz == w.size
    empty = F.pack(np.zeros((4, 2, 1, 1), np.float32))
    assert empty.nnz == 0 and F.stats(empty).empty_channels == 4
    np.testing.assert_array_equal(empty.row_offsets, np.zeros(5, np.int32))
    np.testing.assert_array_equal(F.unpack(empty), np.zeros((4, 2, 1, 1), np.float32))
    arrays = F.to_arrays(F.pack(np.zeros((4, 2, 1, 1), np.float32), "packed32"))
    assert arrays["packed"].size == 0
    assert F.from_arrays((4, 2, 1, 1), arrays, "packed32").nnz == 0


# -- C*R*S limits --------------------------------------------------------------------------------
def test_packed32_index_limit():
    ok = np.zeros((2, 4096, 4, 4), np.float32)  # C*R*S = 65536: the largest 16-bit index is 65535
    ok[1, -1, -1, -1] = 1.5
    ok[0, 0, 0, 0] = -2.0
    sw = F.pack(ok, "packed32")
    words = sw.to_packed32_words()
    assert int(words[-1] >> 16) == 65535
    np.testing.assert_array_equal(F.unpack(F.from_arrays(ok.shape, F.to_arrays(sw), "packed32")), ok)
    too_big = np.zeros((1, 65537, 1, 1), np.float32)
    too_big[0, -1] = 1.0
    with pytest.raises(FormatError, match="C\\*R\\*S <= 65536"):
        F.pack(too_big, "packed32")
    with pytest.raises(FormatError, match="C\\*R\\*S"):
        F.pack(np.zeros((1, 4097, 4, 4), np.float32), "packed32")
    exact = F.pack(too_big, "exact")  # exact mode has int32 indices
    assert exact.indices.tolist() == [65536]
    with pytest.raises(FormatError, match="C\\*R\\*S"):
        exact.to_packed32_words()


def test_packed32_refuses_fp16_overflow_and_unrounded_values():
    with pytest.raises(FormatError, match="overflow fp16"):
        F.pack(np.full((1, 1, 1, 1), 70000.0, np.float32), "packed32")
    sw = F.pack(np.full((1, 1, 1, 2), 0.1, np.float32), "exact")
    with pytest.raises(FormatError, match="fp16-representable"):
        sw.to_packed32_words()
    with pytest.raises(FormatError, match="fp16-representable"):
        F.SparseConvWeight((1, 1, 1, 2), [0, 1], [0], [0.1], mode="packed32")


def test_pack_rejects_bad_dense_input():
    with pytest.raises(FormatError, match="4-D"):
        F.pack(np.ones((2, 3, 3)))
    with pytest.raises(FormatError, match="floating"):
        F.pack(np.ones((1, 1, 1, 1), np.int32))
    with pytest.raises(FormatError, match="NaN or Inf"):
        F.pack(np.array([np.nan], np.float32).reshape(1, 1, 1, 1))
    with pytest.raises(FormatError, match="unknown weight mode"):
        F.pack(np.ones((1, 1, 1, 1), np.float32), "int8")


# -- corrupt blobs --------------------------------------------------------------------------------
GOOD = dict(shape=(3, 2, 2, 2), row_offsets=[0, 2, 2, 5], indices=[1, 6, 0, 3, 7], values=[1.0, -2.0, 3.0, 4.0, 5.0])


def _make(**changes):
    kw = dict(GOOD)
    kw.update(changes)
    return F.SparseConvWeight(kw["shape"], kw["row_offsets"], kw["indices"], kw["values"], kw.get("mode", "exact"))


def test_good_blob_is_accepted():
    sw = _make()
    dense = F.unpack(sw)
    assert dense[0, 0, 0, 1] == 1.0 and dense[0, 1, 1, 0] == -2.0 and dense[2, 1, 1, 1] == 5.0
    assert sw.nnz_per_channel().tolist() == [2, 0, 3]


@pytest.mark.parametrize("changes,field", [
    (dict(row_offsets=[0, 3, 2, 5]), "row_offsets not monotone"),
    (dict(row_offsets=[1, 2, 2, 5]), "row_offsets\\[0\\]"),
    (dict(row_offsets=[0, 2, 5]), "row_offsets must have K\\+1"),
    (dict(row_offsets=[0, 2, 2, 4]), "indices has 5 entries"),
    (dict(row_offsets=[0, 0, 0, 9], indices=list(range(9)), values=[1.0] * 9), "row_offsets: output channel 2"),
    (dict(row_offsets=[0, 2, 2, 2 ** 33]), "row_offsets has entries outside the int32 range"),
    (dict(row_offsets=[0, 2.5, 2, 5]), "row_offsets must hold integers"),
    (dict(indices=[1, 6, 0, 3, 8]), "indices out of range"),
    (dict(indices=[1, 6, 0, 3, -1]), "indices out of range"),
    (dict(indices=[6, 1, 0, 3, 7]), "indices of output channel 0 not strictly increasing"),
    (dict(indices=[1, 6, 0, 3, 3]), "indices of output channel 2 not strictly increasing"),
    (dict(indices=[1, 6, 0, 3]), "indices has 4 entries"),
    (dict(indices=[1, 6, 0, 3, 2 ** 32 + 1]), "indices has entries outside the int32 range"),
    (dict(values=[1.0, 2.0, 3.0, 4.0]), "values has 4 entries"),
    (dict(values=[1.0, float("nan"), 3.0, 4.0, 5.0]), "values contain NaN"),
    (dict(values=[1.0, float("inf"), 3.0, 4.0, 5.0]), "values contain NaN or Inf"),
    (dict(shape=(3, 2, 2)), "shape must be 4"),
    (dict(shape=(3, 0, 2, 2)), "shape must be 4"),
    (dict(mode="sparse"), "unknown mode"),
])
def test_corrupt_blob_rejected(changes, field):
    with pytest.raises(FormatError, match=field):
        _make(**changes)


def test_channel_boundary_allows_index_reset():
    # the order restarts at each output channel: [5] then [0] is fine across the boundary
    sw = F.SparseConvWeight((2, 1, 2, 3), [0, 1, 2], [5, 0], [1.0, 2.0])
    assert F.unpack(sw)[0, 0, 1, 2] == 1.0 and F.unpack(sw)[1, 0, 0, 0] == 2.0


def test_from_arrays_rejects_corrupt_attribute_tensors():
    sw = F.pack(np.eye(4, dtype=np.float32).reshape(4, 1, 2, 2) * 3.0, "packed32")
    arrays = F.to_arrays(sw)
    with pytest.raises(FormatError, match="missing field 'packed'"):
        F.from_arrays(sw.shape, {"row_offsets": arrays["row_offsets"]}, "packed32")
    with pytest.raises(FormatError, match="missing field 'indices'"):
        F.from_arrays(sw.shape, arrays, "exact")
    bad = dict(arrays)
    bad["packed"] = arrays["packed"].copy()
    bad["packed"][1] = np.int32((9 << 16) | 0x3C00)  # index 9 >= C*R*S = 4
    with pytest.raises(FormatError, match="indices out of range"):
        F.from_arrays(sw.shape, bad, "packed32")
    bad["packed"] = arrays["packed"].copy()
    bad["packed"][0] = np.int32(0x7E00)  # fp16 NaN
    with pytest.raises(FormatError, match="NaN"):
        F.from_arrays(sw.shape, bad, "packed32")
    with pytest.raises(FormatError, match="unknown weight mode"):
        F.from_arrays(sw.shape, arrays, "packed16")
