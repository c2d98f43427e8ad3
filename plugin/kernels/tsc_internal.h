/*
 * Internal declarations shared by the kernel translation units (not installed).
 * Host code stays C++14 (gcc 7 / CUDA 10.2).
 */
#ifndef TRT_SPARSE_TSC_INTERNAL_H
#define TRT_SPARSE_TSC_INTERNAL_H

#include <cuda_runtime.h>
#include <stdint.h>

namespace tsc {

/* Programmatic dependent launch (PDL, sm_90+; a no-op where the kernel was not launched with the attribute and on
 * older devices): pdl_trigger() lets the next kernel of the stream, if it was launched with PDL, start its blocks
 * (they run until their own pdl_wait()); pdl_wait() blocks until the previous kernel of the stream has completed and
 * its memory is visible. A kernel reads only plan constants (weights, lists, bias) before pdl_wait() and writes
 * nothing to global memory before it. */
#if defined(__CUDACC__)
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
#endif

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


/* Shared-memory kernel (smem_kernel.cuh): tiles (lanes along the width LW, pixels per lane PXH x PXW). */
static const int SMEM_TILES = 3;
struct SmemTileInfo { int lw, pxh, pxw; };
inline SmemTileInfo smem_tile_info(int tile) {
    static const SmemTileInfo t[SMEM_TILES] = {{16, 4, 2}, {8, 4, 2}, {8, 2, 1}};
    return t[tile];
}
inline int smem_tile_h(int tile) { SmemTileInfo t = smem_tile_info(tile); return (32 / t.lw) * t.pxh; }
inline int smem_tile_w(int tile) { SmemTileInfo t = smem_tile_info(tile); return t.lw * t.pxw; }

struct SmemParams {
    const void* x;
    void* y;
    const int2* entries;    /* (value bits, byte offset in the staged chunk) lists */
    const int* seg;         /* per (listed chunk, warp, channel of the warp): list begin; one more at the end */
    const int* gch_off;     /* groups + 1: CSR of the group's non-empty chunks into chunk_ids */
    const int* chunk_ids;   /* chunk index (input channels chunk*cc ..) */
    const int* perm;        /* groups * channels per block: output channel, or -1 */
    const float* bias;      /* K */
    int N, C, H, W, K, P, Q;
    int sh, sw, pad_top, pad_left;
    int lead;               /* extra staged columns on the left so that vector copies are aligned */
    int in_h, pitch, cstride, cc; /* staged rows, row pitch, channel stride (elements), channels per chunk */
    int tiles_h, tiles_w, groups;
    int ns;                 /* warps splitting one slot's nonzeros (1, 2, 4, 8) */
    int cl;                 /* smem kernel: blocks of a thread-block cluster splitting the group's input-channel
                             * chunks (1: no cluster; > 1 only on sm_90+, partial sums reduced through DSMEM) */
    int vec;                /* elements per staging copy: 4 (W % 4 == 0, 4-element aligned input), 2 (pair copies:
                             * even W, pair-aligned input, sm_80+ cp.async), 1 (element by element) */
    int act;
    float clip_min, clip_max;
    int dense_chunks;       /* > 0: every group lists all its dense_chunks chunks (gch_off[g] = g * dense_chunks,
                             * chunk_ids[gch_off[g] + j] = j): kernels may skip those two dependent loads */
    int st_nv, st_step, st_step_c, st_step_r; /* staging walk (host-computed): copy units per staged row
                             * (pitch / vec), rows per pass (256 / st_nv) = st_step_c channels
                             * + st_step_r rows */
    unsigned tw_magic, nv_magic, inh_magic; /* x / tiles_w, x / st_nv, x / in_h as __umulhi(x, magic) for the
                             * kernels' x ranges (host-checked, udiv_magic); 0: divide */
    int lcap, lbuf_off;     /* smem kernel: entries per staged list buffer (a block's list of one listed chunk) and
                             * byte offset of the two list buffers in dynamic shared memory (16-aligned) */
    int bstride;            /* smem kernel: elements from one staged input buffer to the next (a multiple of 128 bytes) */
    int tma;                /* smem kernel, sm_90+: 1 = stage by the Tensor Memory Accelerator (the launch's TmaDesc
                             * maps the input; one bulk tensor copy per chunk, the list by one bulk copy, both
                             * completing on an mbarrier at byte offset mbar_off); 0 = per-thread cp.async */
    int mbar_off;           /* smem kernel: byte offset of two 8-byte mbarriers (tma only) */
    int nhwc;               /* 1: input and output are NHWC (channels last; staged into the same CHW shared-memory
                             * tile, element by element: no vec, no TMA), 0: NCHW */
    int pdl;                /* 1: launched with programmatic dependent launch (sm_90+, tsc_plan pdl): the kernel reads
                             * only plan constants before pdl_wait() */
    int nh_ps_r, nh_ps_c;   /* nhwc staging walk: consecutive threads take consecutive channels of one staged pixel
                             * (cc threads per pixel, 256 / cc pixels per pass = nh_ps_r rows + nh_ps_c columns of
                             * the st_nv staged columns); cstride is odd there, so the channels' rows hit distinct
                             * banks */
};

/* Tensor-map descriptor of the input (CUtensorMap bits, encoded on the host by cuTensorMapEncodeTiled) passed to
 * the smem kernel as a __grid_constant__ parameter. Only CUDA 12+ builds have TMA; older toolkits (JetPack 4.6's
 * CUDA 10.2) get a plain struct that the kernels never read. */
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12000
#define TSC_HAS_TMA 1
struct alignas(64) TmaDesc {
    unsigned long long opaque[16];
};
#else
struct TmaDesc {
    unsigned long long opaque[16];
};
#endif

/* Host: multiplier m with x / d == __umulhi(x, m) for every 0 <= x < x_end (d >= 1), or 0 where none is exact
 * (d == 1 or x_end * d >= 2^32). m = ceil(2^32 / d): the error m * d - 2^32 < d keeps the quotient exact while
 * x * d < 2^32. */
inline unsigned udiv_magic(long long d, long long x_end) {
    if (d <= 1 || x_end < 0 || (unsigned long long)x_end * (unsigned long long)d >= (1ULL << 32)) return 0u;
    return (unsigned)(((1ULL << 32) + (unsigned long long)d - 1) / (unsigned long long)d);
}
#if defined(__CUDACC__)
/* Device: x / d through a host-computed udiv_magic (0: plain division). */
__device__ __forceinline__ int udiv(int x, int d, unsigned magic) {
    return magic ? (int)__umulhi((unsigned)x, magic) : x / d;
}
#endif
/* tmap: the input's tensor map when p.tma (else unused; may be null). */
cudaError_t launch_smem_f32(int tile, int kw, const SmemParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s);
cudaError_t launch_smem_f16(int tile, int kw, const SmemParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s);
/* fp16 half2 layouts (smem_h2.cu): tile 0 or 1, kw 1 / 2 / 4 (tile 0) or 1 / 2 (tile 1); no TMA, NCHW, stride_w 1. */
cudaError_t launch_smem_h2(int tile, int kw, const SmemParams& p, size_t smem, cudaStream_t s);
/* true when the library holds sm_90+ code of the smem kernel for the current device (TMA staging can run). */
bool smem_tma_supported();

/* Register-reuse kernel (reuse_kernel.cuh): X(id, R, S, stride, KT, PH, PW, LW, NS, F16) per config:
 * KT output channels per warp slot, PH x PW pixels per lane, LW lanes along the width, NS warps per
 * slot splitting the input channels, F16: has a half2 fp16 instantiation. Ids are stable (variant ids). */
#define TSC_REUSE_FOR_EACH(X) \
    X(0, 3, 3, 1, 8, 4, 4, 8, 1, 0) \
    X(1, 3, 3, 1, 8, 2, 4, 8, 1, 1) \
    X(2, 3, 3, 1, 16, 2, 4, 8, 1, 1) \
    X(3, 3, 3, 1, 8, 2, 4, 4, 2, 1) \
    X(4, 3, 3, 1, 8, 1, 2, 4, 4, 1) \
    X(5, 3, 3, 1, 4, 1, 2, 4, 8, 1) \
    X(6, 3, 3, 1, 16, 2, 4, 4, 1, 1) \
    X(7, 3, 3, 1, 8, 2, 4, 4, 1, 1) \
    X(8, 1, 1, 1, 16, 2, 4, 8, 1, 1) \
    X(9, 1, 1, 1, 8, 1, 2, 4, 4, 1) \
    X(10, 3, 3, 2, 8, 2, 4, 8, 1, 0) \
    X(11, 3, 3, 2, 8, 1, 2, 4, 4, 0) \
    X(12, 3, 3, 1, 4, 2, 4, 8, 1, 1) \
    X(13, 3, 3, 1, 4, 2, 4, 4, 2, 1) \
    X(14, 3, 3, 1, 4, 2, 4, 4, 4, 1)
static const int REUSE_CFGS = 15;
struct ReuseCfgInfo { int r, s, st, kt, ph, pw, lw, ns, f16; };
inline ReuseCfgInfo reuse_cfg_info(int id) {
    static const ReuseCfgInfo t[REUSE_CFGS] = {
#define TSC_REUSE_ROW(I, R, S, ST, KT, PH, PW, LW, NS, F16) {R, S, ST, KT, PH, PW, LW, NS, F16},
        TSC_REUSE_FOR_EACH(TSC_REUSE_ROW)
#undef TSC_REUSE_ROW
    };
    return t[id];
}
/* fast: 3x3 stride 1, PW % 4 == 0 and pad_left % 4 == 1 (aligned 16-byte patch rows). */
cudaError_t launch_reuse_f32(int cfg, bool fast, const SmemParams& p, size_t smem, cudaStream_t s);
cudaError_t launch_reuse_f16(int cfg, bool fast, const SmemParams& p, size_t smem, cudaStream_t s);
/* Opt every reuse kernel into `bytes` of dynamic shared memory (once per process and device). */
cudaError_t reuse_set_smem_limit_f32(int bytes);
cudaError_t reuse_set_smem_limit_f16(int bytes);

/* Tensor-core kernel (mma_kernel.cuh, fp16 I/O, sm_80+): X(id, TH, TW, WG, WP, WS, NT, CL, SB) per config:
 * output tile TH x TW, WG groups of 16 output channels x WP pixel slices of NT n-tiles (8 pixels) x WS warps
 * splitting the k-steps, CL blocks per thread-block cluster splitting the input-channel chunks (sm_90+), SB KB of
 * shared memory for the two staged input buffers (48: no opt-in; 96: opt-in, up to 128-channel chunks, half the
 * chunk round trips; configs that differ only in SB share one kernel instantiation). Ids are stable (variant ids). */
#define TSC_MMA_FOR_EACH(X) \
    X(0, 8, 32, 1, 8, 1, 4, 1, 48) \
    X(1, 8, 32, 2, 4, 1, 8, 1, 48) \
    X(2, 8, 16, 2, 4, 1, 4, 1, 48) \
    X(3, 8, 8, 4, 2, 1, 4, 1, 48) \
    X(4, 8, 8, 2, 2, 2, 4, 1, 48) \
    X(5, 8, 8, 1, 2, 4, 4, 1, 48) \
    X(6, 8, 8, 1, 2, 4, 4, 4, 48) \
    X(7, 8, 8, 2, 2, 2, 4, 4, 48) \
    X(8, 8, 16, 1, 4, 2, 4, 4, 48) \
    X(9, 16, 16, 2, 4, 1, 8, 1, 48) \
    X(10, 8, 8, 1, 1, 8, 8, 1, 48) \
    X(11, 8, 8, 1, 1, 8, 8, 4, 48) \
    X(12, 8, 8, 2, 2, 2, 4, 8, 48) \
    X(13, 8, 8, 1, 2, 4, 4, 8, 48) \
    X(14, 8, 8, 2, 2, 2, 4, 2, 48) \
    X(15, 8, 8, 4, 2, 1, 4, 2, 48) \
    X(16, 8, 8, 4, 2, 1, 4, 8, 48) \
    X(17, 8, 8, 4, 2, 1, 4, 1, 96) \
    X(18, 8, 8, 4, 2, 1, 4, 2, 96) \
    X(19, 8, 8, 2, 2, 2, 4, 1, 96)
/* ids are serialized in tuned choices: append new configs, never reorder (12-16: clusters of 2 and 8 for
 * grid-starved layers, round 14; 17-19: configs 3 / 15 / 4 with 96 KB staging, round 15) */
static const int MMA_CFGS = 20;
struct MmaCfgInfo { int th, tw, wg, wp, ws, nt, cl, sb; };
inline MmaCfgInfo mma_cfg_info(int id) {
    static const MmaCfgInfo t[MMA_CFGS] = {
#define TSC_MMA_ROW(I, TH, TW, WG, WP, WS, NT, CL, SB) {TH, TW, WG, WP, WS, NT, CL, SB},
        TSC_MMA_FOR_EACH(TSC_MMA_ROW)
#undef TSC_MMA_ROW
    };
    return t[id];
}
struct MmaParams {
    SmemParams s;             /* staging geometry, output, bias, activation; s.groups = block groups */
    const uint4* afrag;       /* per k-step: 32 lanes x 4 registers (fp16 pairs) of the m16n8k16 A fragment */
    const unsigned* koff;     /* per k-step, two 16-bit byte offsets in the staged chunk per word: fp16 8 words
                               * (positions 2w, 2w+1 and 2(w-4)+8, 2(w-4)+9), TF32 4 words (positions w, w+4);
                               * one zero k-step past the end */
    const int* kseg;          /* per (listed chunk, group of the block): first k-step; one more at the end */
    int cpb;                  /* output channels per block group (16 * WG) */
};
/* fp16 I/O (m16n8k16) / fp32 I/O with TF32 math (m16n8k8); cfg = mma_cfg_info id. */
cudaError_t launch_mma_f16(int cfg, const MmaParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s);
cudaError_t launch_mma_tf32(int cfg, const MmaParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s);
/* true when the library holds sm_80+ code of the tensor-core kernels for the current device. */
bool mma_supported();
/* Opt the kernels of every config with SB > 48 into `bytes` of dynamic shared memory (once per process and device). */
cudaError_t mma_set_smem_limit_f16(int bytes);
cudaError_t mma_set_smem_limit_tf32(int bytes);

/* Single-stage ("burst") kernel (burst_kernel.cu, sm_90+): X(id, LW, PC, KPW, WK, CL) per config: lanes LW along a
 * row x 32 / LW rows, PC pixels per lane (tile 32 / LW x LW * PC), KPW output channels per warp, WK warp groups over
 * the output channels (WC = 8 / WK warps split the block's input channels), CL blocks per cluster splitting C.
 * Ids are stable (variant ids): append, never reorder. */
#define TSC_BURST_FOR_EACH(X) \
    X(0, 4, 8, 1, 8, 1) \
    X(1, 4, 8, 2, 4, 1) \
    X(2, 4, 7, 1, 8, 1) \
    X(3, 4, 7, 2, 4, 2) \
    X(4, 2, 7, 2, 4, 2) \
    X(5, 2, 7, 2, 4, 4) \
    X(6, 4, 2, 4, 4, 4) \
    X(7, 4, 2, 2, 4, 8) \
    X(8, 4, 2, 4, 2, 8) \
    X(9, 4, 4, 2, 4, 2) \
    X(10, 8, 4, 1, 8, 1) \
    X(11, 2, 14, 1, 8, 1) \
    X(12, 4, 4, 2, 4, 4) \
    X(13, 2, 7, 1, 8, 8) \
    X(14, 4, 2, 2, 8, 8) \
    X(15, 4, 8, 1, 4, 2) \
    X(16, 4, 2, 2, 8, 4) \
    X(17, 4, 2, 1, 8, 8) \
    X(18, 4, 2, 1, 8, 4) \
    X(19, 4, 2, 1, 8, 2)
static const int BURST_CFGS = 20;
struct BurstCfgInfo { int lw, pc, kpw, wk, cl; };
inline BurstCfgInfo burst_cfg_info(int id) {
    static const BurstCfgInfo t[BURST_CFGS] = {
#define TSC_BURST_ROW(I, LW, PC, KPW, WK, CL) {LW, PC, KPW, WK, CL},
        TSC_BURST_FOR_EACH(TSC_BURST_ROW)
#undef TSC_BURST_ROW
    };
    return t[id];
}
struct BurstParams {
    const void* x;          /* input (per-thread staging when use_tma is 0) */
    void* y;
    const int2* entries;    /* per (group, cluster rank): ent_cap (value bits, byte offset in the staged slice) */
    const int* seg;         /* per (group, rank, warp, channel of the warp): begin, end in that list */
    const float* bias;      /* K values */
    int N, C, H, W, K, P, Q;
    int pad_t, pad_l, sh;
    int BW, IH;             /* staged row pitch (elements, a multiple of 16 bytes) and rows */
    int Cc, CB, ncopies;    /* input channels per block; channels per TMA box and boxes per block */
    int CL, Kb, WK, WC, tiles_x, ent_cap, in_bytes;
    int act;
    float clip_min, clip_max;
    int use_tma;            /* 1: TMA boxes; 2: one bulk copy of the rows' span, padded in shared memory; 0: per-thread */
    int raw_off;            /* use_tma 2: byte offset of the span in shared memory */
    int pdl;                /* 1: launched with programmatic dependent launch (SmemParams::pdl) */
};
/* true when the library holds sm_90+ code of the burst kernel for the current device. */
bool burst_supported();
/* Opt every burst kernel into `bytes` of dynamic shared memory (once per process and device). */
cudaError_t burst_set_smem_limit(int bytes);
cudaError_t launch_burst(bool fp16, int cfg, const BurstParams& p, const TmaDesc* tmap, size_t smem, int grid_x,
                         int grid_y, cudaStream_t s);

/* Dynamic shared memory a tile launch needs (0 without split). */
inline size_t tile_smem_bytes(int geom, int cfg, int nsplit) {
    if (nsplit <= 1) return 0;
    TileCfgInfo c = tile_cfg_info(geom, cfg);
    return (size_t)nsplit * c.kt * c.ph * c.pw * 32 * sizeof(float);
}

}  // namespace tsc
#endif
