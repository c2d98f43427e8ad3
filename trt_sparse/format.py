"""Packed sparse weight format for Conv weights of shape (K, C, R, S) (docs/FORMAT.md).

Canonical order: CSR over output channels. For output channel ``k`` the nonzeros
``row_offsets[k]:row_offsets[k+1]`` are sorted by their flat index
``c*R*S + r*S + s``. Two value encodings:

* ``exact``    -- fp32 values + int32 flat indices (8 bytes per nonzero); an fp32
  model is never rounded.
* ``packed32`` -- the compact mode: one 32-bit word per nonzero,
  ``word = (index << 16) | fp16_bits(value)``; needs ``C*R*S <= 65536`` and is
  lossless only for fp16-representable values.

Both encodings carry int32 ``row_offsets`` of length K+1. Kernels re-layout this
canonical form at engine-build time.
"""
from collections import namedtuple

import numpy as np

from .errors import FormatError

FORMAT_VERSION = 1
MODES = ("exact", "packed32")
PACKED32_MAX_INDEX = 1 << 16  # C*R*S must be <= this for the 16-bit index

WeightStats = namedtuple(
    "WeightStats",
    "shape nnz density sparsity nnz_per_channel empty_channels dense_bytes packed_bytes mode",
)


class SparseConvWeight(object):
    """A Conv weight (K, C, R, S) in the canonical packed sparse format.

    Attributes: ``shape`` (K, C, R, S) tuple, ``row_offsets`` int32 [K+1],
    ``indices`` int32 [nnz] flat (c, r, s) indices, ``values`` float32 [nnz],
    ``mode`` ("exact" or "packed32": how it is stored; values are then fp16-exact).
    """

    __slots__ = ("shape", "row_offsets", "indices", "values", "mode")

    def __init__(self, shape, row_offsets, indices, values, mode="exact"):
        self.shape = tuple(int(v) for v in shape)
        self.row_offsets = _as_int32("row_offsets", row_offsets)
        self.indices = _as_int32("indices", indices)
        self.values = np.ascontiguousarray(values, dtype=np.float32)
        self.mode = mode
        validate(self)

    # -- sizes -----------------------------------------------------------------
    @property
    def nnz(self):
        """Number of stored nonzeros."""
        return int(self.row_offsets[-1])

    @property
    def crs(self):
        """C*R*S: the length of one output channel's dense filter."""
        _, c, r, s = self.shape
        return c * r * s

    def nnz_per_channel(self):
        """int64 [K] nonzero count of each output channel."""
        return np.diff(self.row_offsets.astype(np.int64))

    def packed_bytes(self):
        """Bytes of the stored form (offsets + per-nonzero payload)."""
        per_nz = 4 if self.mode == "packed32" else 8
        return 4 * (self.shape[0] + 1) + per_nz * self.nnz

    def channels(self):
        """int32 [nnz]: the output channel of each nonzero."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int32), self.nnz_per_channel())

    def crs_indices(self):
        """Three int32 arrays (c, r, s) of each nonzero."""
        _, _, r, s = self.shape
        c_idx, rem = np.divmod(self.indices, r * s)
        r_idx, s_idx = np.divmod(rem, s)
        return c_idx.astype(np.int32), r_idx.astype(np.int32), s_idx.astype(np.int32)

    def to_packed32_words(self):
        """uint32 [nnz] words (index << 16) | fp16 bits; raises FormatError if not representable."""
        return encode_packed32(self.indices, self.values, self.shape)

    def __repr__(self):
        return "SparseConvWeight(shape={}, nnz={}, mode={})".format(self.shape, self.nnz, self.mode)


def _as_int32(field, arr):
    """Contiguous int32 copy of an integer array; FormatError naming ``field`` if it would not be exact."""
    a = np.asarray(arr)
    if a.dtype == np.int32:
        return np.ascontiguousarray(a)
    if a.size and not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.bool_)):
        if not (np.issubdtype(a.dtype, np.floating) and np.all(np.isfinite(a)) and np.all(a == np.round(a))):
            raise FormatError("{} must hold integers, got dtype {}".format(field, a.dtype))
    if a.size and (a.min() < -(2 ** 31) or a.max() >= 2 ** 31):
        raise FormatError("{} has entries outside the int32 range".format(field))
    return np.ascontiguousarray(a, dtype=np.int32)


# -- packing ---------------------------------------------------------------------
def pack(weight, mode="exact"):
    """Pack a dense (K, C, R, S) weight; zeros (and -0.0) are dropped.

    ``mode="packed32"`` rounds values to fp16 (use :func:`packed32_rounding_error`
    to see by how much) and refuses C*R*S > 65536 or values that overflow fp16.
    """
    if mode not in MODES:
        raise FormatError("unknown weight mode {!r}; expected one of {}".format(mode, ", ".join(MODES)))
    w = np.asarray(weight)
    if w.ndim != 4:
        raise FormatError("Conv weight must be 4-D (K, C, R, S), got shape {}".format(w.shape))
    if not np.issubdtype(w.dtype, np.floating):
        raise FormatError("Conv weight must be floating point, got {}".format(w.dtype))
    if not np.all(np.isfinite(w)):
        raise FormatError("Conv weight contains NaN or Inf")
    k = w.shape[0]
    flat = w.reshape(k, -1)
    if flat.shape[1] >= 2 ** 31:
        raise FormatError("C*R*S = {} does not fit an int32 index".format(flat.shape[1]))
    if mode == "packed32":
        _check_packed32_shape(w.shape)
        with np.errstate(over="ignore"):
            flat = flat.astype(np.float16)
        if not np.all(np.isfinite(flat)):
            raise FormatError("weight values overflow fp16 (|w| > 65504): use mode 'exact'")
        flat = flat.astype(np.float32)
    else:
        flat = flat.astype(np.float32)
    rows, cols = np.nonzero(flat)  # row-major: sorted by (k, flat index)
    counts = np.bincount(rows, minlength=k)
    offsets = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if offsets[-1] >= 2 ** 31:
        raise FormatError("nnz = {} does not fit int32 offsets".format(offsets[-1]))
    return SparseConvWeight(w.shape, offsets, cols, flat[rows, cols], mode)


def unpack(sw, dtype=np.float32):
    """Dense (K, C, R, S) array of a SparseConvWeight."""
    k = sw.shape[0]
    dense = np.zeros((k, sw.crs), dtype=dtype)
    dense[sw.channels(), sw.indices] = sw.values
    return dense.reshape(sw.shape)


def packed32_rounding_error(weight):
    """Max absolute and relative (to max |w|) error of rounding a dense weight to fp16."""
    w = np.asarray(weight, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.abs(w.astype(np.float16).astype(np.float64) - w)
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    max_abs = float(err.max()) if w.size else 0.0
    return max_abs, (max_abs / scale if scale > 0 else 0.0)


def _check_packed32_shape(shape):
    k, c, r, s = (int(v) for v in shape)
    if c * r * s > PACKED32_MAX_INDEX:
        raise FormatError(
            "packed32 mode needs C*R*S <= {} for its 16-bit index, weight {} has C*R*S = {}; "
            "use mode 'exact'".format(PACKED32_MAX_INDEX, (k, c, r, s), c * r * s)
        )


def encode_packed32(indices, values, shape):
    """uint32 words ``(index << 16) | fp16_bits(value)``; values must be fp16-exact."""
    _check_packed32_shape(shape)
    with np.errstate(over="ignore"):
        v16 = np.asarray(values, dtype=np.float32).astype(np.float16)
    if not np.array_equal(v16.astype(np.float32), np.asarray(values, dtype=np.float32)):
        raise FormatError("values are not fp16-representable; pack with mode 'packed32' first")
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= PACKED32_MAX_INDEX):
        raise FormatError("packed32 index out of the 16-bit range")
    return ((idx.astype(np.uint32) << np.uint32(16)) | v16.view(np.uint16).astype(np.uint32)).astype(np.uint32)


def decode_packed32(words):
    """(indices int32, values float32) of packed32 words (uint32 or int32 array)."""
    u = np.asarray(words).astype(np.int64) & 0xFFFFFFFF
    indices = (u >> 16).astype(np.int32)
    values = (u & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)
    return indices, values


# -- validation ------------------------------------------------------------------
def validate(sw):
    """Check a SparseConvWeight's invariants; raise FormatError naming the broken field."""
    if len(sw.shape) != 4 or min(sw.shape) < 1:
        raise FormatError("shape must be 4 positive ints (K, C, R, S), got {}".format(sw.shape))
    if sw.mode not in MODES:
        raise FormatError("unknown mode {!r}".format(sw.mode))
    k = sw.shape[0]
    crs = sw.crs
    off = sw.row_offsets
    if off.ndim != 1 or off.size != k + 1:
        raise FormatError("row_offsets must have K+1 = {} entries, got {}".format(k + 1, off.size))
    if off[0] != 0:
        raise FormatError("row_offsets[0] must be 0, got {}".format(off[0]))
    d = np.diff(off.astype(np.int64))
    if np.any(d < 0):
        bad = int(np.argmax(d < 0))
        raise FormatError("row_offsets not monotone at output channel {}".format(bad))
    if np.any(d > crs):
        bad = int(np.argmax(d > crs))
        raise FormatError("row_offsets: output channel {} has {} nonzeros > C*R*S = {}".format(bad, d[bad], crs))
    nnz = int(off[-1])
    if sw.indices.ndim != 1 or sw.indices.size != nnz:
        raise FormatError("indices has {} entries, row_offsets says nnz = {}".format(sw.indices.size, nnz))
    if sw.values.ndim != 1 or sw.values.size != nnz:
        raise FormatError("values has {} entries, row_offsets says nnz = {}".format(sw.values.size, nnz))
    if nnz:
        idx = sw.indices
        if idx.min() < 0 or idx.max() >= crs:
            raise FormatError("indices out of range [0, C*R*S = {})".format(crs))
        # strictly increasing inside each output channel
        step = np.diff(idx.astype(np.int64))
        inner = np.ones(nnz - 1, dtype=bool) if nnz > 1 else np.zeros(0, dtype=bool)
        starts = off[1:-1]
        starts = starts[(starts > 0) & (starts < nnz)]
        inner[starts - 1] = False
        if np.any(step[inner] <= 0):
            pos = int(np.nonzero(inner & (step <= 0))[0][0]) + 1
            ch = int(np.searchsorted(off, pos, side="right") - 1)
            raise FormatError("indices of output channel {} not strictly increasing".format(ch))
        if not np.all(np.isfinite(sw.values)):
            raise FormatError("values contain NaN or Inf")
    if sw.mode == "packed32":
        _check_packed32_shape(sw.shape)
        with np.errstate(over="ignore"):
            fp16_exact = np.array_equal(sw.values.astype(np.float16).astype(np.float32), sw.values)
        if not fp16_exact:
            raise FormatError("packed32 weight holds values that are not fp16-representable")


def stats(sw):
    """WeightStats of a SparseConvWeight (nnz, density, per-channel nnz, bytes)."""
    k, c, r, s = sw.shape
    total = k * c * r * s
    per = sw.nnz_per_channel()
    return WeightStats(
        shape=sw.shape,
        nnz=sw.nnz,
        density=sw.nnz / float(total),
        sparsity=1.0 - sw.nnz / float(total),
        nnz_per_channel=per,
        empty_channels=int(np.sum(per == 0)),
        dense_bytes=4 * total,
        packed_bytes=sw.packed_bytes(),
        mode=sw.mode,
    )


# -- plugin attribute form (docs/FORMAT.md "ONNX node attributes") ------------------
def to_arrays(sw):
    """dict of numpy arrays as carried in the SparseConv2d node (int32 / float32 only)."""
    out = {"row_offsets": sw.row_offsets.astype(np.int32)}
    if sw.mode == "packed32":
        out["packed"] = sw.to_packed32_words().view(np.int32)
    else:
        out["indices"] = sw.indices.astype(np.int32)
        out["values"] = sw.values.astype(np.float32)
    return out


def from_arrays(shape, arrays, mode):
    """Inverse of :func:`to_arrays`; validates everything and raises FormatError if corrupt."""
    if mode not in MODES:
        raise FormatError("unknown weight mode {!r}".format(mode))
    try:
        offsets = np.asarray(arrays["row_offsets"])
        if mode == "packed32":
            indices, values = decode_packed32(arrays["packed"])
        else:
            indices, values = np.asarray(arrays["indices"]), np.asarray(arrays["values"])
    except KeyError as exc:
        raise FormatError("missing field {} for mode {}".format(exc, mode))
    return SparseConvWeight(shape, offsets, indices, values, mode)
