/*
 * Register-reuse sparse direct convolution (NCHW; R x S x stride geometries of
 * reuse_dispatch.inc, dilation 1, any padding).
 *
 * A block of 256 threads (8 warps) owns one image, an output tile TH x TW and a
 * group of output channels; the input is staged one chunk of CC input channels at
 * a time into shared memory, zero-padded (tile + halo), double-buffered with
 * cp.async (staging addresses stepped without integer divisions). Each warp slot
 * owns KT output channels; a lane owns PH x PW neighbouring output pixels of the
 * tile and keeps KT x PH x PW accumulators in registers. For every input channel
 * of the chunk that has nonzeros in the warp's channels, the lane loads its
 * ((PH-1)*ST+R) x ((PW-1)*ST+S) input patch ONCE from shared memory into registers
 * (one 16-byte load per row plus two halo words for 3x3 stride 1 with pad 1) and
 * every nonzero of the KT channels touching that input channel (value, case =
 * kl*R*S + r*S + s) jumps (one brx.idx) to an unrolled list of PH*PW register-only
 * FMAs: about one shared-memory word per KT*R*S*density*PH*PW/(patch) useful FMAs
 * instead of one per FMA (the smem kernel). With NS > 1 the NS warps of a slot
 * split the chunk's input channels and reduce their partial sums in shared memory
 * at the end (one launch, no atomics, no zeroing).
 *
 * fp32 I/O: fp32 FMAs. fp16 I/O (H2): half2 FMAs (fma.rn.f16x2, two pixels per
 * instruction) into half2 accumulators that are flushed into fp32 accumulators
 * after every staged chunk (at most CC input channels accumulate in fp16).
 */
#ifndef TRT_SPARSE_REUSE_KERNEL_CUH
#define TRT_SPARSE_REUSE_KERNEL_CUH

#include <cuda_fp16.h>
#include "tsc_internal.h"
#include "smem_kernel.cuh"

namespace tsc {

#include "reuse_dispatch.inc"

namespace reuse_detail {

using smem_detail::cp_commit;
using smem_detail::cp_one;
using smem_detail::cp_vec;
using smem_detail::cp_wait_all;
using smem_detail::zero_vec;

using smem_detail::act_f;
using smem_detail::stage;
using smem_detail::stage_lane;
using smem_detail::StageLane;
using smem_detail::st_out;
using smem_detail::to_f;

/* Patch row of PTW elements at rp (fp32 registers). FAST: 3x3 stride 1 with PW % 4 == 0 and the
 * row's element 1 16-byte aligned (pad_left = 1 mod 4): one vector load + two halo words. */
template <typename T, int PTW, bool FAST>
__device__ __forceinline__ void load_row(const T* rp, float (&dst)[PTW]) {
#pragma unroll
    for (int b = 0; b < PTW; ++b) dst[b] = to_f(rp[b]);
}
template <>
__device__ __forceinline__ void load_row<float, 6, true>(const float* rp, float (&dst)[6]) {
    const float4 m = *reinterpret_cast<const float4*>(rp + 1);
    dst[0] = rp[0]; dst[1] = m.x; dst[2] = m.y; dst[3] = m.z; dst[4] = m.w; dst[5] = rp[5];
}

/* Half2 pairs of a patch row: X2[q] = (x[q], x[q+1]), q < PTW - 1. */
template <int PTW, bool FAST>
__device__ __forceinline__ void load_row_h2(const __half* rp, unsigned (&dst)[PTW - 1]) {
    __half h[PTW];
    if (FAST && PTW == 6) {
        const uint2 m = *reinterpret_cast<const uint2*>(rp + 1);
        h[0] = rp[0];
        const __half2 a = *reinterpret_cast<const __half2*>(&m.x), b = *reinterpret_cast<const __half2*>(&m.y);
        h[1] = __low2half(a); h[2] = __high2half(a); h[3] = __low2half(b); h[4] = __high2half(b);
        h[PTW - 1] = rp[PTW - 1];
    } else {
#pragma unroll
        for (int b = 0; b < PTW; ++b) h[b] = rp[b];
    }
#pragma unroll
    for (int q = 0; q < PTW - 1; ++q) {
        const __half2 pr = __halves2half2(h[q], h[q + 1]);
        dst[q] = *reinterpret_cast<const unsigned*>(&pr);
    }
}


}  // namespace reuse_detail

/* The warp's nonzeros of one staged chunk as a stream: lanes hold two batches of 32 consecutive entries
 * (coalesced loads, the next batch in flight); the stream runs on across the chunk's input channels
 * (their lists are contiguous). for_channel() walks one channel's nonzeros batch by batch: per nonzero
 * two shuffles (issued one nonzero ahead) and the dispatch, no per-nonzero refill test. The channel
 * boundaries seg[0..cc] were loaded one chunk ahead (lane l holds seg[l] and seg[32 + l]). */
struct EntryStream {
    const int2* __restrict__ entries;
    int bb;          /* index of the entry in cur lane 0 */
    int2 cur, nxt;   /* entries[bb + lane], entries[bb + 32 + lane] (64 readable entries past the end) */
    __device__ __forceinline__ void start(const int2* __restrict__ e, int e0, int lane) {
        entries = e;
        bb = e0;
        cur = __ldg(entries + bb + lane);
        nxt = __ldg(entries + bb + 32 + lane);
    }
    /* f(value bits, case) for the nonzeros [e0, e1) */
    template <typename F>
    __device__ __forceinline__ void for_channel(int e0, int e1, int lane, F&& f) {
        int t = e0;
        while (t < e1) {
            if (t >= bb + 32) { /* warp-uniform, once per 32 nonzeros */
                bb += 32;
                cur = nxt;
                nxt = __ldg(entries + bb + 32 + lane);
            }
            const int j0 = t - bb, j1 = min(e1 - bb, 32);
            int v = __shfl_sync(0xffffffffu, cur.x, j0), code = __shfl_sync(0xffffffffu, cur.y, j0);
#pragma unroll 1
            for (int j = j0; j < j1; ++j) {
                const int vn = __shfl_sync(0xffffffffu, cur.x, j + 1), cn = __shfl_sync(0xffffffffu, cur.y, j + 1);
                f(v, code);
                v = vn;
                code = cn;
            }
            t = bb + j1;
        }
    }
};

__device__ __forceinline__ int seg_at(int seg_lo, int seg_hi, int i) {
    return i < 32 ? __shfl_sync(0xffffffffu, seg_lo, i) : __shfl_sync(0xffffffffu, seg_hi, i - 32);
}

/* The nonzeros of one staged chunk for one warp (fp32 FMAs). */
template <typename T, bool H2, int R, int S, int ST, int KT, int PH, int PW, bool FAST>
struct ReuseChunk {
    static __device__ __forceinline__ void run(float (&acc)[KT][PH * PW], const T* sb, int seg_lo, int seg_hi,
                                               const SmemParams& p, int lane) {
        using namespace reuse_detail;
        constexpr int PTH = (PH - 1) * ST + R, PTW = (PW - 1) * ST + S;
        int e0 = seg_at(seg_lo, seg_hi, 0);
        if (e0 == seg_at(seg_lo, seg_hi, p.cc)) return;
        EntryStream es;
        es.start(p.entries, e0, lane);
        for (int cl = 0; cl < p.cc; ++cl) {
            const int e1 = seg_at(seg_lo, seg_hi, cl + 1);
            if (e0 < e1) {
                float xp[PTH][PTW];
                const T* cp = sb + cl * p.cstride;
#pragma unroll
                for (int a = 0; a < PTH; ++a) load_row<T, PTW, FAST>(cp + a * p.pitch, xp[a]);
                es.for_channel(e0, e1, lane, [&](int v, int code) {
                    ReuseFma<R, S, ST, KT, PH, PW>::run(acc, xp, __int_as_float(v), code);
                });
            }
            e0 = e1;
        }
    }
};

/* fp16 I/O: half2 FMAs into half2 accumulators, flushed into the fp32 ones at the end of the chunk. */
template <int R, int S, int ST, int KT, int PH, int PW, bool FAST>
struct ReuseChunk<__half, true, R, S, ST, KT, PH, PW, FAST> {
    static __device__ __forceinline__ void run(float (&acc)[KT][PH * PW], const __half* sb, int seg_lo, int seg_hi,
                                               const SmemParams& p, int lane) {
        using namespace reuse_detail;
        constexpr int PTH = (PH - 1) * ST + R, PTW = (PW - 1) * ST + S;
        constexpr int PX2 = PH * PW / 2;
        int e0 = seg_at(seg_lo, seg_hi, 0);
        if (e0 == seg_at(seg_lo, seg_hi, p.cc)) return;
        unsigned acc2[KT][PX2];
#pragma unroll
        for (int kl = 0; kl < KT; ++kl)
#pragma unroll
            for (int j = 0; j < PX2; ++j) acc2[kl][j] = 0u;
        EntryStream es;
        es.start(p.entries, e0, lane);
        for (int cl = 0; cl < p.cc; ++cl) {
            const int e1 = seg_at(seg_lo, seg_hi, cl + 1);
            if (e0 < e1) {
                unsigned xp[PTH][PTW - 1];
                const __half* cp = sb + cl * p.cstride;
#pragma unroll
                for (int a = 0; a < PTH; ++a) load_row_h2<PTW, FAST>(cp + a * p.pitch, xp[a]);
                es.for_channel(e0, e1, lane, [&](int v, int code) {
                    ReuseHfma2<R, S, ST, KT, PH, PW>::run(acc2, xp, (unsigned)v, code);
                });
            }
            e0 = e1;
        }
#pragma unroll
        for (int kl = 0; kl < KT; ++kl)
#pragma unroll
            for (int j = 0; j < PX2; ++j) {
                const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&acc2[kl][j]));
                acc[kl][2 * j] += f.x;
                acc[kl][2 * j + 1] += f.y;
            }
    }
};

/* One kernel for fp32 (H2 = false, T = float) and half2 fp16 (H2 = true, T = __half). */
template <typename T, bool H2, int R, int S, int ST, int KT, int PH, int PW, int LW, bool FAST>
__global__ void __launch_bounds__(256, (KT * PH * PW <= 32 ? 2 : 1)) reuse_kernel(SmemParams p) {
    using namespace reuse_detail;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LH = 32 / LW;
    constexpr int TH = LH * PH, TW = LW * PW;
    constexpr int PX = PH * PW;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int lr = lane / LW, lc = lane % LW;
    const int g = blockIdx.y;
    const int tile = blockIdx.x;
    const int t_y = udiv(tile, p.tiles_w, p.tw_magic), t_x = tile - t_y * p.tiles_w;
    const int oy0 = t_y * TH, ox0 = t_x * TW;
    const int iy0 = oy0 * ST - p.pad_top;
    const int ix0 = ox0 * ST - p.pad_left - p.lead;
    /* lane's patch origin (elements) in a staged channel */
    const int porg = (lr * PH * ST) * p.pitch + lc * PW * ST + p.lead;
    const int cs0 = __ldg(p.gch_off + g), cs1 = __ldg(p.gch_off + g + 1);
    const int buf_elems = p.cc * p.cstride;
    T* const sbuf = reinterpret_cast<T*>(smem_raw);
    const int ns = p.ns;
    const int cpb = (8 >> (__ffs(ns) - 1)) * KT; /* ns is 1, 2, 4 or 8 */
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    T* __restrict__ y = reinterpret_cast<T*>(p.y);
    const StageLane sl = stage_lane(p);

    for (int n = blockIdx.z; n < p.N; n += gridDim.z) {
        const T* xn = x + (long long)n * p.C * p.H * p.W;
        float acc[KT][PX];
#pragma unroll
        for (int kl = 0; kl < KT; ++kl)
#pragma unroll
            for (int j = 0; j < PX; ++j) acc[kl][j] = 0.0f;

        if (cs0 < cs1) stage<T>(p, sl, xn, sbuf, __ldg(p.chunk_ids + cs0) * p.cc, iy0, ix0);
        cp_commit();
        /* channel boundaries of the warp's lists in chunk i: seg[(i * 8 + warp) * cc + 0 .. cc] (lanes 0..cc) */
        int seg_lo = 0, seg_hi = 0;
        if (cs0 < cs1) {
            const int* sg = p.seg + ((long long)cs0 * 8 + warp) * p.cc;
            seg_lo = __ldg(sg + min(lane, p.cc));
            seg_hi = __ldg(sg + min(32 + lane, p.cc));
        }
        for (int i = cs0; i < cs1; ++i) {
            cp_wait_all();
            __syncthreads();
            const int b = (i - cs0) & 1;
            if (i + 1 < cs1) {
                stage<T>(p, sl, xn, sbuf + (b ^ 1) * buf_elems, __ldg(p.chunk_ids + i + 1) * p.cc, iy0, ix0);
                cp_commit();
            }
            const T* sb = sbuf + b * buf_elems + porg;
            int nlo = 0, nhi = 0;
            if (i + 1 < cs1) { /* next chunk's boundaries in flight while this chunk runs */
                const int* sg = p.seg + ((long long)(i + 1) * 8 + warp) * p.cc;
                nlo = __ldg(sg + min(lane, p.cc));
                nhi = __ldg(sg + min(32 + lane, p.cc));
            }
            ReuseChunk<T, H2, R, S, ST, KT, PH, PW, FAST>::run(acc, sb, seg_lo, seg_hi, p, lane);
            seg_lo = nlo;
            seg_hi = nhi;
        }
        __syncthreads(); /* every warp is done with the staged input (buffers are reused below / next n) */
        if (ns == 1) {
#pragma unroll
            for (int kl = 0; kl < KT; ++kl) {
                const int k = __ldg(p.perm + g * cpb + warp * KT + kl);
                if (k < 0) continue;
                const float bk = __ldg(p.bias + k);
                T* yk = y + ((long long)n * p.K + k) * p.P * p.Q;
#pragma unroll
                for (int jr = 0; jr < PH; ++jr) {
                    const int oy = oy0 + lr * PH + jr;
                    if (oy >= p.P) continue;
#pragma unroll
                    for (int jc = 0; jc < PW; ++jc) {
                        const int ox = ox0 + lc * PW + jc;
                        if (ox < p.Q)
                            st_out(yk + (long long)oy * p.Q + ox, act_f(acc[kl][jr * PW + jc] + bk, p.act, p.clip_min, p.clip_max));
                    }
                }
            }
        } else {
            float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
            for (int kl = 0; kl < KT; ++kl)
#pragma unroll
                for (int j = 0; j < PX; ++j) red[((warp * KT + kl) * PX + j) * 32 + lane] = acc[kl][j];
            __syncthreads();
            const int outs = (8 / ns) * KT * PX * 32;
            for (int o = threadIdx.x; o < outs; o += 256) {
                const int ln = o & 31;
                const int j = (o >> 5) % PX;
                const int sk = (o >> 5) / PX; /* slot * KT + kl */
                const int slot = sk / KT, kl = sk - slot * KT;
                float s = 0.0f;
                for (int sp = 0; sp < ns; ++sp) s += red[((((slot * ns + sp) * KT) + kl) * PX + j) * 32 + ln];
                const int k = __ldg(p.perm + g * cpb + sk);
                const int jr = j / PW, jc = j - jr * PW;
                const int oy = oy0 + (ln / LW) * PH + jr, ox = ox0 + (ln % LW) * PW + jc;
                if (k >= 0 && oy < p.P && ox < p.Q)
                    st_out(y + (((long long)n * p.K + k) * p.P + oy) * p.Q + ox,
                           act_f(s + __ldg(p.bias + k), p.act, p.clip_min, p.clip_max));
            }
            __syncthreads();
        }
    }
}

template <typename T, bool H2, int R, int S, int ST, int KT, int PH, int PW, int LW>
cudaError_t launch_reuse_cfg(bool fast, const SmemParams& p, size_t smem, cudaStream_t s) {
    dim3 grid((unsigned)(p.tiles_h * p.tiles_w), (unsigned)p.groups, (unsigned)(p.N < 65535 ? p.N : 65535));
    constexpr bool can_fast = (R == 3 && S == 3 && ST == 1 && PW % 4 == 0);
    if (can_fast && fast)
        reuse_kernel<T, H2, R, S, ST, KT, PH, PW, LW, can_fast><<<grid, 256, smem, s>>>(p);
    else
        reuse_kernel<T, H2, R, S, ST, KT, PH, PW, LW, false><<<grid, 256, smem, s>>>(p);
    return cudaGetLastError();
}

template <typename T, bool H2, int R, int S, int ST, int KT, int PH, int PW, int LW>
cudaError_t set_smem_reuse_cfg(int bytes) {
    constexpr bool can_fast = (R == 3 && S == 3 && ST == 1 && PW % 4 == 0);
    cudaError_t e = cudaFuncSetAttribute(reuse_kernel<T, H2, R, S, ST, KT, PH, PW, LW, false>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (can_fast) {
        const cudaError_t e2 = cudaFuncSetAttribute(reuse_kernel<T, H2, R, S, ST, KT, PH, PW, LW, can_fast>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (e2 != cudaSuccess) e = e2;
    }
    return e;
}

}  // namespace tsc
#endif
