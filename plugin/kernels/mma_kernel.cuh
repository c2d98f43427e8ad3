/*
 * Tensor-core sparse direct convolution (fp16 I/O, fp32 accumulation, sm_80+; NCHW or NHWC, any R x S, stride,
 * dilation, pads).
 *
 * Output channels are taken 16 at a time ("groups"). For every group and staged chunk of input channels,
 * the plan lists the UNION of the 16 channels' nonzero positions (c, r, s) in steps of 16 ("k-steps"):
 * per k-step a pre-packed fp16 A fragment (16 channels x 16 positions, zeros where a channel has no
 * nonzero, exactly the mma.m16n8k16 register layout of each lane) and the 16 positions' byte offsets in
 * the staged input chunk. The input is staged like the smem kernel (zero-padded tile + halo, cp.async
 * double buffer, smem_detail::stage). A warp owns one group and NT n-tiles of 8 output pixels; per
 * k-step and n-tile it gathers its B fragment (16 positions x 8 pixels) with 4 16-bit shared-memory
 * loads per lane and issues one mma.sync.m16n8k16 (fp32 accumulators in registers): 128 loads per warp
 * for 2048 multiply-adds, one per 16 instead of one per multiply-add (smem kernel). Work is proportional to the union of positions,
 * so the kernel is exact for any mask and fast where the 16 channels share positions (vector-sparse
 * pruning, `trt-sparse prune --pattern vector:16`, or moderate unstructured sparsity).
 *
 * Block: 8 warps = WG groups x WP pixel slices (NT n-tiles each, TH x TW = WP * NT * 8 pixels) x WS warps
 * splitting the k-steps of each chunk; with WS > 1 (or p.cl > 1: the blocks of a thread-block cluster
 * split the chunks, sm_90+) partial sums are reduced in shared memory (distributed shared memory across
 * the cluster): one launch, no atomics, no zeroing.
 */
/* fp32 I/O with TF32 allowed (plan math mode TSC_MATH_ALLOW_TF32, never by default): the same kernel with
 * mma.m16n8k8.tf32 -- k-steps of 8 positions, A pre-rounded to TF32 on the host, the gathered inputs rounded
 * with cvt.rna.tf32.f32, fp32 accumulation. */
#ifndef TRT_SPARSE_MMA_KERNEL_CUH
#define TRT_SPARSE_MMA_KERNEL_CUH

#include <cuda_fp16.h>
#include <cstdint>
#include "tsc_internal.h"
#include "smem_kernel.cuh"

namespace tsc {
namespace mma_detail {

/* D = A * B + D, m16n8k16, fp16 inputs, fp32 accumulators (no-op below sm_80: never launched there). */
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint4& a, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
#else
    (void)c; (void)a; (void)b0; (void)b1;
#endif
}

/* D = A * B + D, m16n8k8, TF32 inputs (fp32 registers), fp32 accumulators. */
__device__ __forceinline__ void mma_1688_tf32(float (&c)[4], const uint4& a, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
#else
    (void)c; (void)a; (void)b0; (void)b1;
#endif
}

/* fp32 -> TF32, round to nearest (ties away), as the bits of an fp32 register. */
__device__ __forceinline__ unsigned to_tf32(unsigned f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned t;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(__uint_as_float(f)));
    return t;
#else
    return f;
#endif
}

/* 32-bit shared-memory load at a 32-bit shared-window address. */
__device__ __forceinline__ unsigned lds_u32(unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}

/* 16-bit shared-memory load at a 32-bit shared-window address (one add + one LDS per element). */
__device__ __forceinline__ unsigned lds_u16(unsigned addr) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
    return (unsigned)v;
}

/* Output channel of accumulator register r (rows gid / gid + 8 of the A fragment) of group wg, lane ln. */
__device__ __forceinline__ int out_channel(const MmaParams& p, int bg, int wg, int r, int ln) {
    return bg * p.cpb + wg * 16 + (ln >> 2) + ((r & 2) ? 8 : 0);
}

/* Two adjacent outputs (v0 at element dst, v1 at dst + 1) in one 8-byte (fp32) / 4-byte (fp16) store. */
__device__ __forceinline__ void st_out2(float* dst, float v0, float v1) {
    *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
}
__device__ __forceinline__ void st_out2(__half* dst, float v0, float v1) {
    *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(v0, v1);
}

/* Store tile pixels pi (even) and pi + 1 -- one tile row: TW is a multiple of 8 -- of output channel k (the
 * accumulator pair of one lane and fragment row), with its bias and the activation: one paired store where both
 * pixels are in the image and the NCHW address is aligned for it, else one store per pixel. */
template <int TW, typename T>
__device__ __forceinline__ void store_out_pair(const SmemParams& q, T* yn, int k, int pi, int oy0, int ox0, float v0,
                                               float v1, float bias) {
    const int oy = oy0 + pi / TW, ox = ox0 + pi % TW;
    if (k >= q.K || oy >= q.P || ox >= q.Q) return;
    T* const dst = yn + smem_detail::out_off(q, k, oy, ox);
    const float a0 = smem_detail::act_f(v0 + bias, q.act, q.clip_min, q.clip_max);
    const float a1 = smem_detail::act_f(v1 + bias, q.act, q.clip_min, q.clip_max);
    if (!q.nhwc && ox + 1 < q.Q && (reinterpret_cast<uintptr_t>(dst) & (2 * sizeof(T) - 1)) == 0) {
        st_out2(dst, a0, a1);
        return;
    }
    smem_detail::st_out(dst, a0);
    if (ox + 1 < q.Q) smem_detail::st_out(yn + smem_detail::out_off(q, k, oy, ox + 1), a1);
}

/* Tile pixel of accumulator register r of n-tile j of pixel slice wp, lane ln (columns 2 tig, 2 tig + 1). */
template <int NT>
__device__ __forceinline__ int acc_pixel(int wp, int j, int r, int ln) {
    return (wp * NT + j) * 8 + 2 * (ln & 3) + (r & 1);
}

/* The k-step's A fragment and the lane's position offsets (one k-step ahead of its use): fp16 k-steps hold
 * 16 positions (8 offset words; the lane's are words tig and tig + 4), TF32 k-steps 8 (4 words; word tig). */
struct KStep {
    uint4 a;
    unsigned o01, o23;
};
template <typename T> struct KWords { static const int value = 8; };
template <> struct KWords<float> { static const int value = 4; };

template <typename T>
__device__ __forceinline__ void load_kstep(const uint4* ap, const unsigned* op, KStep* k) {
    k->a = __ldg(ap);
    k->o01 = __ldg(op);
    k->o23 = KWords<T>::value == 8 ? __ldg(op + 4) : 0u;
}

/* Shared-window addresses of the lane's k-step positions at pixel address `base`: fp16 positions 2 tig, 2 tig + 1,
 * 2 tig + 8, 2 tig + 9 of the B fragment; TF32 tig, tig + 4 (a0, a1; a2 and a3 unused). */
struct KAddr {
    unsigned a0, a1, a2, a3;
};
__device__ __forceinline__ KAddr kaddr(const KStep& k, unsigned base) {
    KAddr r;
    r.a0 = base + (k.o01 & 0xffffu);
    r.a1 = base + (k.o01 >> 16);
    r.a2 = base + (k.o23 & 0xffffu);
    r.a3 = base + (k.o23 >> 16);
    return r;
}

/* One k-step of one n-tile: gather the B fragment at the lane's addresses and issue the mma. */
__device__ __forceinline__ void kstep_mma(float (&acc)[4], const KStep& k, const KAddr& a, const __half*) {
    const unsigned b0 = lds_u16(a.a0) | (lds_u16(a.a1) << 16);
    const unsigned b1 = lds_u16(a.a2) | (lds_u16(a.a3) << 16);
    mma_16816(acc, k.a, b0, b1);
}
__device__ __forceinline__ void kstep_mma(float (&acc)[4], const KStep& k, const KAddr& a, const float*) {
    const unsigned b0 = to_tf32(lds_u32(a.a0));
    const unsigned b1 = to_tf32(lds_u32(a.a1));
    mma_1688_tf32(acc, k.a, b0, b1);
}

}  // namespace mma_detail

/* k-steps are loaded one ahead of their use (two ahead measured 0.957x: `h200_round13_ab_pf.json`). */
template <typename T, int TH, int TW, int WG, int WP, int WS, int NT, int CL>
__global__ void __launch_bounds__(256, NT >= 8 ? 2 : 3) mma_kernel(MmaParams p, const TSC_GRID_CONST TmaDesc tmap) {
    static_assert(WG * WP * WS == 8, "8 warps per block");
    static_assert(WP * NT * 8 == TH * TW && TW % 8 == 0, "n-tiles cover the tile");
    using namespace smem_detail;
    constexpr int KW = mma_detail::KWords<T>::value;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const SmemParams& q = p.s;
    pdl_trigger(); /* a PDL-launched next kernel may start its blocks (they wait for this grid in pdl_wait) */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int gid = lane >> 2;
    const int wg = warp / (WP * WS), wrem = warp - wg * (WP * WS);
    const int wp = wrem / WS, ws = wrem - wp * WS;
    constexpr int cl = CL; /* blocks per cluster (compile-time: no runtime division below) */
    const int tile = blockIdx.x / cl, rank = blockIdx.x - tile * cl; /* clusters span cl consecutive x blocks */
    const int bg = blockIdx.y;
    const int t_y = udiv(tile, q.tiles_w, q.tw_magic), t_x = tile - t_y * q.tiles_w;
    const int oy0 = t_y * TH, ox0 = t_x * TW;
    const int iy0 = oy0 * q.sh - q.pad_top;
    const int ix0 = ox0 * q.sw - q.pad_left - q.lead;
    int pb[NT]; /* byte offset of the lane's pixel (column gid of n-tile j) in a staged chunk */
#pragma unroll
    for (int j = 0; j < NT; ++j) {
        const int pi = (wp * NT + j) * 8 + gid;
        pb[j] = (((pi / TW) * q.sh) * q.pitch + (pi % TW) * q.sw + q.lead) * (int)sizeof(T);
    }
    const int dch = q.dense_chunks; /* > 0: chunk lists are implicit (no dependent index loads) */
    int cs0 = dch > 0 ? bg * dch : __ldg(q.gch_off + bg);
    int cs1 = dch > 0 ? cs0 + dch : __ldg(q.gch_off + bg + 1);
    const int cbase = bg * dch;
    cluster_share(cl, rank, &cs0, &cs1); /* this block's share of the block group's listed chunks */
    const int buf_elems = q.bstride;
    T* const sbuf = reinterpret_cast<T*>(smem_raw);
    const T* __restrict__ x = reinterpret_cast<const T*>(q.x);
    T* __restrict__ y = reinterpret_cast<T*>(q.y);
    const StageLane sl = stage_lane(q);
#if defined(TSC_TMA_DEVICE)
    /* TMA staging (q.tma, as the smem kernel): thread 0 issues one bulk tensor copy of the chunk's zero-padded
     * input box per listed chunk, completing on the buffer's mbarrier; every thread waits on it */
    const unsigned mbar = smem_addr(smem_raw + q.mbar_off);
    const bool tma = q.tma != 0 && (smem_addr(smem_raw) & 127u) == 0u;
    if (tma) {
        if (threadIdx.x == 0) {
            mbar_init(mbar);
            mbar_init(mbar + 8u);
            mbar_init_fence();
        }
        __syncthreads();
    }
    unsigned phase = 0u;
    auto tma_stage = [&](int bb, int c0, int n) {
        const unsigned bar = mbar + 8u * (unsigned)bb;
        mbar_expect_tx(bar, (unsigned)(q.cc * q.cstride) * (unsigned)sizeof(T));
        tma_load_4d(smem_addr(sbuf + bb * buf_elems), &tmap, ix0, iy0, c0, n, bar);
    };
#else
    const bool tma = false; /* the staging below reads it only in TMA device passes */
    (void)tma;
    (void)tmap;
#endif

    /* bias of the lane's two output channels (direct-store path), loaded before the main loop */
    const int kA = mma_detail::out_channel(p, bg, wg, 0, lane);
    const float biasA = kA < q.K ? __ldg(q.bias + kA) : 0.0f;
    const float biasB = kA + 8 < q.K ? __ldg(q.bias + kA + 8) : 0.0f;
    pdl_wait(); /* above: plan constants only; the input and the output from here on */

    for (int n = blockIdx.z; n < q.N; n += gridDim.z) {
        const T* xn = x + (long long)n * q.C * q.H * q.W;
        T* yn = y + (long long)n * q.K * q.P * q.Q;
#if defined(TSC_TMA_DEVICE)
        if (tma && n != (int)blockIdx.z) { /* the previous image's reduction may have written shared memory */
            fence_proxy_async();
            __syncthreads();
        }
#endif
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[j][r] = 0.0f;

        if (cs0 < cs1) {
            const int c0 = (dch > 0 ? cs0 - cbase : __ldg(q.chunk_ids + cs0)) * q.cc;
#if defined(TSC_TMA_DEVICE)
            if (tma) {
                if (threadIdx.x == 0) tma_stage(0, c0, n);
            } else
#endif
            stage<T>(q, sl, xn, sbuf, c0, iy0, ix0);
        }
        cp_commit();
        /* k-step range of the next chunk and its first k-step, loaded before waiting for the staged input */
        int k0n = 0, k1n = 0;
        if (cs0 < cs1) { k0n = __ldg(p.kseg + cs0 * WG + wg); k1n = __ldg(p.kseg + cs0 * WG + wg + 1); }
        for (int i = cs0; i < cs1; ++i) {
            const int nk = k1n - k0n;
            const int kb = k0n + (nk * ws) / WS, ke = k0n + (nk * (ws + 1)) / WS;
            mma_detail::KStep nx; /* the layout ends with a zero k-step: loads one past a range stay in bounds */
            mma_detail::load_kstep<T>(p.afrag + (long long)kb * 32 + lane, p.koff + (long long)kb * KW + (lane & 3), &nx);
            if (i + 1 < cs1) { k0n = __ldg(p.kseg + (i + 1) * WG + wg); k1n = __ldg(p.kseg + (i + 1) * WG + wg + 1); }
            const int b = (i - cs0) & 1;
#if defined(TSC_TMA_DEVICE)
            if (tma) {
                mbar_wait(mbar + 8u * (unsigned)b, (phase >> b) & 1u);
                phase ^= 1u << b;
            } else
#endif
            cp_wait_all();
            __syncthreads();
            if (i + 1 < cs1) {
                const int c1 = (dch > 0 ? i + 1 - cbase : __ldg(q.chunk_ids + i + 1)) * q.cc;
#if defined(TSC_TMA_DEVICE)
                if (tma) {
                    if (threadIdx.x == 0) tma_stage(b ^ 1, c1, n);
                } else
#endif
                {
                    stage<T>(q, sl, xn, sbuf + (b ^ 1) * buf_elems, c1, iy0, ix0);
                    cp_commit();
                }
            }
            /* shared-window address of the lane's pixel of each n-tile in this buffer */
            const unsigned sb = (unsigned)__cvta_generic_to_shared(sbuf + b * buf_elems);
            unsigned bj[NT];
#pragma unroll
            for (int j = 0; j < NT; ++j) bj[j] = sb + (unsigned)pb[j];
            const uint4* ap = p.afrag + (long long)(kb + 1) * 32 + lane;        /* next k-step's A fragment */
            const unsigned* op = p.koff + (long long)(kb + 1) * KW + (lane & 3); /* and its offsets */
#pragma unroll(NT >= 8 ? 1 : 2)
            for (int ks = kb; ks < ke; ++ks) {
                const mma_detail::KStep cur = nx;
                mma_detail::load_kstep<T>(ap, op, &nx);
                ap += 32;
                op += KW;
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    mma_detail::kstep_mma(acc[j], cur, mma_detail::kaddr(cur, bj[j]), static_cast<const T*>(nullptr));
            }
        }
        __syncthreads(); /* every warp is done with the staged input (buffers are reused below / next n) */
        if (WS == 1 && cl == 1) {
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int r = 0; r < 4; r += 2) /* registers (r, r + 1): pixels 2 tig, 2 tig + 1 of one channel */
                    mma_detail::store_out_pair<TW>(q, yn, kA + (r ? 8 : 0), mma_detail::acc_pixel<NT>(wp, j, r, lane),
                                                   oy0, ox0, acc[j][r], acc[j][r + 1], r ? biasB : biasA);
            continue;
        }
        float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) red[((warp * NT + j) * 4 + r) * 32 + lane] = acc[j][r];
        constexpr int OUTS = WG * WP * NT * 4 * 32; /* per slot (wg, wp): NT n-tiles x 4 registers x 32 lanes */
        constexpr int PAIRS = OUTS / 2;              /* register pairs (r, r + 1): two adjacent pixels, one channel */
        static_assert(PAIRS % 256 == 0, "whole passes of the block over the output pairs");
        if (cl == 1) {
            __syncthreads();
            /* pass it: pair o = tid + 256 it, so lane and register pair are fixed per thread and the rest is
             * compile-time arithmetic */
            const unsigned t = threadIdx.x;
            const int ln = (int)(t & 31u), r = 2 * (int)((t >> 5) & 1u);
#pragma unroll
            for (int it = 0; it < PAIRS / 256; ++it) {
                const unsigned jt = (t >> 6) + 4u * it; /* slot * NT + j */
                const int j = (int)(jt % NT), slot = (int)(jt / NT);
                float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
                for (int sp = 0; sp < WS; ++sp) {
                    const float* src = red + (((slot * WS + sp) * NT + j) * 4 + r) * 32 + ln;
                    s0 += src[0];
                    s1 += src[32];
                }
                const int k = mma_detail::out_channel(p, bg, slot / WP, r, ln);
                mma_detail::store_out_pair<TW>(q, yn, k, mma_detail::acc_pixel<NT>(slot % WP, j, r, ln), oy0, ox0, s0,
                                               s1, k < q.K ? __ldg(q.bias + k) : 0.0f);
            }
        }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (cl > 1) {
            cluster_sync(); /* every block's partial sums are in its shared memory */
            const int o0 = (PAIRS * rank) / cl, o1 = (PAIRS * (rank + 1)) / cl;
            for (int o = o0 + (int)threadIdx.x; o < o1; o += 256) {
                const int ln = o & 31, r = 2 * ((o >> 5) & 1), j = (o >> 6) % NT, slot = (o >> 6) / NT;
                const float* src = red + (((slot * WS) * NT + j) * 4 + r) * 32 + ln;
                const float s0 = sum_peers(src, cl, WS, NT * 4 * 32);
                const float s1 = sum_peers(src + 32, cl, WS, NT * 4 * 32);
                const int k = mma_detail::out_channel(p, bg, slot / WP, r, ln);
                mma_detail::store_out_pair<TW>(q, yn, k, mma_detail::acc_pixel<NT>(slot % WP, j, r, ln), oy0, ox0, s0,
                                               s1, k < q.K ? __ldg(q.bias + k) : 0.0f);
            }
        }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (cl > 1) {
            cluster_sync(); /* peers are done reading this block's partials (smem reused / block exits) */
            continue;
        }
#endif
        __syncthreads();
    }
}

template <typename T, int TH, int TW, int WG, int WP, int WS, int NT, int CL>
cudaError_t launch_mma_cfg(const MmaParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
    if (p.s.cl != CL || (p.s.tma && !tmap)) return cudaErrorInvalidValue;
    TmaDesc tm;
    if (p.s.tma) tm = *tmap;
    else for (int i = 0; i < 16; ++i) tm.opaque[i] = 0ull;
    dim3 grid((unsigned)(p.s.tiles_h * p.s.tiles_w * CL), (unsigned)p.s.groups,
              (unsigned)(p.s.N < 65535 ? p.s.N : 65535));
    if (CL > 1 || p.s.pdl) return launch_cluster(mma_kernel<T, TH, TW, WG, WP, WS, NT, CL>, CL, smem, grid, s, p.s.pdl, p, tm);
    mma_kernel<T, TH, TW, WG, WP, WS, NT, CL><<<grid, 256, smem, s>>>(p, tm);
    return cudaGetLastError();
}

/* Opt the element type's kernels of every config with more than 48 KB of staging (SB > 48) into `bytes` of dynamic
 * shared memory; the first error, if any. */
template <typename T>
cudaError_t mma_set_smem_limit(int bytes) {
    cudaError_t first = cudaSuccess;
#define TSC_A(I, TH, TW, WG, WP, WS, NT, CL, SB)                                                                   \
    if (SB > 48) {                                                                                                \
        const cudaError_t e = cudaFuncSetAttribute(mma_kernel<T, TH, TW, WG, WP, WS, NT, CL>,                     \
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);          \
        if (e != cudaSuccess && first == cudaSuccess) first = e;                                                  \
    }
    TSC_MMA_FOR_EACH(TSC_A)
#undef TSC_A
    return first;
}

}  // namespace tsc
#endif
