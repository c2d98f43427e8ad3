// fp32 instantiations of the register-tile kernel (separate TU: parallel build).
#include "tile_kernel.cuh"
namespace tsc {
cudaError_t launch_tile_f32(int geom, int cfg, const TileParams& p, cudaStream_t s) {
    return launch_tile_t<float>(geom, cfg, p, s);
}
cudaError_t tile_set_smem_limit_f32(int bytes) { return set_smem_t<float>(bytes); }
}  // namespace tsc
