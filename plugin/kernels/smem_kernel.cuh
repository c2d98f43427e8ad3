/*
 * Shared-memory sparse direct convolution (NCHW or NHWC, any R x S, stride, dilation, pads).
 *
 * A block of 256 threads (8 warps) owns one image, an output tile TH x TW and a
 * group of output channels. The input is staged one chunk of CC input channels at
 * a time into shared memory, ZERO-PADDED (tile + halo), double-buffered with
 * cp.async (16-byte copies for fp32 / 8-byte for fp16 where the rows are aligned,
 * 4-byte copies or plain loads otherwise; plain loads below sm_80), one
 * __syncthreads per chunk. Nonzeros were re-laid out at plan creation per
 * (group, chunk, warp, channel of the warp) as (fp32 value, byte offset in the staged chunk) lists; the
 * block's lists of a chunk are staged into shared memory with its input tile (the layout builder sizes the
 * chunks so that both fit), so a nonzero reaches every lane by one warp-uniform LDS.64 (a broadcast), and each
 * lane does, per nonzero, one address add (PXH with a runtime pitch) and PXH*PXW (LDS + FFMA) whose offsets are
 * immediates -- no decode, no masks, no bounds checks. The row pitch is chosen on the host so that the lane
 * rows of one LDS fall on distinct banks. Lanes form a LW x (32/LW) grid; lane pixel (jr, jc)
 * is at tile position (lane_row + jr*LH, lane_col + jc*LW), so consecutive lanes
 * read consecutive shared-memory words. Warps = slots x NS: with NS > 1 the NS
 * warps of a slot split its channels' nonzeros and reduce their partial sums in
 * shared memory (one launch, no atomics, no zeroing). With p.cl > 1 (sm_90+, small maps) the p.cl blocks
 * of a thread-block cluster split the group's input-channel chunks; each block leaves its partial sums in
 * its shared memory and every block reduces a 1/cl slice of the outputs by reading its peers' partials
 * through distributed shared memory (still one launch, no atomics). Accumulation is fp32 for
 * fp32 and fp16 I/O (fp16 inputs staged as half, converted at use).
 */
#ifndef TRT_SPARSE_SMEM_KERNEL_CUH
#define TRT_SPARSE_SMEM_KERNEL_CUH

#include <cuda_fp16.h>
#include "tsc_internal.h"
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12000
#define TSC_HAS_CLUSTERS 1 /* cudaLaunchKernelEx with a cluster dimension */
#endif
/* The tensor-map parameter is __grid_constant__ (its address is what a TMA copy takes) where the toolkit and the
 * device pass support it. */
#if defined(TSC_HAS_TMA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700)
#define TSC_GRID_CONST __grid_constant__
#else
#define TSC_GRID_CONST
#endif

namespace tsc {
namespace smem_detail {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ void st_out(float* p, float v) { *p = v; }
__device__ __forceinline__ void st_out(__half* p, float v) { *p = __float2half_rn(v); }

/* 32-bit shared-window address of a shared-memory pointer (portable PTX: any arch, CUDA 10+). */
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (unsigned)a;
}
/* Element at shared-window address a, as float: one LDS whose immediate offset the caller folds in. */
__device__ __forceinline__ float lds_elem(unsigned a, const float*) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}
__device__ __forceinline__ float lds_elem(unsigned a, const __half*) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a));
    return __half2float(__ushort_as_half(v));
}

/* Nonzero t of a staged list at shared-window address a: (value bits, byte offset), one warp-uniform LDS.64. */
__device__ __forceinline__ int2 lds_entry(unsigned a) {
    int2 v;
    asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a));
    return v;
}

/* Half2 word at shared-window address a (half2 layouts: the lane's two pixels' inputs in one word). */
__device__ __forceinline__ __half2 lds_h2(unsigned a) {
    __half2 h;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(*reinterpret_cast<unsigned*>(&h)) : "r"(a));
    return h;
}

__device__ __forceinline__ float act_f(float v, int act, float lo, float hi) {
    if (act == 1) return fmaxf(v, 0.0f);
    if (act == 2) return fminf(fmaxf(v, lo), hi);
    return v;
}

/* Copy of one U (4, 8 or 16 bytes, aligned to its size both sides) from global to shared memory: cp.async on sm_80+
 * (16 bytes bypass L1), a load + store of a U before. */
template <typename U> __device__ __forceinline__ void cp_unit(void* dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    if (sizeof(U) == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"((int)sizeof(U)));
#else
    *reinterpret_cast<U*>(dst) = __ldg(reinterpret_cast<const U*>(src));
#endif
}
/* Vector copy of 4 elements (16 bytes fp32, 8 bytes fp16). */
__device__ __forceinline__ void cp_vec(float* dst, const float* src) { cp_unit<float4>(dst, src); }
__device__ __forceinline__ void cp_vec(__half* dst, const __half* src) { cp_unit<uint2>(dst, src); }
/* Copy of 2 elements (8 bytes fp32, 4 bytes fp16). */
__device__ __forceinline__ void cp_pair(float* dst, const float* src) { cp_unit<uint2>(dst, src); }
__device__ __forceinline__ void cp_pair(__half* dst, const __half* src) { cp_unit<unsigned>(dst, src); }
__device__ __forceinline__ void zero_pair(float* dst) { *reinterpret_cast<float2*>(dst) = make_float2(0.f, 0.f); }
__device__ __forceinline__ void zero_pair(__half* dst) { *reinterpret_cast<unsigned*>(dst) = 0u; }
__device__ __forceinline__ void zero_vec(float* dst) { *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f); }
__device__ __forceinline__ void zero_vec(__half* dst) { *reinterpret_cast<uint2*>(dst) = make_uint2(0u, 0u); }

/* Scalar copy of one element. */
__device__ __forceinline__ void cp_one(float* dst, const float* src) { cp_unit<float>(dst, src); }
__device__ __forceinline__ void cp_one(__half* dst, const __half* src) { *dst = __ldg(src); }
/* value 1 where cp_one is an asynchronous copy (fp32 on sm_80+), 0 where it is a plain load + store */
template <typename T> struct CpOneAsync { static const int value = 0; };
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> struct CpOneAsync<float> { static const int value = 1; };
#endif

/* One 8-byte list entry. */
__device__ __forceinline__ void cp_entry(int2* dst, const int2* src) { cp_unit<uint2>(dst, src); }

__device__ __forceinline__ void cp_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
__device__ __forceinline__ void cp_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Thread-block cluster barrier (release/acquire: shared-memory writes before it are visible to the peers). */
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
/* Load the float at the same shared-memory offset as `local` in block `rank` of the cluster (DSMEM). */
__device__ __forceinline__ float ld_peer(const float* local, unsigned rank) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(local);
    unsigned ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
/* Sum over the cl (<= 8) blocks of the cluster and nsp partial-sum slots (sp_stride floats apart) of the floats at
 * `base`'s offset: the cl peers' loads of a slot are issued back to back (one DSMEM round trip per slot, not one
 * per peer), then added in peer order. */
__device__ __forceinline__ float sum_peers(const float* base, int cl, int nsp, int sp_stride) {
    float acc[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) acc[q] = 0.0f;
    for (int sp = 0; sp < nsp; ++sp) {
        float t[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) t[q] = q < cl ? ld_peer(base + sp * sp_stride, (unsigned)q) : 0.0f;
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[q] += t[q];
    }
    float s = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; ++q) s += acc[q];
    return s;
}
#endif

#if defined(TSC_HAS_TMA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TSC_TMA_DEVICE 1 /* this device pass has the Tensor Memory Accelerator path */
/* mbarrier at shared-window address a: init with one arrival, publish the init to the async proxy. */
__device__ __forceinline__ void mbar_init(unsigned a) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(a) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
/* The one arrival of this phase, expecting `bytes` of asynchronous copies. */
__device__ __forceinline__ void mbar_expect_tx(unsigned a, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes) : "memory");
}
/* Wait until the phase with the given parity has completed. */
__device__ __forceinline__ void mbar_wait(unsigned a, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(a), "r"(parity) : "memory");
    } while (!done);
}
/* Order this thread's generic-proxy shared-memory accesses before later async-proxy (TMA) writes. */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* Box (x, y, c, n) of the 4-D tensor map at tmap into shared-window address dst, completing on mbarrier bar;
 * out-of-bounds elements (padding, past the last channel) are written as zeros. */
__device__ __forceinline__ void tma_load_4d(unsigned dst, const void* tmap, int x, int y, int c, int n, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
        ::"r"(dst), "l"(tmap), "r"(x), "r"(y), "r"(c), "r"(n), "r"(bar) : "memory");
}
/* `bytes` (a multiple of 16; both addresses 16-aligned) from global src to shared-window address dst. */
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
#endif

/* With cl > 1 blocks per cluster: narrow the listed-chunk range [*cs0, *cs1) to block `rank`'s share. */
__device__ __forceinline__ void cluster_share(int cl, int rank, int* cs0, int* cs1) {
    if (cl > 1) { /* cl is a power of two (1, 2, 4, 8): shifts, no division */
        const int n_ch = *cs1 - *cs0, sh = __ffs(cl) - 1;
        *cs1 = *cs0 + ((n_ch * (rank + 1)) >> sh);
        *cs0 = *cs0 + ((n_ch * rank) >> sh);
    }
}

/* A thread's place in the staging walk (once per kernel): it keeps one column unit v of the staged rows
 * row0, row0 + st_step, ... (staged row R = c * in_h + r); row0 >= st_step: the thread idles. */
struct StageLane {
    int row0, c, r, v;
    int nc, nr, ncol; /* NHWC staging (p.nhwc): channel, first staged row and column of the thread (nr >= in_h: idle) */
};
__device__ __forceinline__ StageLane stage_lane(const SmemParams& p) {
    StageLane l;
    l.row0 = udiv((int)threadIdx.x, p.st_nv, p.nv_magic); /* < 256: both quotients use exact magics */
    l.v = (int)threadIdx.x - l.row0 * p.st_nv;
    l.c = udiv(l.row0, p.in_h, p.inh_magic);
    l.r = l.row0 - l.c * p.in_h;
    if (l.row0 >= p.st_step) l.row0 = 1 << 30; /* idle: stage() returns before using c / r */
    l.nc = l.nr = l.ncol = 0;
    if (p.nhwc) { /* once per kernel: cc consecutive threads per staged pixel */
        const int pix = (int)threadIdx.x / p.cc;
        l.nc = (int)threadIdx.x - pix * p.cc;
        l.nr = pix / p.st_nv;
        l.ncol = pix - l.nr * p.st_nv;
        if (pix >= 256 / p.cc) l.nr = 1 << 30; /* idle */
    }
    return l;
}

/* NHWC input: stage channels [c0, c0 + cc) of the block's tile (+ halo) into the channel-major tile (channel c's
 * rows at buf + c * cstride, row pitch p.pitch), zero outside the image. Consecutive threads copy consecutive
 * channels of one pixel (coalesced reads; cstride odd: distinct banks); fp32 by 4-byte cp.async on sm_80+, else
 * plain loads, four in flight per thread. */
template <typename T>
__device__ __forceinline__ void stage_nhwc(const SmemParams& p, const StageLane& l, const T* __restrict__ xn, T* buf,
                                           int c0, int iy0, int ix0) {
    if (l.nc >= min(p.cc, p.C - c0)) return; /* channel past C: never read by a nonzero */
    const int cols = p.st_nv, in_h = p.in_h, pitch = p.pitch, ps_r = p.nh_ps_r, ps_c = p.nh_ps_c;
    const unsigned H = (unsigned)p.H, W = (unsigned)p.W;
    const long long C = p.C;
    T* const cb = buf + (long long)l.nc * p.cstride;
    const T* const src = xn + c0 + l.nc;
    int r = l.nr, col = l.ncol;
    if (!CpOneAsync<T>::value) {
        while (r < in_h) {
            T v[4];
            T* d[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                d[u] = nullptr;
                if (r < in_h) {
                    const int gy = iy0 + r, gx = ix0 + col;
                    d[u] = cb + r * pitch + col;
                    v[u] = ((unsigned)gy < H && (unsigned)gx < W) ? __ldg(src + ((long long)gy * p.W + gx) * C) : T(0.0f);
                    col += ps_c;
                    r += ps_r;
                    if (col >= cols) { col -= cols; ++r; }
                }
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (d[u]) *d[u] = v[u];
        }
    } else {
        for (; r < in_h;) {
            const int gy = iy0 + r, gx = ix0 + col;
            T* const dst = cb + r * pitch + col;
            if ((unsigned)gy < H && (unsigned)gx < W) cp_one(dst, src + ((long long)gy * p.W + gx) * C);
            else *dst = T(0.0f);
            col += ps_c;
            r += ps_r;
            if (col >= cols) { col -= cols; ++r; }
        }
    }
}

/* Stage input channels [c0, c0 + cc) of the block's tile (+ halo) into buf, zero outside the image.
 * Staged row R = c * in_h + r sits at buf + R * pitch (cstride == in_h * pitch). The thread's column unit
 * is fixed (StageLane), so the column bounds test is loop-invariant and the source offset advances by
 * constants (one wrap per input channel); the walk's steps come from the host (SmemParams::st_*). */
template <typename T>
__device__ __forceinline__ void stage(const SmemParams& p, const StageLane& l, const T* __restrict__ xn, T* buf,
                                      int c0, int iy0, int ix0) {
    if (p.nhwc) {
        stage_nhwc<T>(p, l, xn, buf, c0, iy0, ix0);
        return;
    }
    const int rows = min(p.cc, p.C - c0) * p.in_h;
    if (l.row0 >= rows) return;
    const int ve = p.vec; /* 4, 2 or 1 elements per copy (host: W, the input's alignment and lead allow it) */
    const int gx = ix0 + l.v * ve;
    const bool colok = ve > 1 ? (gx >= 0 && gx + ve <= p.W) : ((unsigned)gx < (unsigned)p.W);
    const long long HW = (long long)p.H * p.W;
    long long so = (long long)(c0 + l.c) * HW + (long long)(iy0 + l.r) * p.W + gx; /* source offset */
    const long long s_step = p.st_step_c * HW + (long long)p.st_step_r * p.W;
    const long long s_wrap = HW - (long long)p.in_h * p.W;
    T* dst = buf + l.row0 * p.pitch + l.v * ve;
    const int d_step = p.st_step * p.pitch;
    const int step = p.st_step, step_r = p.st_step_r, in_h = p.in_h;
    const unsigned H = (unsigned)p.H;
    int r = l.r;
    if (ve == 4) { /* one loop per copy kind: the kind is loop-invariant */
        for (int row = l.row0; row < rows; row += step) {
            if (colok && (unsigned)(iy0 + r) < H) cp_vec(dst, xn + so);
            else zero_vec(dst);
            dst += d_step;
            so += s_step;
            r += step_r;
            if (r >= in_h) { r -= in_h; so += s_wrap; } /* step_r < in_h: at most one wrap */
        }
    } else if (ve == 2) { /* even W, gx even: a pair is wholly inside the row or wholly padding */
        for (int row = l.row0; row < rows; row += step) {
            if (colok && (unsigned)(iy0 + r) < H) cp_pair(dst, xn + so);
            else zero_pair(dst);
            dst += d_step;
            so += s_step;
            r += step_r;
            if (r >= in_h) { r -= in_h; so += s_wrap; }
        }
    } else {
        int row = l.row0;
        if (!CpOneAsync<T>::value) {
            /* plain loads (fp16 elements, or below sm_80): four rows' loads in flight before their stores, instead
             * of one load latency per row */
            for (; row + 3 * step < rows; row += 4 * step) {
                T v[4];
                T* d[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    v[u] = (colok && (unsigned)(iy0 + r) < H) ? __ldg(xn + so) : T(0.0f);
                    d[u] = dst;
                    dst += d_step;
                    so += s_step;
                    r += step_r;
                    if (r >= in_h) { r -= in_h; so += s_wrap; }
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) *d[u] = v[u];
            }
        }
        for (; row < rows; row += step) {
            if (colok && (unsigned)(iy0 + r) < H) cp_one(dst, xn + so);
            else *dst = T(0.0f);
            dst += d_step;
            so += s_step;
            r += step_r;
            if (r >= in_h) { r -= in_h; so += s_wrap; }
        }
    }
}

/* Half2 layout (fp16 NCHW, stride_w 1; the H2 smem kernel): stage input channels [c0, c0 + cc) so that 32-bit word j
 * of a staged row holds the row's columns j (low half) and j + LW (high half) -- a lane's two output pixels
 * (columns lc and lc + LW of the tile) read their inputs of one nonzero with ONE 32-bit LDS. Row pitch and channel
 * stride are in words; p.st_nv units of p.vec words per row. vec 4: two aligned 8-byte loads (columns j..j+3 and
 * j+LW..j+LW+3, each wholly inside the row or wholly padding: W % 4 == 0, tiles start at multiples of 4), four
 * byte permutes, one 16-byte store; two rows' loads in flight. vec 1: two 2-byte loads, each bounds-checked. */
template <int LW>
__device__ __forceinline__ void stage_h2(const SmemParams& p, const StageLane& l, const __half* __restrict__ xn,
                                         unsigned* buf, int c0, int iy0, int ix0) {
    const int rows = min(p.cc, p.C - c0) * p.in_h;
    if (l.row0 >= rows) return;
    const int ve = p.vec;
    const int gx = ix0 + l.v * ve;
    const long long HW = (long long)p.H * p.W;
    long long so = (long long)(c0 + l.c) * HW + (long long)(iy0 + l.r) * p.W + gx;
    const long long s_step = p.st_step_c * HW + (long long)p.st_step_r * p.W;
    const long long s_wrap = HW - (long long)p.in_h * p.W;
    unsigned* dst = buf + l.row0 * p.pitch + l.v * ve;
    const int d_step = p.st_step * p.pitch;
    const int step = p.st_step, step_r = p.st_step_r, in_h = p.in_h;
    const unsigned H = (unsigned)p.H;
    int r = l.r;
    if (ve == 4) {
        const bool ok_lo = gx >= 0 && gx + 4 <= p.W, ok_hi = gx + LW >= 0 && gx + LW + 4 <= p.W;
        int row = l.row0;
        for (; row + step < rows; row += 2 * step) {
            uint2 lo[2], hi[2];
            unsigned* d[2];
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const bool rok = (unsigned)(iy0 + r) < H;
                lo[u] = (rok && ok_lo) ? __ldg(reinterpret_cast<const uint2*>(xn + so)) : make_uint2(0u, 0u);
                hi[u] = (rok && ok_hi) ? __ldg(reinterpret_cast<const uint2*>(xn + so + LW)) : make_uint2(0u, 0u);
                d[u] = dst;
                dst += d_step;
                so += s_step;
                r += step_r;
                if (r >= in_h) { r -= in_h; so += s_wrap; }
            }
#pragma unroll
            for (int u = 0; u < 2; ++u)
                *reinterpret_cast<uint4*>(d[u]) = make_uint4(__byte_perm(lo[u].x, hi[u].x, 0x5410), __byte_perm(lo[u].x, hi[u].x, 0x7632),
                                                             __byte_perm(lo[u].y, hi[u].y, 0x5410), __byte_perm(lo[u].y, hi[u].y, 0x7632));
        }
        if (row < rows) {
            const bool rok = (unsigned)(iy0 + r) < H;
            const uint2 a = (rok && ok_lo) ? __ldg(reinterpret_cast<const uint2*>(xn + so)) : make_uint2(0u, 0u);
            const uint2 b = (rok && ok_hi) ? __ldg(reinterpret_cast<const uint2*>(xn + so + LW)) : make_uint2(0u, 0u);
            *reinterpret_cast<uint4*>(dst) = make_uint4(__byte_perm(a.x, b.x, 0x5410), __byte_perm(a.x, b.x, 0x7632),
                                                        __byte_perm(a.y, b.y, 0x5410), __byte_perm(a.y, b.y, 0x7632));
        }
    } else {
        const bool ok_lo = (unsigned)gx < (unsigned)p.W, ok_hi = (unsigned)(gx + LW) < (unsigned)p.W;
        const unsigned short* xs = reinterpret_cast<const unsigned short*>(xn);
        for (int row = l.row0; row < rows; row += step) {
            const bool rok = (unsigned)(iy0 + r) < H;
            const unsigned a = (rok && ok_lo) ? (unsigned)__ldg(xs + so) : 0u;
            const unsigned b = (rok && ok_hi) ? (unsigned)__ldg(xs + so + LW) : 0u;
            *dst = a | (b << 16);
            dst += d_step;
            so += s_step;
            r += step_r;
            if (r >= in_h) { r -= in_h; so += s_wrap; }
        }
    }
}

/* Element offset of output (channel k, row oy, column ox) within one image: NCHW or NHWC (p.nhwc). */
__device__ __forceinline__ long long out_off(const SmemParams& p, int k, int oy, int ox) {
    return p.nhwc ? ((long long)oy * p.Q + ox) * p.K + k : ((long long)k * p.P + oy) * p.Q + ox;
}

/* Stage the block's nonzero list entries [lo, hi) of one listed chunk into dst (hi - lo <= p.lcap: the layout
 * builder sized the chunks for it). */
__device__ __forceinline__ void stage_list(const SmemParams& p, int lo, int hi, int2* dst) {
    for (int e = lo + (int)threadIdx.x; e < hi; e += 256) cp_entry(dst + (e - lo), p.entries + e);
}

/* Row pitch (elements) of the compiled fast path of a tile (3x3 / 5x5 / 7x7 stride 1 and the 1x1 layers of tiles
 * 0-1 get it from the host's bank-conflict-free choice, smem_pitch): row steps become immediates. */
template <typename T, int LW, int PXH>
struct FixedPitch {
    static const int value = sizeof(T) == 4 ? (LW == 16 ? 48 : 24) : (LW == 16 ? 40 : (PXH == 4 ? 24 : 16));
};

/* Row pitch (32-bit words) of the half2 layout's compiled fast path: 3x3 stride 1 tiles' bank-conflict-free
 * pitch (the host's smem_h2_pitch choice; lane rows 16 words apart mod 32 for LW 16, 8 for LW 8). */
template <int LW>
struct H2FixedPitch {
    static const int value = LW == 16 ? 48 : 24;
};

}  // namespace smem_detail

/* LW lanes along the width, PXH x PXW pixels per lane, KW output channels per warp slot (registers held to 4 blocks
 * per SM for the 2-accumulator 8x8 x KW 1 tile, 3 for KW <= 2, 2 otherwise: 64 / 80 / 128),
 * SW compile-time horizontal stride (0: runtime p.sw), FP compile-time row pitch (0: runtime p.pitch; > 0 only
 * with stride 1 both ways and p.pitch == FP: every pixel's address is the nonzero's plus an immediate). */
#ifndef TSC_SMEM_BLOCKS_KW2
#define TSC_SMEM_BLOCKS_KW2 3 /* blocks per SM the KW <= 2 configs are compiled for (A/B: -DTSC_SMEM_BLOCKS_KW2=4) */
#endif
template <typename T, int LW, int PXH, int PXW, int KW, int SW, int FP, bool H2 = false>
__global__ void __launch_bounds__(256, KW == 1 && PXH * PXW <= 2 ? 4 : (KW <= 2 ? TSC_SMEM_BLOCKS_KW2 : 2)) smem_kernel(SmemParams p, const TSC_GRID_CONST TmaDesc tmap) {
    using namespace smem_detail;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LH = 32 / LW;
    constexpr int TH = LH * PXH, TW = LW * PXW;
    constexpr int PX = PXH * PXW;
    pdl_trigger(); /* a PDL-launched next kernel may start its blocks (they wait for this grid in pdl_wait) */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int lr = lane / LW, lc = lane % LW;
    const int g = blockIdx.y;
    const int cl = p.cl;
    /* clusters span cl consecutive x blocks; cl is a power of two */
    const int tile = (int)blockIdx.x >> (__ffs(cl) - 1), rank = (int)blockIdx.x & (cl - 1);
    const int t_y = udiv(tile, p.tiles_w, p.tw_magic), t_x = tile - t_y * p.tiles_w;
    const int oy0 = t_y * TH, ox0 = t_x * TW;
    const int sh = FP ? 1 : p.sh;
    const int sw = FP ? 1 : (SW ? SW : p.sw);
    const int pitch = FP ? FP : p.pitch;
    const int iy0 = oy0 * sh - p.pad_top;
    const int ix0 = ox0 * sw - p.pad_left - p.lead;
    constexpr int UB = H2 ? 4 : (int)sizeof(T); /* bytes per staged unit: a half2 word (H2) or an element */
    int rb[PXH]; /* lane's byte offset of pixel row jr in a staged chunk */
#pragma unroll
    for (int jr = 0; jr < PXH; ++jr)
        rb[jr] = (((lr + jr * LH) * sh) * pitch + lc * sw + p.lead) * UB;
    const int dch = p.dense_chunks; /* > 0: chunk lists are implicit (no dependent index loads) */
    int cs0 = dch > 0 ? g * dch : __ldg(p.gch_off + g);
    int cs1 = dch > 0 ? cs0 + dch : __ldg(p.gch_off + g + 1);
    const int cbase = g * dch;
    cluster_share(cl, rank, &cs0, &cs1);
    const int buf_elems = p.bstride;
    T* const sbuf = reinterpret_cast<T*>(smem_raw);
    int2* const lbuf = reinterpret_cast<int2*>(smem_raw + p.lbuf_off); /* two list buffers of p.lcap entries */
#if defined(TSC_TMA_DEVICE)
    /* TMA staging (p.tma): thread 0 issues one bulk tensor copy of the chunk's zero-padded input box and one bulk copy
     * of the block's list per listed chunk, both completing on the buffer's mbarrier; every thread waits on it. */
    const unsigned mbar = smem_addr(smem_raw + p.mbar_off);
    const bool tma = !H2 && p.tma != 0 && (smem_addr(smem_raw) & 127u) == 0u; /* box destinations 128-aligned */
    if (tma) {
        if (threadIdx.x == 0) {
            mbar_init(mbar);
            mbar_init(mbar + 8u);
            mbar_init_fence();
        }
        __syncthreads();
    }
    unsigned phase = 0u; /* bit b: parity of buffer b's next phase */
    /* thread 0: listed chunk of input channels c0.. of image n, block list entries [lo, hi), into buffer bb; the
     * list copy is widened to even entry bounds (16-byte units; the layout holds lcap >= hi - lo + 2 and two spare
     * entries past the end) */
    auto tma_stage = [&](int bb, int c0, int lo, int hi, int n) {
        const int lo2 = lo & ~1, hi2 = (hi + 1) & ~1;
        const unsigned lbytes = (unsigned)(hi2 - lo2) * 8u;
        const unsigned bar = mbar + 8u * (unsigned)bb;
        mbar_expect_tx(bar, (unsigned)(p.cc * p.cstride) * (unsigned)sizeof(T) + lbytes);
        tma_load_4d(smem_addr(sbuf + bb * buf_elems), &tmap, ix0, iy0, c0, n, bar);
        if (lbytes) bulk_load(smem_addr(lbuf + bb * p.lcap), p.entries + lo2, lbytes, bar);
    };
#else
    const bool tma = false;
    (void)tmap;
#endif
    const int ns = p.ns;
    const int cpb = (8 >> (__ffs(ns) - 1)) * KW; /* ns is 1, 2, 4 or 8 */
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    T* __restrict__ y = reinterpret_cast<T*>(p.y);
    const StageLane sl = stage_lane(p);
    const unsigned kFull = 0xffffffffu;
    /* lane k <= KW: seg[k] of listed chunk i's lists of this warp (0 past the group's chunks) */
    auto seg_at = [&](int i) -> int {
        return (i < cs1 && lane <= KW) ? __ldg(p.seg + ((long long)i * 8 + warp) * KW + lane) : 0;
    };
    /* first entry of listed chunk i's block list (i <= cs1: seg ends with the total) */
    auto blk_at = [&](int i) -> int { return i <= cs1 ? __ldg(p.seg + (long long)i * 8 * KW) : 0; };
    /* input channel chunk of listed chunk i */
    auto chunk_of = [&](int i) -> int { return dch > 0 ? i - cbase : __ldg(p.chunk_ids + i); };
    /* direct-store epilogue (ns == 1, no cluster): the warp's output channels and their bias, loaded before
     * the main loop so that the last chunk is not followed by two dependent global round trips */
    int k_out[KW];
    float b_out[KW];
#pragma unroll
    for (int kl = 0; kl < KW; ++kl) {
        k_out[kl] = (ns == 1 && cl == 1) ? __ldg(p.perm + g * cpb + warp * KW + kl) : -1;
        b_out[kl] = k_out[kl] >= 0 ? __ldg(p.bias + k_out[kl]) : 0.0f;
    }
    pdl_wait(); /* above: plan constants only; the input and the output from here on */
    for (int n = blockIdx.z; n < p.N; n += gridDim.z) {
        const T* xn = x + (long long)n * p.C * p.H * p.W;
#if defined(TSC_TMA_DEVICE)
        if (tma && n != (int)blockIdx.z) { /* the previous image's epilogue may have written shared memory */
            fence_proxy_async();
            __syncthreads();
        }
#endif
        float acc[KW][PX];
#pragma unroll
        for (int kl = 0; kl < KW; ++kl)
#pragma unroll
            for (int j = 0; j < PX; ++j) acc[kl][j] = 0.0f;

        /* Each listed chunk's input tile and the block's nonzero list (value, offset) are staged together into
         * shared memory, double-buffered: a nonzero reaches every lane by one warp-uniform LDS.64 (a broadcast).
         * List bounds are prefetched from global memory two chunks ahead (lane k <= KW: the warp's seg[k]). */
        int sv_cur = seg_at(cs0), sv_nxt = seg_at(cs0 + 1);
        int bl0 = blk_at(cs0), bl1 = blk_at(cs0 + 1), bl2 = blk_at(cs0 + 2);
        if (cs0 < cs1) {
#if defined(TSC_TMA_DEVICE)
            if (tma) {
                if (threadIdx.x == 0) tma_stage(0, chunk_of(cs0) * p.cc, bl0, bl1, n);
            } else
#endif
            {
                if (H2)
                    stage_h2<LW>(p, sl, reinterpret_cast<const __half*>(xn), reinterpret_cast<unsigned*>(sbuf),
                                 chunk_of(cs0) * p.cc, iy0, ix0);
                else
                    stage<T>(p, sl, xn, sbuf, chunk_of(cs0) * p.cc, iy0, ix0);
                stage_list(p, bl0, bl1, lbuf);
            }
        }
        cp_commit();
        for (int i = cs0; i < cs1; ++i) {
            const int bl3 = blk_at(i + 3);
            const int sv_nn = seg_at(i + 2);
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
#if defined(TSC_TMA_DEVICE)
                if (tma) {
                    if (threadIdx.x == 0) tma_stage(b ^ 1, chunk_of(i + 1) * p.cc, bl1, bl2, n);
                } else
#endif
                {
                    if (H2)
                        stage_h2<LW>(p, sl, reinterpret_cast<const __half*>(xn),
                                     reinterpret_cast<unsigned*>(sbuf + (b ^ 1) * buf_elems), chunk_of(i + 1) * p.cc, iy0, ix0);
                    else
                        stage<T>(p, sl, xn, sbuf + (b ^ 1) * buf_elems, chunk_of(i + 1) * p.cc, iy0, ix0);
                    stage_list(p, bl1, bl2, lbuf + (b ^ 1) * p.lcap);
                    cp_commit();
                }
            }
            const unsigned sbase = smem_addr(sbuf + b * buf_elems);
            /* entry t (a global list index) of this chunk sits at lb + 8 t (mod 2^32); TMA copies from an even index */
            const unsigned lb = smem_addr(lbuf + b * p.lcap) - (unsigned)(tma ? (bl0 & ~1) : bl0) * 8u;
#pragma unroll
            for (int kl = 0; kl < KW; ++kl) {
                int t = __shfl_sync(kFull, sv_cur, kl);
                const int e1 = __shfl_sync(kFull, sv_cur, kl + 1);
                if (H2) {
                    /* half2: per nonzero (half2(w, w) bits, word offset) one LDS.32 per pixel row feeds both pixels of
                     * the row (columns lc and lc + LW) to one HFMA2; fp16 partial sums of at most 16 nonzeros are
                     * flushed into the fp32 accumulators */
                    unsigned ra[PXH];
#pragma unroll
                    for (int jr = 0; jr < PXH; ++jr) ra[jr] = sbase + (unsigned)rb[jr];
                    while (t < e1) {
                        const int te = min(t + 16, e1);
                        __half2 h[PXH];
#pragma unroll
                        for (int jr = 0; jr < PXH; ++jr) h[jr] = __float2half2_rn(0.0f);
#pragma unroll 4
                        for (; t < te; ++t) {
                            const int2 nz = lds_entry(lb + (unsigned)t * 8u);
                            __half2 w2;
                            *reinterpret_cast<int*>(&w2) = nz.x;
                            if (FP) { /* one address add, row offsets as immediates */
                                const unsigned a = ra[0] + (unsigned)nz.y;
#pragma unroll
                                for (int jr = 0; jr < PXH; ++jr) h[jr] = __hfma2(w2, lds_h2(a + (unsigned)(jr * LH * FP * 4)), h[jr]);
                            } else {
#pragma unroll
                                for (int jr = 0; jr < PXH; ++jr) h[jr] = __hfma2(w2, lds_h2(ra[jr] + (unsigned)nz.y), h[jr]);
                            }
                        }
#pragma unroll
                        for (int jr = 0; jr < PXH; ++jr) {
                            const float2 f = __half22float2(h[jr]);
                            acc[kl][jr * PXW] += f.x;
                            acc[kl][jr * PXW + PXW - 1] += f.y;
                        }
                    }
                } else if (FP) {
                    const unsigned ra = sbase + (unsigned)rb[0];
#pragma unroll 4
                    for (; t < e1; ++t) {
                        const int2 nz = lds_entry(lb + (unsigned)t * 8u);
                        const float v = __int_as_float(nz.x);
                        const unsigned a = ra + (unsigned)nz.y;
#pragma unroll
                        for (int jr = 0; jr < PXH; ++jr)
#pragma unroll
                            for (int jc = 0; jc < PXW; ++jc)
                                acc[kl][jr * PXW + jc] = fmaf(
                                    v, lds_elem(a + (unsigned)((jr * LH * FP + jc * LW) * (int)sizeof(T)), static_cast<const T*>(nullptr)),
                                    acc[kl][jr * PXW + jc]);
                    }
                } else {
                    unsigned ra[PXH];
#pragma unroll
                    for (int jr = 0; jr < PXH; ++jr) ra[jr] = sbase + (unsigned)rb[jr];
#pragma unroll 4
                    for (; t < e1; ++t) {
                        const int2 nz = lds_entry(lb + (unsigned)t * 8u);
                        const float v = __int_as_float(nz.x);
#pragma unroll
                        for (int jr = 0; jr < PXH; ++jr) {
                            const unsigned a = ra[jr] + (unsigned)nz.y;
#pragma unroll
                            for (int jc = 0; jc < PXW; ++jc)
                                acc[kl][jr * PXW + jc] =
                                    fmaf(v, lds_elem(a + (unsigned)(jc * LW * sw * (int)sizeof(T)), static_cast<const T*>(nullptr)),
                                         acc[kl][jr * PXW + jc]);
                        }
                    }
                }
            }
            sv_cur = sv_nxt;
            sv_nxt = sv_nn;
            bl0 = bl1;
            bl1 = bl2;
            bl2 = bl3;
        }
        __syncthreads(); /* every warp is done with the staged input (buffers are reused below / next n) */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (cl > 1) {
            float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
            for (int kl = 0; kl < KW; ++kl)
#pragma unroll
                for (int j = 0; j < PX; ++j) red[((warp * KW + kl) * PX + j) * 32 + lane] = acc[kl][j];
            cluster_sync(); /* every block's partial sums are in its shared memory */
            const int outs = (8 / ns) * KW * PX * 32;
            const int o0 = (outs * rank) >> (__ffs(cl) - 1), o1 = (outs * (rank + 1)) >> (__ffs(cl) - 1);
            for (int o = o0 + (int)threadIdx.x; o < o1; o += 256) {
                const int ln = o & 31;
                const int j = (o >> 5) % PX;
                const int sk = (o >> 5) / PX; /* slot * KW + kl */
                const int slot = sk / KW, kl = sk - slot * KW;
                const int k = __ldg(p.perm + g * cpb + sk);
                const int jr = j / PXW, jc = j - jr * PXW;
                const int oy = oy0 + ln / LW + jr * LH, ox = ox0 + ln % LW + jc * LW;
                if (k < 0 || oy >= p.P || ox >= p.Q) continue;
                const float s = sum_peers(red + ((((slot * ns) * KW) + kl) * PX + j) * 32 + ln, cl, ns, KW * PX * 32);
                st_out(y + (long long)n * p.K * p.P * p.Q + out_off(p, k, oy, ox),
                       act_f(s + __ldg(p.bias + k), p.act, p.clip_min, p.clip_max));
            }
            cluster_sync(); /* peers are done reading this block's partials (smem reused / block exits) */
            continue;
        }
#endif
        if (ns == 1) {
#pragma unroll
            for (int kl = 0; kl < KW; ++kl) {
                const int k = k_out[kl];
                if (k < 0) continue;
                const float bk = b_out[kl];
                T* yn = y + (long long)n * p.K * p.P * p.Q;
#pragma unroll
                for (int jr = 0; jr < PXH; ++jr) {
                    const int oy = oy0 + lr + jr * LH;
                    if (oy >= p.P) continue;
#pragma unroll
                    for (int jc = 0; jc < PXW; ++jc) {
                        const int ox = ox0 + lc + jc * LW;
                        if (ox < p.Q)
                            st_out(yn + out_off(p, k, oy, ox), act_f(acc[kl][jr * PXW + jc] + bk, p.act, p.clip_min, p.clip_max));
                    }
                }
            }
        } else {
            float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
            for (int kl = 0; kl < KW; ++kl)
#pragma unroll
                for (int j = 0; j < PX; ++j) red[((warp * KW + kl) * PX + j) * 32 + lane] = acc[kl][j];
            __syncthreads();
            const int outs = (8 / ns) * KW * PX * 32;
            for (int o = threadIdx.x; o < outs; o += 256) {
                const int ln = o & 31;
                const int j = (o >> 5) % PX;
                const int sk = (o >> 5) / PX; /* slot * KW + kl */
                const int slot = sk / KW, kl = sk - slot * KW;
                float s = 0.0f;
                for (int sp = 0; sp < ns; ++sp) s += red[((((slot * ns + sp) * KW) + kl) * PX + j) * 32 + ln];
                const int k = __ldg(p.perm + g * cpb + sk);
                const int jr = j / PXW, jc = j - jr * PXW;
                const int oy = oy0 + ln / LW + jr * LH, ox = ox0 + ln % LW + jc * LW;
                if (k >= 0 && oy < p.P && ox < p.Q)
                    st_out(y + (long long)n * p.K * p.P * p.Q + out_off(p, k, oy, ox),
                           act_f(s + __ldg(p.bias + k), p.act, p.clip_min, p.clip_max));
            }
            __syncthreads();
        }
    }
}

/* Launch of kernel(args...) by cudaLaunchKernelEx: cl > 1 blocks per cluster along x, and with pdl programmatic
 * dependent launch (the kernel calls pdl_wait() before it touches the input or the output; where the driver refuses
 * the attribute, the kernel is launched without it); cudaErrorNotSupported without cudaLaunchKernelEx (CUDA < 12). */
template <typename K, typename... Args>
cudaError_t launch_cluster(K kernel, int cl, size_t smem, dim3 grid, cudaStream_t s, int pdl, const Args&... args) {
#if defined(TSC_HAS_CLUSTERS)
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(256, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    unsigned na = 0;
    if (cl > 1) {
        attr[na].id = cudaLaunchAttributeClusterDimension;
        attr[na].val.clusterDim.x = (unsigned)cl;
        attr[na].val.clusterDim.y = 1;
        attr[na].val.clusterDim.z = 1;
        ++na;
    }
    if (pdl) {
        attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[na].val.programmaticStreamSerializationAllowed = 1;
        ++na;
    }
    cfg.attrs = attr;
    cfg.numAttrs = na;
    cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
    if (e != cudaSuccess && pdl) { /* e.g. a driver without PDL: plain stream order */
        cudaGetLastError();
        cfg.numAttrs = cl > 1 ? 1u : 0u;
        e = cudaLaunchKernelEx(&cfg, kernel, args...);
    }
    return e;
#else
    (void)kernel; (void)cl; (void)smem; (void)grid; (void)s; (void)pdl;
    return cudaErrorNotSupported;
#endif
}

template <typename T, int LW, int PXH, int PXW, int KW, int SW, int FP, bool H2 = false>
cudaError_t launch_smem_one(const SmemParams& p, const TmaDesc& tm, size_t smem, dim3 grid, cudaStream_t s) {
    if (p.cl > 1 || p.pdl) {
        grid.x *= (unsigned)p.cl;
        return launch_cluster(smem_kernel<T, LW, PXH, PXW, KW, SW, FP, H2>, p.cl, smem, grid, s, p.pdl, p, tm);
    }
    smem_kernel<T, LW, PXH, PXW, KW, SW, FP, H2><<<grid, 256, smem, s>>>(p, tm);
    return cudaGetLastError();
}

template <typename T, int LW, int PXH, int PXW, int KW>
cudaError_t launch_smem_sw(const SmemParams& p, const TmaDesc& tm, size_t smem, dim3 grid, cudaStream_t s) {
    constexpr int FP = smem_detail::FixedPitch<T, LW, PXH>::value;
    if (p.sw == 1 && p.sh == 1 && p.pitch == FP) return launch_smem_one<T, LW, PXH, PXW, KW, 1, FP>(p, tm, smem, grid, s);
    if (p.sw == 1) return launch_smem_one<T, LW, PXH, PXW, KW, 1, 0>(p, tm, smem, grid, s);
    if (p.sw == 2) return launch_smem_one<T, LW, PXH, PXW, KW, 2, 0>(p, tm, smem, grid, s);
    return launch_smem_one<T, LW, PXH, PXW, KW, 0, 0>(p, tm, smem, grid, s);
}

template <typename T>
cudaError_t launch_smem_t(int tile, int kw, const SmemParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
    TmaDesc tm;
    if (p.tma && tmap) tm = *tmap;
    else for (int i = 0; i < 16; ++i) tm.opaque[i] = 0ull;
    if (p.tma && !tmap) return cudaErrorInvalidValue;
    const SmemTileInfo ti = smem_tile_info(tile);
    dim3 grid((unsigned)(p.tiles_h * p.tiles_w), (unsigned)p.groups, (unsigned)(p.N < 65535 ? p.N : 65535));
    (void)ti;
    switch (tile * 8 + kw) {
        case 0 * 8 + 1: return launch_smem_sw<T, 16, 4, 2, 1>(p, tm, smem, grid, s);
        case 0 * 8 + 2: return launch_smem_sw<T, 16, 4, 2, 2>(p, tm, smem, grid, s);
        case 0 * 8 + 4: return launch_smem_sw<T, 16, 4, 2, 4>(p, tm, smem, grid, s);
        case 1 * 8 + 1: return launch_smem_sw<T, 8, 4, 2, 1>(p, tm, smem, grid, s);
        case 1 * 8 + 2: return launch_smem_sw<T, 8, 4, 2, 2>(p, tm, smem, grid, s);
        case 2 * 8 + 1: return launch_smem_sw<T, 8, 2, 1, 1>(p, tm, smem, grid, s);
        case 2 * 8 + 2: return launch_smem_sw<T, 8, 2, 1, 2>(p, tm, smem, grid, s);
        default: return cudaErrorInvalidValue;
    }
}

/* Half2 layouts (fp16, NCHW, stride_w 1; tiles 0-1, PXW 2): the fixed-pitch path for stride 1 both ways. */
template <int LW, int PXH, int KW>
cudaError_t launch_smem_h2_lw(const SmemParams& p, size_t smem, dim3 grid, cudaStream_t s) {
    TmaDesc tm;
    for (int i = 0; i < 16; ++i) tm.opaque[i] = 0ull;
    constexpr int FP = smem_detail::H2FixedPitch<LW>::value;
    if (p.sw != 1) return cudaErrorInvalidValue;
    if (p.sh == 1 && p.pitch == FP) return launch_smem_one<__half, LW, PXH, 2, KW, 1, FP, true>(p, tm, smem, grid, s);
    return launch_smem_one<__half, LW, PXH, 2, KW, 1, 0, true>(p, tm, smem, grid, s);
}

}  // namespace tsc
#endif
