/* trt-sparse kernel library: measurement helpers for the benchmark (not part of the plugin ABI). */
#ifndef TRT_SPARSE_TSC_BENCH_H
#define TRT_SPARSE_TSC_BENCH_H
#include "sparse_conv.h"
#ifdef __cplusplus
extern "C" {
#endif
/* Measured fp32 FMA peak of the current device in TFLOP/s (2 FLOP per FMA), by a
 * register-only FMA loop over every SM; writes it to *tflops. */
TSC_API tsc_status tsc_bench_fma_peak(double* tflops);
/* Time of one empty kernel launch in a loop of `count` launches on `stream`, microseconds. */
TSC_API tsc_status tsc_bench_empty_launch(int32_t count, void* stream, double* us);
/* Launch one empty kernel on `stream` (capturable in a CUDA graph: the launch-cost floor). */
TSC_API tsc_status tsc_bench_empty_kernel(void* stream);
/* Kernel variants that can run input N x H x W (0 on a bad shape); index 0 is the generic kernel. */
TSC_API int32_t tsc_plan_variant_count(const tsc_plan* plan, int32_t N, int32_t H, int32_t W);
/* Name of variant `index` into buf; returns the needed length (0 if out of range). */
TSC_API size_t tsc_plan_variant_name(const tsc_plan* plan, int32_t index, int32_t N, int32_t H, int32_t W,
                                     char* buf, size_t buf_len);
/* Enqueue one specific variant (tests check every variant; benchmarks time them). */
TSC_API tsc_status tsc_plan_enqueue_variant(const tsc_plan* plan, int32_t index, int32_t N, int32_t H, int32_t W,
                                            const void* input, void* output, void* workspace, void* stream);
#ifdef __cplusplus
}
#endif
#endif
