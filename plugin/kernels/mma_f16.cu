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

cudaError_t mma_set_smem_limit_f16(int bytes) { return mma_set_smem_limit<__half>(bytes); }

bool mma_supported() {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, mma_kernel<__half, 8, 32, 1, 8, 1, 4, 1>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.binaryVersion >= 80;
}
}  // namespace tsc
