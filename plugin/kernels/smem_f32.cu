// fp32 instantiations of the shared-memory kernel (separate TU: parallel build).
#include "smem_kernel.cuh"
namespace tsc {
cudaError_t launch_smem_f32(int tile, int kw, const SmemParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
    return launch_smem_t<float>(tile, kw, p, tmap, smem, s);
}
bool smem_tma_supported() {
#if defined(TSC_HAS_TMA)
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, smem_kernel<float, 8, 2, 1, 2, 1, 24>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.binaryVersion >= 90;
#else
    return false;
#endif
}
}  // namespace tsc
