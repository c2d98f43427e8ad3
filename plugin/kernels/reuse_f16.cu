// half2 fp16 instantiations of the register-reuse kernel (configs with F16 = 1; separate TU).
#include "reuse_kernel.cuh"
namespace tsc {
namespace {
template <int F16> struct ReuseF16 {
    template <int R, int S, int ST, int KT, int PH, int PW, int LW>
    static cudaError_t launch(bool, const SmemParams&, size_t, cudaStream_t) { return cudaErrorInvalidValue; }
    template <int R, int S, int ST, int KT, int PH, int PW, int LW>
    static cudaError_t set(int) { return cudaSuccess; }
};
template <> struct ReuseF16<1> {
    template <int R, int S, int ST, int KT, int PH, int PW, int LW>
    static cudaError_t launch(bool fast, const SmemParams& p, size_t smem, cudaStream_t s) {
        return launch_reuse_cfg<__half, true, R, S, ST, KT, PH, PW, LW>(fast, p, smem, s);
    }
    template <int R, int S, int ST, int KT, int PH, int PW, int LW>
    static cudaError_t set(int bytes) { return set_smem_reuse_cfg<__half, true, R, S, ST, KT, PH, PW, LW>(bytes); }
};
}  // namespace
cudaError_t launch_reuse_f16(int cfg, bool fast, const SmemParams& p, size_t smem, cudaStream_t s) {
#define TSC_L(I, R, S, ST, KT, PH, PW, LW, NS, F16) \
    case I: return ReuseF16<F16>::template launch<R, S, ST, KT, PH, PW, LW>(fast, p, smem, s);
    switch (cfg) {
        TSC_REUSE_FOR_EACH(TSC_L)
        default: return cudaErrorInvalidValue;
    }
#undef TSC_L
}
cudaError_t reuse_set_smem_limit_f16(int bytes) {
    cudaError_t e = cudaSuccess, e2;
#define TSC_S(I, R, S, ST, KT, PH, PW, LW, NS, F16) \
    e2 = ReuseF16<F16>::template set<R, S, ST, KT, PH, PW, LW>(bytes); \
    if (e2 != cudaSuccess) e = e2;
    TSC_REUSE_FOR_EACH(TSC_S)
#undef TSC_S
    return e;
}
}  // namespace tsc
