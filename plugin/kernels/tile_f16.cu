// fp16-I/O (fp32 accumulate) instantiations of the register-tile kernel.
#include "tile_kernel.cuh"
namespace tsc {
cudaError_t launch_tile_f16(int geom, int cfg, const TileParams& p, cudaStream_t s) {
    return launch_tile_t<__half>(geom, cfg, p, s);
}
cudaError_t tile_set_smem_limit_f16(int bytes) { return set_smem_t<__half>(bytes); }
}  // namespace tsc
