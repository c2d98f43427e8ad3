/*
 * Single-stage ("burst") sparse direct convolution for small maps (batch-1 ResNet-style layers), NCHW, stride_w 1,
 * any R x S, stride_h, dilation and pads; fp32 or fp16 I/O (fp32 accumulation); sm_90+ (TMA, clusters).
 *
 * One block = an output tile (32 / LW rows x LW * PC columns) x Kb = WK * KPW output channels x a slice of Cc input
 * channels; the CL blocks of a thread-block cluster split C and reduce through distributed shared memory (one
 * launch, no atomics, no zeroing). The block's whole input slice (tile + halo, zero padding by TMA's out-of-bounds
 * fill; where TMA cannot map the input rows (row bytes not a multiple of 16), one bulk copy of the 16-byte aligned span
 * of the block's channel rows, padded in shared memory after the wait) and its whole nonzero list arrive before ONE
 * wait: no chunk loop, no per-chunk barrier -- the staged kernels' per-chunk round trips were their fixed cost on
 * batch-1 small maps (docs/PERFORMANCE.md, round 22). Lane (lr, lc) owns PC pixels of one output row (columns lc +
 * j * LW), so a nonzero costs one warp-uniform LDS.64 (value bits, byte offset), one IADD and PC (LDS + FFMA) with
 * immediate offsets. The 8 warps are WK output-channel groups x WC = 8 / WK input-channel slices.
 */
#include <cuda_fp16.h>
#include <cstring>
#include "tsc_internal.h"
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12000
#define TSC_BURST_BUILD 1
#endif

namespace tsc {
namespace {

#if defined(TSC_BURST_BUILD)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void b_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
/* The float at shared-window address a in block `rank` of the cluster (DSMEM). */
__device__ __forceinline__ float b_ld_peer(unsigned a, unsigned rank) {
    unsigned ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
__device__ __forceinline__ float b_ld(unsigned a, const float*) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}
__device__ __forceinline__ float b_ld(unsigned a, const __half*) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a));
    return __half2float(__ushort_as_half(v));
}
/* Wait for phase 0 of the mbarrier at shared address bar. */
__device__ __forceinline__ void b_wait(unsigned bar) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred q;\n\tmbarrier.try_wait.parity.shared::cta.b64 q, [%1], 0;\n\tselp.u32 %0, 1, 0, q;\n\t}"
                     : "=r"(done) : "r"(bar) : "memory");
}
__device__ __forceinline__ void b_st(float* p, float v) { *p = v; }
__device__ __forceinline__ void b_st(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ float b_act(float v, const BurstParams& p) {
    if (p.act == 1) return fmaxf(v, 0.0f);
    if (p.act == 2) return fminf(fmaxf(v, p.clip_min), p.clip_max);
    return v;
}
#endif

template <typename T, int LW, int PC, int KPW>
__global__ void __launch_bounds__(256) burst_kernel(const __grid_constant__ TmaDesc tmap, const BurstParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char smem[];
    constexpr int LH = 32 / LW, TH = LH, TW = LW * PC, ES = (int)sizeof(T), AL = 16 / ES;
    pdl_trigger(); /* a PDL-launched next kernel may start its blocks (they wait for this grid in pdl_wait) */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int tile = blockIdx.x, ty = tile / p.tiles_x, tx = tile % p.tiles_x;
    const int by = blockIdx.y, g = by / p.CL, rank = by % p.CL, n = blockIdx.z;
    const int oy0 = ty * TH, ox0 = tx * TW;
    const int xr = ox0 - p.pad_l;                        /* first input column of the tile */
    const int x0 = (xr >= 0 ? xr / AL : -((-xr + AL - 1) / AL)) * AL; /* staged from a 16-byte aligned column */
    const int y0 = oy0 * p.sh - p.pad_t, c0 = rank * p.Cc;
    const int ent_bytes = p.ent_cap * 8;
    const unsigned s_in = (unsigned)__cvta_generic_to_shared(smem), s_ent = s_in + (unsigned)p.in_bytes;
    const unsigned s_bar = s_ent + (unsigned)ent_bytes;
    const unsigned chan_bytes = (unsigned)(p.IH * p.BW * ES);
    /* TMA staging: box i (CB channels) completes on mbarrier i, so the loop starts on the first boxes while the
     * others arrive; the other stagings (and the nonzero list) complete on mbarrier 0 */
    const int nst = p.use_tma == 1 ? p.ncopies : 1;
    if (tid == 0) {
        for (int i = 0; i < nst; ++i)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(s_bar + 8u * (unsigned)i) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const bool slab = p.use_tma == 2;
    const size_t es = (size_t)ES;
    const uintptr_t xa = reinterpret_cast<uintptr_t>(p.x);
    /* use_tma 2: ONE bulk copy of the 16-byte aligned span [s_lo, s_hi) from row ylo of channel c0 to row yhi - 1 of
     * the block's last channel (clamped to the tensor; the inner channels' other rows come along): per-copy cost,
     * not bytes, dominated per-channel copies (~0.4 us per copy per SM, round 22); elements of those rows outside
     * the span are read from global memory when padding them below */
    const int ylo = max(y0, 0), yhi = min(y0 + p.IH, p.H), cz = min(c0 + p.Cc, p.C);
    uintptr_t s_lo = 0, s_hi = 0;
    if (slab) {
        const uintptr_t t_lo = (xa + 15) & ~(uintptr_t)15;
        const uintptr_t t_hi = (xa + (size_t)p.N * p.C * p.H * p.W * es) & ~(uintptr_t)15;
        const uintptr_t b0 = xa + (((size_t)n * p.C + c0) * p.H + ylo) * p.W * es;
        const uintptr_t b1 = xa + (((size_t)n * p.C + (cz - 1)) * p.H + yhi) * p.W * es;
        s_lo = max(t_lo, b0 & ~(uintptr_t)15);
        s_hi = min(t_hi, (b1 + 15) & ~(uintptr_t)15);
        if (s_hi < s_lo || yhi <= ylo || cz <= c0) s_hi = s_lo;
    }
    /* before pdl_wait: plan constants only (the nonzero list, the stage bounds); the input and the output after it */
    if (tid == 0) {
        const unsigned box = p.use_tma == 1 ? (unsigned)p.CB * chan_bytes : 0u;
        const unsigned total0 = box + (unsigned)(s_hi - s_lo) + (unsigned)ent_bytes;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(s_bar), "r"(total0) : "memory");
        for (int i = 1; i < nst; ++i)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(s_bar + 8u * (unsigned)i), "r"(box)
                         : "memory");
        /* the list first (the first stage needs it), then the boxes in channel order */
        if (ent_bytes > 0)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(s_ent), "l"(p.entries + (size_t)by * p.ent_cap), "r"(ent_bytes), "r"(s_bar) : "memory");
    }
    const int kg = warp % p.WK, cs = warp / p.WK;
    const int lr = lane / LW, lc = lane % LW;
    /* per (warp, channel of the warp): the start of each stage's nonzeros and the end (ncopies + 1 values) */
    const int NS = p.ncopies + 1;
    const int* sg = p.seg + ((size_t)by * 8 + warp) * KPW * NS;
    int b[KPW], e[KPW];
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk) {
        b[kk] = __ldg(sg + kk * NS);
        e[kk] = __ldg(sg + kk * NS + (nst == 1 ? p.ncopies : 1));
    }
    pdl_wait();
    if (tid == 0) {
        for (int i = 0; p.use_tma == 1 && i < p.ncopies; ++i)
            asm volatile(
                "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                ::"r"(s_in + (unsigned)(i * p.CB) * chan_bytes), "l"(&tmap), "r"(x0), "r"(y0), "r"(c0 + i * p.CB), "r"(n),
                "r"(s_bar + 8u * (unsigned)i) : "memory");
        if (s_hi > s_lo)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(s_in + (unsigned)p.raw_off), "l"(s_lo), "r"((unsigned)(s_hi - s_lo)), "r"(s_bar)
                         : "memory");
    }
    if (p.use_tma == 0) {
        /* warp w stages rows w, w + 8, ..; lanes take the columns; zero where outside the input */
        const T* x = reinterpret_cast<const T*>(p.x);
        T* sd = reinterpret_cast<T*>(smem);
        const int rows = p.Cc * p.IH;
        for (int rr = warp; rr < rows; rr += 8) {
            const int c = c0 + rr / p.IH, iy = y0 + rr % p.IH;
            const bool rok = iy >= 0 && iy < p.H && c < p.C;
            const T* src = x + (((size_t)n * p.C + (rok ? c : 0)) * p.H + (rok ? iy : 0)) * p.W;
            for (int col = lane; col < p.BW; col += 32) {
                const int ix = x0 + col;
                if (ES == 4) {
                    const bool ok = rok && ix >= 0 && ix < p.W;
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s_in + (unsigned)((rr * p.BW + col) * 4)),
                                 "l"(src + (ok ? ix : 0)), "r"(ok ? 4 : 0) : "memory");
                } else {
                    sd[rr * p.BW + col] = (rok && ix >= 0 && ix < p.W) ? __ldg(src + ix) : T(0.0f);
                }
            }
        }
        if (ES == 4) asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
        __syncthreads();
    }
    b_wait(s_bar);
    if (slab) {
        /* the span (unpadded rows of full width) -> the padded staged layout, zeros outside the map. A staged channel
         * is P = IH x BW elements: where P <= 256, thread t keeps position t % P of channels t / P, + q, + 2q, ..
         * (q = 256 / P channels per pass); else it keeps positions t, t + 256, .. of every channel. Its (row, column)
         * and so its validity are fixed, the span offset advances by q channels: a load, a store and three adds per
         * element (round 23: the element-per-thread walk with a (channel, row) carry was ~50% of the stall samples
         * of resnet50_3x3_c512_h7's cluster configs, round 22) */
        T* sd = reinterpret_cast<T*>(smem);
        const unsigned char* raw = smem + p.raw_off;
        const int bw = p.BW, P = p.IH * bw, span = (int)(s_hi - s_lo), row_b = p.W * ES, chan_b = p.H * row_b;
        const int r_lo = ylo - y0, r_hi = yhi - y0, c_hi = cz - c0; /* staged rows / channels inside the map */
        const int q = P <= 256 ? 256 / P : 1, npos = P <= 256 ? 1 : (P + 255) / 256;
        /* byte offset in the span of (channel c0, row y0, column 0): within +-2^31 (the span fits shared memory) */
        const int base = (int)((long long)(xa + (((size_t)n * p.C + c0) * p.H + y0) * p.W * es) - (long long)s_lo);
        for (int jp = 0; jp < npos; ++jp) {
            const int u = tid + 256 * jp;
            int cl = P <= 256 ? u / P : 0;
            const int pos = P <= 256 ? u - cl * P : u;
            if ((P <= 256 && u >= q * P) || pos >= P) break;
            const int r = pos / bw, col = pos - r * bw, ix = x0 + col;
            const bool ok = ix >= 0 && ix < p.W && r >= r_lo && r < r_hi;
            int off = base + cl * chan_b + r * row_b + ix * ES;
            T* dst = sd + cl * P + pos;
            for (; cl < c_hi; cl += q, off += q * chan_b, dst += q * P) {
                T v = T(0.0f);
                if (ok) v = ((unsigned)off < (unsigned)span) ? *reinterpret_cast<const T*>(raw + off)
                                                             : __ldg(reinterpret_cast<const T*>(s_lo + (long long)off));
                *dst = v;
            }
            for (; cl < p.Cc; cl += q, dst += q * P) *dst = T(0.0f); /* channels past C (the last cluster rank) */
        }
        __syncthreads();
    }
    const unsigned lane_base = s_in + (unsigned)((lr * p.sh * p.BW + lc + (xr - x0)) * ES);
    float acc[KPW][PC];
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk)
#pragma unroll
        for (int j = 0; j < PC; ++j) acc[kk][j] = 0.0f;
    for (int s = 0;;) {
#pragma unroll
        for (int kk = 0; kk < KPW; ++kk) {
#pragma unroll 4
            for (int i = b[kk]; i < e[kk]; ++i) {
                int2 en;
                asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(en.x), "=r"(en.y) : "r"(s_ent + (unsigned)i * 8u));
                const float w = __int_as_float(en.x);
                const unsigned a = lane_base + (unsigned)en.y;
#pragma unroll
                for (int j = 0; j < PC; ++j)
                    acc[kk][j] = fmaf(w, b_ld(a + (unsigned)(j * LW * ES), (const T*)nullptr), acc[kk][j]);
            }
        }
        if (++s >= nst) break;
        /* next stage: its bounds are loaded while its box may still be in flight */
#pragma unroll
        for (int kk = 0; kk < KPW; ++kk) {
            b[kk] = e[kk];
            e[kk] = __ldg(sg + kk * NS + s + 1);
        }
        b_wait(s_bar + 8u * (unsigned)s);
    }
    T* y = reinterpret_cast<T*>(p.y);
    if (p.WC == 1 && p.CL == 1) { /* every sum is whole: store from the registers */
        const int oy = oy0 + lr;
#pragma unroll
        for (int kk = 0; kk < KPW; ++kk) {
            const int k = g * p.Kb + kg * KPW + kk;
            if (k >= p.K || oy >= p.P) continue;
            const float bk = __ldg(p.bias + k);
            T* yr = y + (((size_t)n * p.K + k) * p.P + oy) * p.Q;
#pragma unroll
            for (int j = 0; j < PC; ++j) {
                const int ox = ox0 + lc + j * LW;
                if (ox < p.Q) b_st(yr + ox, b_act(acc[kk][j] + bk, p));
            }
        }
        return;
    }
    /* partial sums over the shared memory of the staged input (dead once every warp is past its loop) */
    __syncthreads();
    float* red = reinterpret_cast<float*>(smem);
    const int TP = TH * TW, total = p.Kb * TP;
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk) {
        const int kl = kg * KPW + kk;
#pragma unroll
        for (int j = 0; j < PC; ++j) red[(cs * p.Kb + kl) * TP + lr * TW + lc + j * LW] = acc[kk][j];
    }
    if (p.CL > 1) b_cluster_sync();
    else __syncthreads();
    const int per = (total + p.CL - 1) / p.CL;
    const int lo = rank * per, hi = min(total, lo + per);
    for (int idx = lo + tid; idx < hi; idx += 256) {
        const int kl = idx / TP, pix = idx - kl * TP;
        const int k = g * p.Kb + kl, oy = oy0 + pix / TW, ox = ox0 + pix % TW;
        if (k >= p.K || oy >= p.P || ox >= p.Q) continue;
        float s = 0.0f;
        for (int c = 0; c < p.WC; ++c) {
            const unsigned a = s_in + (unsigned)((c * total + idx) * 4);
            if (p.CL == 1) {
                s += red[c * total + idx];
            } else {
                float t[8];
#pragma unroll
                for (int q = 0; q < 8; ++q) t[q] = q < p.CL ? b_ld_peer(a, (unsigned)q) : 0.0f;
#pragma unroll
                for (int q = 0; q < 8; ++q) s += t[q];
            }
        }
        b_st(y + (((size_t)n * p.K + k) * p.P + oy) * p.Q + ox, b_act(s + __ldg(p.bias + k), p));
    }
    if (p.CL > 1) b_cluster_sync(); /* peers read this block's partials until here */
#else
    (void)tmap; (void)p;
#endif
}

typedef void (*BurstFn)(const TmaDesc, const BurstParams);
template <typename T> BurstFn burst_fn(int cfg) {
    switch (cfg) {
#define TSC_BURST_CASE(I, LW, PC, KPW, WK, CL) \
    case I: return burst_kernel<T, LW, PC, KPW>;
        TSC_BURST_FOR_EACH(TSC_BURST_CASE)
#undef TSC_BURST_CASE
    }
    return nullptr;
}
#endif

}  // namespace

bool burst_supported() {
#if defined(TSC_BURST_BUILD)
    cudaFuncAttributes a;
    const bool ok = cudaFuncGetAttributes(&a, burst_fn<float>(0)) == cudaSuccess && a.ptxVersion >= 90 &&
                    a.binaryVersion >= 90;
    cudaGetLastError();
    return ok;
#else
    return false;
#endif
}

cudaError_t burst_set_smem_limit(int bytes) {
#if defined(TSC_BURST_BUILD)
    cudaError_t first = cudaSuccess;
    for (int c = 0; c < BURST_CFGS; ++c)
        for (int h = 0; h < 2; ++h) {
            const cudaError_t e = cudaFuncSetAttribute(h ? burst_fn<__half>(c) : burst_fn<float>(c),
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
            if (e != cudaSuccess && first == cudaSuccess) first = e;
        }
    cudaGetLastError();
    return first;
#else
    (void)bytes;
    return cudaErrorNotSupported;
#endif
}

cudaError_t launch_burst(bool fp16, int cfg, const BurstParams& p, const TmaDesc* tmap, size_t smem, int grid_x,
                         int grid_y, cudaStream_t s) {
#if defined(TSC_BURST_BUILD)
    const BurstFn fn = fp16 ? burst_fn<__half>(cfg) : burst_fn<float>(cfg);
    if (!fn) return cudaErrorInvalidValue;
    const BurstCfgInfo ci = burst_cfg_info(cfg);
    TmaDesc none;
    std::memset(&none, 0, sizeof(none));
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3((unsigned)grid_x, (unsigned)grid_y, (unsigned)p.N);
    lc.blockDim = dim3(256, 1, 1);
    lc.dynamicSmemBytes = smem;
    lc.stream = s;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = (unsigned)ci.cl;
    attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization; /* p.pdl: programmatic dependent launch */
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    lc.attrs = attr;
    lc.numAttrs = p.pdl ? 2 : 1;
    cudaError_t e = cudaLaunchKernelEx(&lc, fn, tmap ? *tmap : none, p);
    if (e != cudaSuccess && p.pdl) { /* e.g. a driver without PDL: plain stream order */
        cudaGetLastError();
        lc.numAttrs = 1;
        e = cudaLaunchKernelEx(&lc, fn, tmap ? *tmap : none, p);
    }
    return e;
#else
    (void)fp16; (void)cfg; (void)p; (void)tmap; (void)smem; (void)grid_x; (void)grid_y; (void)s;
    return cudaErrorNotSupported;
#endif
}

}  // namespace tsc
