// fp16 I/O instantiations of the shared-memory kernel (fp32 accumulation; separate TU: parallel build).
#include "smem_kernel.cuh"
namespace tsc {
cudaError_t launch_smem_f16(int tile, int kw, const SmemParams& p, const TmaDesc* tmap, size_t smem, cudaStream_t s) {
    return launch_smem_t<__half>(tile, kw, p, tmap, smem, s);
}
}  // namespace tsc
