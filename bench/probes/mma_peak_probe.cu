/*
 * Probe: the tensor-core issue rate a warp-level `mma.sync` kernel can reach on this GPU (the ceiling for
 * mma_kernel.cuh / mma_phase_kernel.cuh, which issue m16n8k16 fp16 -> fp32 and m16n8k8 TF32 -> fp32 mma.sync).
 * Each warp runs `chains` independent accumulator chains from registers (no memory traffic in the loop), 8 warps per
 * block, `blocks_per_sm` blocks per SM; prints TFLOP/s (2 x 16 x 8 x k per mma) per (shape, chains, warps per SM).
 * Build: nvcc -O3 -std=c++17 -arch=sm_90 bench/probes/mma_peak_probe.cu -o /tmp/mma_peak   (sm_80+)
 * Run:   /tmp/mma_peak [--json FILE]
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

/* CH independent m16n8k16 (TF32: m16n8k8) chains per warp, `iters` x 8 mma each. */
template <int CH, bool TF32>
__global__ void __launch_bounds__(256) mma_peak(float* out, int iters, unsigned seed) {
    float acc[CH][4];
#pragma unroll
    for (int c = 0; c < CH; ++c)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[c][r] = 0.0f;
    const unsigned a0 = seed ^ threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u, b0 = a0 * 11u, b1 = a0 * 13u;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < 8; ++u)
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                if (TF32)
                    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                                 "{%8,%9}, {%0,%1,%2,%3};\n"
                                 : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
                else
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                                 "{%8,%9}, {%0,%1,%2,%3};\n"
                                 : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            }
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CH; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
    if (s == 1.2345e-30f) out[threadIdx.x] = s; /* keep the work */
}

struct Row {
    const char* shape;
    int chains, warps_per_sm;
    double tflops;
};

template <int CH, bool TF32>
static Row run(int sms, int blocks_per_sm, float* dout) {
    const int iters = 2048 / (CH * blocks_per_sm), blocks = sms * blocks_per_sm; /* the same mma count per SM */
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    mma_peak<CH, TF32><<<blocks, 256>>>(dout, 16, 1u);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int t = 0; t < 7; ++t) {
        CK(cudaEventRecord(e0));
        mma_peak<CH, TF32><<<blocks, 256>>>(dout, iters, 1u);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float m = 0;
        CK(cudaEventElapsedTime(&m, e0, e1));
        ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    const double flop = 2.0 * 16 * 8 * (TF32 ? 8 : 16) * 8.0 * CH * iters * 8.0 * blocks; /* 8 warps per block */
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return Row{TF32 ? "m16n8k8.tf32" : "m16n8k16.f16", CH, blocks_per_sm * 8, flop / (ms[ms.size() / 2] * 1e-3) / 1e12};
}

int main(int argc, char** argv) {
    const char* json = nullptr;
    for (int i = 1; i + 1 < argc; ++i)
        if (!std::strcmp(argv[i], "--json")) json = argv[i + 1];
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    float* dout;
    CK(cudaMalloc(&dout, 256 * sizeof(float)));
    std::vector<Row> rows;
    for (int bps : {1, 2, 4}) { /* 8 / 16 / 32 warps per SM */
        rows.push_back(run<1, false>(sms, bps, dout));
        rows.push_back(run<2, false>(sms, bps, dout));
        rows.push_back(run<4, false>(sms, bps, dout));
        rows.push_back(run<8, false>(sms, bps, dout));
        rows.push_back(run<4, true>(sms, bps, dout));
    }
    std::printf("%s, %d SMs: mma.sync issue rate from registers\n", prop.name, sms);
    std::printf("%-14s %6s %12s %10s\n", "shape", "chains", "warps / SM", "TFLOP/s");
    for (const Row& r : rows) std::printf("%-14s %6d %12d %10.1f\n", r.shape, r.chains, r.warps_per_sm, r.tflops);
    if (json) {
        FILE* f = std::fopen(json, "w");
        if (f) {
            std::fprintf(f, "{\"probe\": \"mma_peak_probe\", \"device\": \"%s\", \"sms\": %d, \"rows\": [", prop.name, sms);
            for (size_t i = 0; i < rows.size(); ++i)
                std::fprintf(f, "%s{\"shape\": \"%s\", \"chains\": %d, \"warps_per_sm\": %d, \"tflops\": %.2f}",
                             i ? ", " : "", rows[i].shape, rows[i].chains, rows[i].warps_per_sm, rows[i].tflops);
            std::fprintf(f, "]}\n");
            std::fclose(f);
        }
    }
    cudaFree(dout);
    return 0;
}
