"""Shared helpers of the kernel tests: random sparse weights (uniform or skewed) and a conv case table."""
import collections

import numpy as np

from trt_sparse import format as fmt

Case = collections.namedtuple(
    "Case", "name N C K H W R S strides pads dilations sparsity pattern bias activation")


def case(name, N=1, C=8, K=8, H=9, W=9, R=3, S=3, strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1),
         sparsity=0.9, pattern="uniform", bias=True, activation=0):
    """A Case with defaults (3x3, pad 1, stride 1, 90% uniform sparsity, bias, no activation)."""
    return Case(name, N, C, K, H, W, R, S, tuple(strides), tuple(pads), tuple(dilations), sparsity, pattern,
                bias, activation)


def random_sparse_weight(rng, K, C, R, S, sparsity, pattern="uniform"):
    """A SparseConvWeight with the given sparsity; pattern 'skewed' makes some channels dense, some empty,
    'vectorV' shares one mask among V consecutive output channels (vector-sparse pruning)."""
    w = rng.standard_normal((K, C, R, S)).astype(np.float32)
    if pattern == "uniform":
        mask = rng.random((K, C, R, S)) >= sparsity
    elif pattern == "skewed":
        dens = rng.choice([0.0, 1.0, 1.0 - sparsity, 0.02], size=K, p=[0.3, 0.15, 0.4, 0.15])
        mask = rng.random((K, C, R, S)) < dens[:, None, None, None]
    elif pattern.startswith("vector"):  # vectorV: V consecutive output channels share one mask
        v = int(pattern[len("vector"):])
        mask = np.repeat(rng.random(((K + v - 1) // v, C, R, S)) >= sparsity, v, axis=0)[:K]
    elif pattern == "empty_channels":
        mask = rng.random((K, C, R, S)) >= sparsity
        mask[rng.random(K) < 0.5] = False
    else:
        raise ValueError(pattern)
    w = np.where(mask, w, 0.0).astype(np.float32)
    return fmt.pack(w)


#: edge cases of the reference tests plus the benchmark geometries, small enough for the float64 reference
CASES = [
    case("basic"),
    case("odd_sizes", C=5, K=7, H=13, W=11),
    case("c1", C=1, K=6, H=10, W=12, sparsity=0.5),
    case("k1", C=9, K=1, H=8, W=8, sparsity=0.5),
    case("empty_channels", C=16, K=24, pattern="empty_channels", sparsity=0.8),
    case("skewed", C=32, K=40, H=12, W=12, pattern="skewed"),
    case("sp0_dense", C=8, K=12, H=7, W=7, sparsity=0.0),
    case("sp50", C=16, K=16, H=15, W=15, sparsity=0.5),
    case("sp99", C=32, K=32, H=14, W=14, sparsity=0.99),
    case("sp100_all_zero", C=8, K=8, H=8, W=8, sparsity=1.0),
    case("pad2_asym", C=6, K=10, H=11, W=9, pads=(2, 0, 1, 3)),
    case("pad3_big", C=4, K=5, H=6, W=7, pads=(3, 3, 3, 3)),
    case("nopad", C=8, K=8, H=10, W=10, pads=(0, 0, 0, 0)),
    case("stride2", C=12, K=20, H=17, W=15, strides=(2, 2)),
    case("stride2_asym_pad", C=8, K=9, H=16, W=16, strides=(2, 2), pads=(0, 1, 1, 0)),
    case("stride3", C=6, K=8, H=19, W=17, strides=(3, 3)),
    case("stride_hw_diff", C=5, K=6, H=12, W=13, strides=(1, 2)),
    case("dilation2", C=6, K=8, H=15, W=14, dilations=(2, 2), pads=(2, 2, 2, 2)),
    case("1x1", C=24, K=40, H=9, W=9, R=1, S=1, pads=(0, 0, 0, 0)),
    case("1x1_stride2", C=16, K=24, H=13, W=13, R=1, S=1, pads=(0, 0, 0, 0), strides=(2, 2)),
    case("1x1_pad", C=8, K=8, H=6, W=6, R=1, S=1, pads=(1, 2, 0, 1)),
    case("5x5", C=6, K=10, H=13, W=13, R=5, S=5, pads=(2, 2, 2, 2), sparsity=0.7),
    case("7x7_s2", C=3, K=16, H=23, W=23, R=7, S=7, strides=(2, 2), pads=(3, 3, 3, 3), sparsity=0.6),
    case("3x1", C=8, K=8, H=10, W=10, R=3, S=1, pads=(1, 0, 1, 0)),
    case("batch3", N=3, C=12, K=20, H=10, W=12),
    case("batch2_s2", N=2, C=16, K=16, H=14, W=14, strides=(2, 2)),
    case("relu", C=16, K=16, H=12, W=12, activation=1),
    case("clip", C=16, K=16, H=12, W=12, activation=2),
    case("nobias_relu", C=8, K=12, H=9, W=9, bias=False, activation=1),
    case("wide", C=16, K=16, H=5, W=70),
    case("tall", C=16, K=16, H=70, W=5),
    case("tiny_1x1_image", C=8, K=8, H=1, W=1),
    case("k_tail_70", C=24, K=70, H=8, W=8),
    case("c_many", C=300, K=16, H=6, W=6, sparsity=0.95),
    case("resnet_like_7", N=2, C=64, K=64, H=7, W=7, sparsity=0.9),
    case("resnet_like_14", C=64, K=96, H=14, W=14, sparsity=0.95),
    case("vector16", C=40, K=48, H=12, W=20, pattern="vector16", sparsity=0.8),
    case("vector16_k_tail", C=24, K=40, H=9, W=11, pattern="vector16", sparsity=0.7),
    case("vector8_stride2", C=16, K=32, H=15, W=17, strides=(2, 2), pattern="vector8", sparsity=0.75),
    case("vector16_dil2_1x3", C=20, K=32, H=10, W=13, S=3, R=1, dilations=(2, 2), pads=(0, 2, 0, 2),
         pattern="vector16", sparsity=0.6),
]
