/*
 * Generic sparse direct convolution: any R x S, stride, dilation, pads, NCHW or
 * NHWC, fp32 or fp16 I/O (fp32 accumulate). One thread per output pixel, one
 * block row per output channel (the channel's nonzeros are warp-uniform loads).
 * Correct for every conv the plan accepts; the register-tile kernel is the fast path.
 */
#include <cuda_fp16.h>
#include "tsc_internal.h"

namespace tsc {
namespace {

__device__ __forceinline__ float g_ld(const float* p) { return __ldg(p); }
__device__ __forceinline__ float g_ld(const __half* p) { return __half2float(__ldg(p)); }
__device__ __forceinline__ void g_st(float* p, float v) { *p = v; }
__device__ __forceinline__ void g_st(__half* p, float v) { *p = __float2half_rn(v); }

template <typename T, bool NHWC>
__global__ void __launch_bounds__(128) generic_kernel(GenericParams p) {
    const long long pq = (long long)p.P * p.Q;
    const long long pix = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int k = blockIdx.y;
    if (pix >= pq) return;
    for (int n = blockIdx.z; n < p.N; n += gridDim.z) {
        const int oh = (int)(pix / p.Q), ow = (int)(pix % p.Q);
        const int ih0 = oh * p.stride_h - p.pad_top, iw0 = ow * p.stride_w - p.pad_left;
        const T* x = reinterpret_cast<const T*>(p.x);
        float acc = 0.0f;
        const int b = __ldg(p.row_off + k), e = __ldg(p.row_off + k + 1);
        for (int i = b; i < e; ++i) {
            const int4 w = __ldg(p.entries + i);
            const int ih = ih0 + w.z, iw = iw0 + w.w;
            if ((unsigned)ih < (unsigned)p.H && (unsigned)iw < (unsigned)p.W) {
                long long off;
                if (NHWC)
                    off = (((long long)n * p.H + ih) * p.W + iw) * p.C + w.y;
                else
                    off = (((long long)n * p.C + w.y) * p.H + ih) * p.W + iw;
                acc = fmaf(__int_as_float(w.x), g_ld(x + off), acc);
            }
        }
        float v = acc + __ldg(p.bias + k);
        if (p.act == 1) v = fmaxf(v, 0.0f);
        else if (p.act == 2) v = fminf(fmaxf(v, p.clip_min), p.clip_max);
        long long o;
        if (NHWC)
            o = (((long long)n * p.P + oh) * p.Q + ow) * p.K + k;
        else
            o = ((long long)n * p.K + k) * pq + pix;
        g_st(reinterpret_cast<T*>(p.y) + o, v);
    }
}

/* NCHW, VEC consecutive output pixels of one row per thread: the nonzero's decode and weight load
 * are shared by VEC FMAs. */
template <typename T, int VEC>
__global__ void __launch_bounds__(128) generic_vec_kernel(GenericParams p) {
    const int qv = (p.Q + VEC - 1) / VEC;
    const long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int k = blockIdx.y;
    if (item >= (long long)p.P * qv) return;
    const int oh = (int)(item / qv);
    const int ow0 = (int)(item % qv) * VEC;
    const int ih0 = oh * p.stride_h - p.pad_top;
    const int iw0 = ow0 * p.stride_w - p.pad_left;
    const T* x = reinterpret_cast<const T*>(p.x);
    const int b = __ldg(p.row_off + k), e = __ldg(p.row_off + k + 1);
    const float bk = __ldg(p.bias + k);
    for (int n = blockIdx.z; n < p.N; n += gridDim.z) {
        float acc[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[j] = 0.0f;
        const T* xn = x + (long long)n * p.C * p.H * p.W;
        for (int i = b; i < e; ++i) {
            const int4 w = __ldg(p.entries + i);
            const int ih = ih0 + w.z;
            if ((unsigned)ih >= (unsigned)p.H) continue;
            const T* row = xn + ((long long)w.y * p.H + ih) * p.W;
            const float v = __int_as_float(w.x);
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int iw = iw0 + j * p.stride_w + w.w;
                if ((unsigned)iw < (unsigned)p.W) acc[j] = fmaf(v, g_ld(row + iw), acc[j]);
            }
        }
        T* yk = reinterpret_cast<T*>(p.y) + ((long long)n * p.K + k) * p.P * p.Q + (long long)oh * p.Q;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            if (ow0 + j >= p.Q) break;
            float o = acc[j] + bk;
            if (p.act == 1) o = fmaxf(o, 0.0f);
            else if (p.act == 2) o = fminf(fmaxf(o, p.clip_min), p.clip_max);
            g_st(yk + ow0 + j, o);
        }
    }
}

}  // namespace

cudaError_t launch_generic_vec(bool fp16, const GenericParams& p, cudaStream_t s) {
    const long long items = (long long)p.P * ((p.Q + 3) / 4);
    dim3 block(128, 1, 1);
    dim3 grid((unsigned)((items + 127) / 128), (unsigned)p.K, (unsigned)(p.N < 65535 ? p.N : 65535));
    if (fp16) generic_vec_kernel<__half, 4><<<grid, block, 0, s>>>(p);
    else generic_vec_kernel<float, 4><<<grid, block, 0, s>>>(p);
    return cudaGetLastError();
}

cudaError_t launch_generic(bool fp16, bool nhwc, const GenericParams& p, cudaStream_t s) {
    const long long pq = (long long)p.P * p.Q;
    dim3 block(128, 1, 1);
    dim3 grid((unsigned)((pq + 127) / 128), (unsigned)p.K, (unsigned)(p.N < 65535 ? p.N : 65535));
    if (fp16) {
        if (nhwc) generic_kernel<__half, true><<<grid, block, 0, s>>>(p);
        else generic_kernel<__half, false><<<grid, block, 0, s>>>(p);
    } else {
        if (nhwc) generic_kernel<float, true><<<grid, block, 0, s>>>(p);
        else generic_kernel<float, false><<<grid, block, 0, s>>>(p);
    }
    return cudaGetLastError();
}

}  // namespace tsc
