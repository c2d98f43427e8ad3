/*
 * Internal declarations shared by the kernel translation units (not installed).
 * Host code stays C++14 (gcc 7 / CUDA 10.2).
 */
#ifndef TRT_SPARSE_TSC_INTERNAL_H
#define TRT_SPARSE_TSC_INTERNAL_H

#include <cuda_runtime.h>
#include <stdint.h>

namespace tsc {

/* Register-tile kernel: geometry (R, S, stride) ids. */
enum TileGeom { GEOM_3x3_S1 = 0, GEOM_3x3_S2 = 1, GEOM_1x1_S1 = 2, GEOM_1x1_S2 = 3, GEOM_COUNT = 4 };
/* Register-tile configs: output channels per warp (KT) x pixels per lane (PH x PW);
 * TILE_CFGS configs per geometry, table generated in tile_dispatch.inc. */
static const int TILE_CFGS = 4;
struct TileCfgInfo { int kt, ph, pw; };
TileCfgInfo tile_cfg_info(int geom, int cfg);
inline int geom_stride(int geom) { return (geom == GEOM_3x3_S2 || geom == GEOM_1x1_S2) ? 2 : 1; }
inline int geom_rs(int geom) { return (geom == GEOM_3x3_S1 || geom == GEOM_3x3_S2) ? 3 : 1; }

/* Bits of an entry's code below the input channel: case = kl*R*S + r*S + s. */
static const int kCaseBits = 10;

struct TileParams {
    const void* x;
    void* y;
    const int2* entries;    /* per group: (value bits, c << kCaseBits | case), sorted by c; one readable entry past the end */
    const int* group_off;   /* G + 1 */
    const int* perm;        /* G * KT: output channel of slot, or -1 */
    const float* bias;      /* K (zeros when the model has none) */
    int N, C, H, W, K, P, Q;
    int pad_top, pad_left;
    int lw_log2;            /* lanes along the width = 1 << lw_log2 */
    int tiles_h, tiles_w;   /* warp tiles per image */
    int nsplit;             /* warps per block splitting the group's nonzeros */
    int vec;                /* 1: pad_left == 1, W % 4 == 0 and 16-byte aligned input (vector patch rows) */
    int act;
    float clip_min, clip_max;
};

struct GenericParams {
    const void* x;
    void* y;
    const int4* entries;    /* (value bits, c, r*dh, s*dw) CSR over output channels */
    const int* row_off;     /* K + 1 */
    const float* bias;
    int N, C, H, W, K, P, Q;
    int stride_h, stride_w, pad_top, pad_left;
    int act;
    float clip_min, clip_max;
};

/* Launchers: return the launch error (cudaSuccess when launched). */
cudaError_t launch_tile_f32(int geom, int cfg, const TileParams& p, cudaStream_t s);
cudaError_t launch_tile_f16(int geom, int cfg, const TileParams& p, cudaStream_t s);
/* Opt every tile kernel into `bytes` of dynamic shared memory (once per process). */
cudaError_t tile_set_smem_limit_f32(int bytes);
cudaError_t tile_set_smem_limit_f16(int bytes);
cudaError_t launch_generic(bool fp16, bool nhwc, const GenericParams& p, cudaStream_t s);
/* NCHW only: 4 consecutive output pixels per thread. */
cudaError_t launch_generic_vec(bool fp16, const GenericParams& p, cudaStream_t s);

/* Dynamic shared memory a tile launch needs (0 without split). */
inline size_t tile_smem_bytes(int geom, int cfg, int nsplit) {
    if (nsplit <= 1) return 0;
    TileCfgInfo c = tile_cfg_info(geom, cfg);
    return (size_t)nsplit * c.kt * c.ph * c.pw * 32 * sizeof(float);
}

}  // namespace tsc
#endif
