// fp16 instantiations of the tensor-core kernel (mma_kernel.cuh), one per TSC_MMA_FOR_EACH config.
#include "mma_kernel.cuh"
namespace tsc {
cudaError_t launch_mma_f16(int cfg, const MmaParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
#define TSC_L(I, TH, TW, WG, WP, WS, NT, CL, SB) \
    case I:                                                                                                      \
        return NT % 2 == 0 && p.pg ? launch_mma_cfg<__half, TH, TW, WG, WP, WS, NT, CL, NT % 2 == 0>(p, tmap, smem, s) \
                                   : launch_mma_cfg<__half, TH, TW, WG, WP, WS, NT, CL>(p, tmap, smem, s);
    switch (cfg) {
        TSC_MMA_FOR_EACH(TSC_L)
        default: return cudaErrorInvalidValue;
    }
#undef TSC_L
}

cudaError_t mma_set_smem_limit_f16(int bytes) {
    const cudaError_t e = mma_set_smem_limit<__half>(bytes);
    const cudaError_t e_pg = mma_set_smem_limit<__half, true>(bytes); /* pixel-pair gather kernels */
    return e != cudaSuccess ? e : e_pg;
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
