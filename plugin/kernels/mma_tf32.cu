// TF32 instantiations of the tensor-core kernel (mma_kernel.cuh) for fp32 I/O plans that allow TF32.
#include "mma_kernel.cuh"
namespace tsc {
cudaError_t launch_mma_tf32(int cfg, const MmaParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
#define TSC_L(I, TH, TW, WG, WP, WS, NT, CL, SB) \
    case I: return launch_mma_cfg<float, TH, TW, WG, WP, WS, NT, CL>(p, tmap, smem, s);
    switch (cfg) {
        TSC_MMA_FOR_EACH(TSC_L)
        default: return cudaErrorInvalidValue;
    }
#undef TSC_L
}

cudaError_t mma_set_smem_limit_tf32(int bytes) { return mma_set_smem_limit<float>(bytes); }
}  // namespace tsc
