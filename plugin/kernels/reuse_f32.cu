// fp32 instantiations of the register-reuse kernel (separate TU: parallel build).
#include "reuse_kernel.cuh"
namespace tsc {
cudaError_t launch_reuse_f32(int cfg, bool fast, const SmemParams& p, size_t smem, cudaStream_t s) {
#define TSC_L(I, R, S, ST, KT, PH, PW, LW, NS, F16) \
    case I: return launch_reuse_cfg<float, false, R, S, ST, KT, PH, PW, LW>(fast, p, smem, s);
    switch (cfg) {
        TSC_REUSE_FOR_EACH(TSC_L)
        default: return cudaErrorInvalidValue;
    }
#undef TSC_L
}
cudaError_t reuse_set_smem_limit_f32(int bytes) {
    cudaError_t e = cudaSuccess, e2;
#define TSC_S(I, R, S, ST, KT, PH, PW, LW, NS, F16) \
    e2 = set_smem_reuse_cfg<float, false, R, S, ST, KT, PH, PW, LW>(bytes); \
    if (e2 != cudaSuccess) e = e2;
    TSC_REUSE_FOR_EACH(TSC_S)
#undef TSC_S
    return e;
}
}  // namespace tsc
