"""Float64 numpy reference of the sparse convolution, computed from the packed format.

The weight is never densified: every stored nonzero ``w[k, c, r, s]`` gathers
its shifted, strided input plane ``x[n, c, p*sh - pt + r*dh, q*sw - pl + s*dw]``
for all output pixels at once, the products are summed per output channel with
``np.add.reduceat`` (nonzeros are stored grouped by output channel), then bias
and the fused activation are applied (docs/FORMAT.md "Conv semantics").
Nonzeros are processed in chunks so the gathered block stays bounded in memory.
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

    out = np.zeros((N, K, P, Q), dtype=np.float64)
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64).reshape(-1)
        if b.size != K:
            raise TrtSparseError("bias has {} entries, the weight has K = {} output channels".format(b.size, K))
    nnz = weight.nnz
    if nnz and N:
        # zero-padded input; only the rows/cols some output pixel can reach are kept
        hp = max(H + pt + pb, (P - 1) * sh + (R - 1) * dh + 1)
        wp = max(W + pl + pr, (Q - 1) * sw + (S - 1) * dw + 1)
        xp = np.zeros((N, C, hp, wp), dtype=np.float64)
        xp[:, :, pt:pt + H, pl:pl + W] = x
        c_idx, r_idx, s_idx = weight.crs_indices()
        k_idx = weight.channels()
        vals = weight.values.astype(np.float64)
        rows = np.arange(P, dtype=np.intp) * sh
        cols = np.arange(Q, dtype=np.intp) * sw
        step = max(1, _CHUNK_ELEMENTS // (N * P * Q))
        for a in range(0, nnz, step):
            b_ = min(nnz, a + step)
            ci = c_idx[a:b_].astype(np.intp)[:, None, None]
            hi = (r_idx[a:b_].astype(np.intp) * dh)[:, None, None] + rows[None, :, None]
            wi = (s_idx[a:b_].astype(np.intp) * dw)[:, None, None] + cols[None, None, :]
            gathered = xp[:, ci, hi, wi]  # (N, nz, P, Q)
            gathered *= vals[a:b_][None, :, None, None]
            ks = k_idx[a:b_]
            starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
            out[:, ks[starts]] += np.add.reduceat(gathered, starts, axis=1)
    if bias is not None:
        out += b[None, :, None, None]
    return _activate(out, activation, float(clip_min), float(clip_max))
