/*
 * Register-tile sparse direct convolution (NCHW), the fast path.
 *
 * One warp owns a spatial tile (32 lanes x PH x PW output pixels per lane) and a
 * group of KT output channels; its accumulators (KT x PH x PW fp32) stay in
 * registers. The group's nonzeros are one warp-uniform list of (value, code)
 * sorted by input channel c; on each new c a lane loads its input patch
 * ((PH-1)*ST+R) x ((PW-1)*ST+S) straight from global memory (L1 serves the halo
 * overlap) into registers, and each nonzero jumps (one brx.idx, generated in
 * tile_dispatch.inc) to a fully unrolled list of PH*PW FMAs with fixed register
 * operands, so each loaded input is reused by every nonzero of the KT channels
 * touching it. A block of `nsplit` warps splits the group's nonzero list
 * (balanced by count) and reduces the partial sums in shared memory: one launch,
 * no atomics, no output zeroing. fp16 I/O accumulates in fp32.
 */
#ifndef TRT_SPARSE_TILE_KERNEL_CUH
#define TRT_SPARSE_TILE_KERNEL_CUH

#include <cuda_fp16.h>
#include "tsc_internal.h"

namespace tsc {

#include "tile_dispatch.inc"

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

__device__ __forceinline__ float ld_in(const float* p) { return __ldg(p); }
__device__ __forceinline__ float ld_in(const __half* p) { return __half2float(__ldg(p)); }

__device__ __forceinline__ float activate(float v, int act, float lo, float hi) {
    if (act == 1) return fmaxf(v, 0.0f);
    if (act == 2) return fminf(fmaxf(v, lo), hi);
    return v;
}

__device__ __forceinline__ void ld4(const float* p, float& a, float& b, float& c, float& d) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    a = v.x; b = v.y; c = v.z; d = v.w;
}
__device__ __forceinline__ void ld4(const __half* p, float& a, float& b, float& c, float& d) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
    a = lo.x; b = lo.y; c = hi.x; d = hi.y;
}

/* Patch rows of 6 columns: cols 1..4 one aligned 4-wide load; col 0 from the left lane's col 4,
 * col 5 from the right lane's col 1 (edge lanes of the lane row load them). All lanes must call. */
template <bool VEC> struct PatchVec {
    template <typename T, int PTH, int PTW>
    static __device__ __forceinline__ void load(float (&)[PTH][PTW], const T*, int, unsigned, unsigned, bool, bool) {}
};
template <> struct PatchVec<true> {
template <typename T, int PTH, int PTW>
static __device__ __forceinline__ void load(float (&xp)[PTH][PTW], const T* xc, int W, unsigned rm, unsigned cm,
                                            bool left_edge, bool right_edge) {
    static_assert(PTW == 6, "vector patch is 6 wide");
    const bool mid = (cm >> 1) & 1u, lok = cm & 1u, rok_c = (cm >> 5) & 1u;
    /* phase 1: every load of the patch in flight at once (one memory latency per channel) */
    float v[PTH][4], le[PTH], re[PTH];
#pragma unroll
    for (int a = 0; a < PTH; ++a) {
        const T* row = xc + a * W;
        const bool rok = (rm >> a) & 1u;
        v[a][0] = v[a][1] = v[a][2] = v[a][3] = 0.0f;
        if (rok && mid) ld4(row + 1, v[a][0], v[a][1], v[a][2], v[a][3]);
        le[a] = (left_edge && rok && lok) ? ld_in(row) : 0.0f;
        re[a] = (right_edge && rok && rok_c) ? ld_in(row + 5) : 0.0f;
    }
    /* phase 2: halo columns from the neighbour lanes */
#pragma unroll
    for (int a = 0; a < PTH; ++a) {
        const float l = __shfl_up_sync(0xffffffffu, v[a][3], 1);
        const float r = __shfl_down_sync(0xffffffffu, v[a][0], 1);
        xp[a][0] = left_edge ? le[a] : l;
        xp[a][1] = v[a][0]; xp[a][2] = v[a][1]; xp[a][3] = v[a][2]; xp[a][4] = v[a][3];
        xp[a][5] = right_edge ? re[a] : r;
    }
}
};

template <typename T, int R, int S, int ST, int KT, int PH, int PW>
__global__ void __launch_bounds__(256) tile_kernel(TileParams p) {
    constexpr int PTH = (PH - 1) * ST + R;
    constexpr int PTW = (PW - 1) * ST + S;
    constexpr bool VEC = (ST == 1 && S == 3 && PW == 4);
    static_assert(PTH <= 32 && PTW <= 32, "patch masks are 32 bits");
    extern __shared__ float red[];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int g = blockIdx.y;
    int t = blockIdx.x;
    const int tw = t % p.tiles_w;
    t /= p.tiles_w;
    const int th = t % p.tiles_h;
    const int n = t / p.tiles_h;
    const int lw = 1 << p.lw_log2;
    const int lh = 32 >> p.lw_log2;
    const int oh0 = ((th * lh) + (lane >> p.lw_log2)) * PH;
    const int ow0 = ((tw * lw) + (lane & (lw - 1))) * PW;

    float acc[KT][PH * PW];
#pragma unroll
    for (int k = 0; k < KT; ++k)
#pragma unroll
        for (int i = 0; i < PH * PW; ++i) acc[k][i] = 0.0f;

    const int gb = __ldg(p.group_off + g);
    const int cnt = __ldg(p.group_off + g + 1) - gb;
    const int beg = gb + (int)(((long long)cnt * warp) / p.nsplit);
    const int end = gb + (int)(((long long)cnt * (warp + 1)) / p.nsplit);

    if (beg < end) {
        const int ih0 = oh0 * ST - p.pad_top;
        const int iw0 = ow0 * ST - p.pad_left;
        unsigned rm = 0u, cm = 0u;
#pragma unroll
        for (int i = 0; i < PTH; ++i)
            if ((unsigned)(ih0 + i) < (unsigned)p.H) rm |= 1u << i;
#pragma unroll
        for (int j = 0; j < PTW; ++j)
            if ((unsigned)(iw0 + j) < (unsigned)p.W) cm |= 1u << j;
        const long long hw = (long long)p.H * p.W;
        /* may point before the image: only dereferenced where the masks allow */
        const T* xn = reinterpret_cast<const T*>(p.x) + (long long)n * p.C * hw + ((long long)ih0 * p.W + iw0);
        float xp[PTH][PTW];
        int cur_c = -1;
        /* vector path (3x3, stride 1, 4 pixels per lane, pad_left 1, W % 4 == 0, aligned input): each patch
         * row is one aligned 4-wide load plus the two halo columns taken from the neighbour lanes */
        const bool vec = VEC && p.vec;
        const int lx = lane & (lw - 1);
        /* nonzeros arrive in lane batches of 32 (coalesced), two batches in flight, broadcast by shuffles */
        int2 bat = __ldg(p.entries + min(beg + lane, end));
        int2 nxt = __ldg(p.entries + min(beg + 32 + lane, end));
        /* software-pipelined: the next nonzero's shuffles overlap this nonzero's dispatch */
        int code = __shfl_sync(0xffffffffu, bat.y, 0);
        float v = __int_as_float(__shfl_sync(0xffffffffu, bat.x, 0));
        for (int i = beg; i < end; ++i) {
            const int jn = (i + 1 - beg) & 31;
            if (jn == 0) {
                bat = nxt;
                nxt = __ldg(p.entries + min(i + 33 + lane, end));
            }
            const int code_n = __shfl_sync(0xffffffffu, bat.y, jn);
            const float v_n = __int_as_float(__shfl_sync(0xffffffffu, bat.x, jn));
            const int c = code >> kCaseBits;
            if (c != cur_c) {
                cur_c = c;
                const T* xc = xn + (long long)c * hw;
                if (vec) {
                    PatchVec<VEC>::load(xp, xc, p.W, rm, cm, lx == 0, lx == lw - 1);
                } else {
#pragma unroll
                    for (int a = 0; a < PTH; ++a) {
                        const T* row = xc + a * p.W;
                        const bool rok = (rm >> a) & 1u;
#pragma unroll
                        for (int b = 0; b < PTW; ++b)
                            xp[a][b] = (rok && ((cm >> b) & 1u)) ? ld_in(row + b) : 0.0f;
                    }
                }
            }
            TileFma<R, S, ST, KT, PH, PW>::run(acc, xp, v, code & ((1 << kCaseBits) - 1));
            code = code_n;
            v = v_n;
        }
    }

    const long long pq = (long long)p.P * p.Q;
    if (p.nsplit == 1) {
#pragma unroll
        for (int kl = 0; kl < KT; ++kl) {
            const int k = __ldg(p.perm + g * KT + kl);
            if (k < 0) continue;
            const float bk = __ldg(p.bias + k);
            T* yk = reinterpret_cast<T*>(p.y) + ((long long)n * p.K + k) * pq;
#pragma unroll
            for (int ph = 0; ph < PH; ++ph) {
                const int oh = oh0 + ph;
                if (oh >= p.P) continue;
#pragma unroll
                for (int pw = 0; pw < PW; ++pw) {
                    const int ow = ow0 + pw;
                    if (ow < p.Q)
                        yk[(long long)oh * p.Q + ow] =
                            from_f<T>(activate(acc[kl][ph * PW + pw] + bk, p.act, p.clip_min, p.clip_max));
                }
            }
        }
        return;
    }

    /* split: partial sums -> shared memory [warp][slot][lane]; every thread then reduces some outputs */
    constexpr int SLOTS = KT * PH * PW;
#pragma unroll
    for (int kl = 0; kl < KT; ++kl)
#pragma unroll
        for (int i = 0; i < PH * PW; ++i) red[(warp * SLOTS + kl * PH * PW + i) * 32 + lane] = acc[kl][i];
    __syncthreads();
    for (int idx = threadIdx.x; idx < SLOTS * 32; idx += blockDim.x) {
        const int ln = idx & 31;
        const int slot = idx >> 5;
        const int kl = slot / (PH * PW);
        const int pix = slot - kl * (PH * PW);
        const int k = __ldg(p.perm + g * KT + kl);
        if (k < 0) continue;
        const int oh = ((th * lh) + (ln >> p.lw_log2)) * PH + pix / PW;
        const int ow = ((tw * lw) + (ln & (lw - 1))) * PW + pix % PW;
        if (oh >= p.P || ow >= p.Q) continue;
        float sum = 0.0f;
        for (int w = 0; w < p.nsplit; ++w) sum += red[(w * SLOTS + slot) * 32 + ln];
        T* yk = reinterpret_cast<T*>(p.y) + ((long long)n * p.K + k) * pq;
        yk[(long long)oh * p.Q + ow] = from_f<T>(activate(sum + __ldg(p.bias + k), p.act, p.clip_min, p.clip_max));
    }
}

template <typename T>
cudaError_t launch_tile_t(int geom, int cfg, const TileParams& p, cudaStream_t s) {
    TileCfgInfo ci = tile_cfg_info(geom, cfg);
    const int groups = (p.K + ci.kt - 1) / ci.kt;
    dim3 grid((unsigned)((long long)p.tiles_h * p.tiles_w * p.N), (unsigned)groups, 1);
    dim3 block(32 * p.nsplit, 1, 1);
    const size_t smem = tile_smem_bytes(geom, cfg, p.nsplit);
    const int key = geom * TILE_CFGS + cfg;
#define TSC_LAUNCH(G, I, R, S, ST, KT, PH, PW) \
    case (G) * TILE_CFGS + (I): tile_kernel<T, R, S, ST, KT, PH, PW><<<grid, block, smem, s>>>(p); break;
    switch (key) {
        TSC_TILE_FOR_EACH(TSC_LAUNCH)
        default: return cudaErrorInvalidValue;
    }
#undef TSC_LAUNCH
    return cudaGetLastError();
}

template <typename T>
cudaError_t set_smem_t(int bytes) {
    cudaError_t e = cudaSuccess, e2;
#define TSC_SET(G, I, R, S, ST, KT, PH, PW) \
    e2 = cudaFuncSetAttribute(tile_kernel<T, R, S, ST, KT, PH, PW>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); \
    if (e2 != cudaSuccess) e = e2;
    TSC_TILE_FOR_EACH(TSC_SET)
#undef TSC_SET
    return e;
}

}  // namespace tsc
#endif
