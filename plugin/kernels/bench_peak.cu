/* Measurement helpers for the benchmark: fp32 FMA peak and empty-launch cost. */
#include <cuda_runtime.h>
#include <string>
#include "tsc_bench.h"

namespace {
__global__ void fma_peak_kernel(float* out, int iters, float a, float b) {
    float x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] = threadIdx.x * 0.001f + i;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < 16; ++j)
#pragma unroll
            for (int i = 0; i < 8; ++i) x[i] = fmaf(x[i], a, b);
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) s += x[i];
    if (s == 12345.678f) out[0] = s; /* keep the work */
}
__global__ void empty_kernel() {}
}  // namespace

extern "C" tsc_status tsc_bench_fma_peak(double* tflops) {
    if (!tflops) return TSC_ERR_INVALID_ARGUMENT;
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    float* out = nullptr;
    if (cudaMalloc(&out, 4) != cudaSuccess) return TSC_ERR_CUDA;
    const int blocks = sms * 8, threads = 256, iters = 4096;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    fma_peak_kernel<<<blocks, threads>>>(out, 64, 0.999f, 0.001f);
    float best = 1e30f;
    for (int t = 0; t < 5; ++t) {
        cudaEventRecord(e0);
        fma_peak_kernel<<<blocks, threads>>>(out, iters, 0.999f, 0.001f);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    cudaError_t e = cudaGetLastError();
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(out);
    if (e != cudaSuccess) return TSC_ERR_CUDA;
    const double fmas = (double)blocks * threads * iters * 16 * 8;
    *tflops = 2.0 * fmas / (best * 1e-3) / 1e12;
    return TSC_OK;
}

extern "C" tsc_status tsc_bench_empty_launch(int32_t count, void* stream, double* us) {
    if (!us || count < 1) return TSC_ERR_INVALID_ARGUMENT;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    empty_kernel<<<1, 32, 0, s>>>();
    cudaEventRecord(e0, s);
    for (int i = 0; i < count; ++i) empty_kernel<<<1, 32, 0, s>>>();
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (cudaGetLastError() != cudaSuccess) return TSC_ERR_CUDA;
    *us = ms * 1e3 / count;
    return TSC_OK;
}

extern "C" tsc_status tsc_bench_empty_kernel(void* stream) {
    empty_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>();
    return cudaGetLastError() == cudaSuccess ? TSC_OK : TSC_ERR_CUDA;
}
