// fp16 instantiations of the tensor-core kernel (mma_kernel.cuh), one per TSC_MMA_FOR_EACH config.
#include "mma_kernel.cuh"
namespace tsc {
cudaError_t launch_mma_f16(int cfg, const MmaParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
#define TSC_L(I, TH, TW, WG, WP, WS, NT, CL, SB) \
    case I: return launch_mma_cfg<__half, TH, TW, WG, WP, WS, NT, CL>(p, tmap, smem, s);
    switch (cfg) {
        TSC_MMA_FOR_EACH(TSC_L)
        default: return cudaErrorInvalidValue;
    }
#undef TSC_L
}

cudaError_t mma_set_smem_limit_f16(int bytes) {
    cudaError_t first = cudaSuccess;
#define TSC_A(I, TH, TW, WG, WP, WS, NT, CL, SB)                                                                    \
    if (SB > 48) {                                                                                                 \
        const cudaError_t e = cudaFuncSetAttribute(mma_kernel<__half, TH, TW, WG, WP, WS, NT, CL>,                      \
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);           \
        if (e != cudaSuccess && first == cudaSuccess) first = e;                                                   \
    }
    TSC_MMA_FOR_EACH(TSC_A)
#undef TSC_A
    return first;
}

bool mma_supported() {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, mma_kernel<__half, 8, 32, 1, 8, 1, 4, 1>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.binaryVersion >= 80;
}
}  // namespace tsc
