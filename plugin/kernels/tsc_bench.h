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
#ifdef __cplusplus
}
#endif
#endif
