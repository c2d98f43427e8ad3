// fp32 instantiations of the shared-memory kernel (separate TU: parallel build).
#include "smem_kernel.cuh"
namespace tsc {
cudaError_t launch_smem_f32(int tile, int kw, const SmemParams& p, size_t smem, cudaStream_t s) {
    return launch_smem_t<float>(tile, kw, p, smem, s);
}
}  // namespace tsc
