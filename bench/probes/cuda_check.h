/* CK(call): a CUDA runtime call of the probes; on an error prints file, line, the call and the error, and exits 1. */
#ifndef TRT_SPARSE_PROBE_CUDA_CHECK_H
#define TRT_SPARSE_PROBE_CUDA_CHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                         \
        }                                                                                         \
    } while (0)

#endif
