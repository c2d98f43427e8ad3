"""Float64 numpy reference of the sparse convolution, computed from the packed format.

The weight is never densified. Nonzeros are taken one kernel tap (r, s) at a
time: the tap's shifted, strided view of the zero-padded input
``x[n, c, p*sh - pt + r*dh, q*sw - pl + s*dw]`` (all output pixels at once) is
gathered row by row for each nonzero's input channel c, scaled by its value and
summed per output channel with ``np.add.reduceat`` (inside a tap the nonzeros
keep the canonical output-channel order); then bias and the fused activation
are applied (docs/FORMAT.md "Conv semantics"). Nonzeros are processed in chunks
so a gathered block stays bounded in memory; the padded input is held once in
float64 plus one tap's view of it.
"""
import numpy as np

from .errors import TrtSparseError, UnsupportedError
from .format import SparseConvWeight

ACT_NONE, ACT_RELU, ACT_CLIP = 0, 1, 2
_CHUNK_ELEMENTS = 1 << 22  # doubles per gathered block (32 MiB)


def conv_output_size(H, W, R, S, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1)):
    """Output (P, Q) of a 2-D Conv; pads are (top, left, bottom, right). Raises UnsupportedError if < 1."""
    sh, sw = (int(v) for v in strides)
    pt, pl, pb, pr = (int(v) for v in pads)
    dh, dw = (int(v) for v in dilations)
    if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
        raise UnsupportedError(
            "invalid conv geometry: strides {} and dilations {} must be >= 1, pads {} >= 0".format(
                (sh, sw), (dh, dw), (pt, pl, pb, pr))
        )
    p = (int(H) + pt + pb - dh * (int(R) - 1) - 1) // sh + 1
    q = (int(W) + pl + pr - dw * (int(S) - 1) - 1) // sw + 1
    if p < 1 or q < 1:
        raise UnsupportedError(
            "conv output would be empty: input {}x{}, kernel {}x{}, strides {}, pads {}, dilations {} "
            "give {}x{}".format(H, W, R, S, (sh, sw), (pt, pl, pb, pr), (dh, dw), p, q)
        )
    return p, q


def _activate(out, activation, clip_min, clip_max):
    if activation == ACT_NONE:
        return out
    if activation == ACT_RELU:
        return np.maximum(out, 0.0, out=out)
    if activation == ACT_CLIP:
        if not clip_min <= clip_max:
            raise UnsupportedError("clip activation needs clip_min <= clip_max, got {} > {}".format(clip_min, clip_max))
        return np.clip(out, clip_min, clip_max, out=out)
    raise UnsupportedError("unknown activation code {!r} (0 none, 1 relu, 2 clip)".format(activation))


def _accumulate(out, x, weight, pq, strides, pads, dilations):
    """Add every nonzero's contribution into ``out`` (K, N*P*Q), one kernel tap (r, s) at a time."""
    K, C, R, S = weight.shape
    N, _, H, W = x.shape
    P, Q = pq
    sh, sw = strides
    pt, pl, pb, pr = pads
    dh, dw = dilations
    npq = N * P * Q
    xp = np.zeros((C, N, H + pt + pb, W + pl + pr), dtype=np.float64)  # zero-padded, channel-major
    xp[:, :, pt:pt + H, pl:pl + W] = x.transpose(1, 0, 2, 3)
    c_idx, r_idx, s_idx = weight.crs_indices()
    tap = r_idx.astype(np.int64) * S + s_idx
    order = np.argsort(tap, kind="stable")  # grouped by tap; output-channel order kept inside a tap
    tap, c_idx = tap[order], c_idx[order].astype(np.intp)
    k_idx = weight.channels()[order]
    vals = weight.values.astype(np.float64)[order]
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(tap)) + 1, [tap.size]))
    step = max(1, _CHUNK_ELEMENTS // npq)
    for t0, t1 in zip(bounds[:-1], bounds[1:]):
        r, s = divmod(int(tap[t0]), S)
        # input seen by tap (r, s) at every output pixel: a strided view of the padded input
        plane = xp[:, :, r * dh:r * dh + (P - 1) * sh + 1:sh, s * dw:s * dw + (Q - 1) * sw + 1:sw]
        used = np.unique(c_idx[t0:t1])
        if used.size < C:
            rows_x = np.ascontiguousarray(plane[used]).reshape(used.size, npq)
            rows = np.searchsorted(used, c_idx[t0:t1])
        else:
            rows_x = np.ascontiguousarray(plane).reshape(C, npq)
            rows = c_idx[t0:t1]
        for a in range(t0, t1, step):  # chunks bound the gathered block to _CHUNK_ELEMENTS doubles
            b = min(t1, a + step)
            block = np.take(rows_x, rows[a - t0:b - t0], axis=0)  # (nz, N*P*Q)
            block *= vals[a:b, None]
            ks = k_idx[a:b]
            starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
            out[ks[starts]] += np.add.reduceat(block, starts, axis=0)


def sparse_conv2d(x, weight, bias=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
                  activation=0, clip_min=0.0, clip_max=6.0, group=1):
    """float64 (N, K, P, Q) output of a sparse Conv with fused bias and activation.

    ``x`` (N, C, H, W) any float dtype; ``weight`` a SparseConvWeight (K, C, R, S);
    ``bias`` (K,) or None; ``pads`` (top, left, bottom, right); ``activation``
    0 none, 1 relu, 2 clip(clip_min, clip_max). Only ``group=1`` is supported.
    """
    if not isinstance(weight, SparseConvWeight):
        raise TrtSparseError("weight must be a trt_sparse.format.SparseConvWeight, got {}".format(type(weight).__name__))
    if int(group) != 1:
        raise UnsupportedError("grouped convolution (group = {}) is not supported; only group = 1".format(group))
    activation = int(activation)
    if activation not in (ACT_NONE, ACT_RELU, ACT_CLIP):
        raise UnsupportedError("unknown activation code {!r} (0 none, 1 relu, 2 clip)".format(activation))
    x = np.asarray(x)
    if x.ndim != 4:
        raise TrtSparseError("input must be 4-D (N, C, H, W), got shape {}".format(x.shape))
    if not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
        raise TrtSparseError("input must be numeric, got dtype {}".format(x.dtype))
    K, C, R, S = weight.shape
    N, xc, H, W = x.shape
    if xc != C:
        raise TrtSparseError("input has {} channels, the weight {} expects C = {}".format(xc, weight.shape, C))
    if len(strides) != 2 or len(dilations) != 2 or len(pads) != 4:
        raise UnsupportedError("a 2-D conv needs 2 strides, 2 dilations and 4 pads")
    P, Q = conv_output_size(H, W, R, S, strides, pads, dilations)
    sh, sw = (int(v) for v in strides)
    dh, dw = (int(v) for v in dilations)
    pt, pl, pb, pr = (int(v) for v in pads)

    if bias is not None:
        b = np.asarray(bias, dtype=np.float64).reshape(-1)
        if b.size != K:
            raise TrtSparseError("bias has {} entries, the weight has K = {} output channels".format(b.size, K))
    out = np.zeros((K, N, P, Q), dtype=np.float64)  # channel-major while accumulating
    if weight.nnz and N:
        _accumulate(out.reshape(K, N * P * Q), x, weight, (P, Q), (sh, sw), (pt, pl, pb, pr), (dh, dw))
    out = np.ascontiguousarray(out.transpose(1, 0, 2, 3))
    if bias is not None:
        out += b[None, :, None, None]
    return _activate(out, activation, float(clip_min), float(clip_max))
