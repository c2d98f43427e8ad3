// half2 fp16 instantiations of the shared-memory kernel (half2 layouts: fp16 NCHW, stride_w 1; separate TU).
#include "smem_kernel.cuh"
namespace tsc {
cudaError_t launch_smem_h2(int tile, int kw, const SmemParams& p, size_t smem, cudaStream_t s) {
    dim3 grid((unsigned)(p.tiles_h * p.tiles_w), (unsigned)p.groups, (unsigned)(p.N < 65535 ? p.N : 65535));
    if (p.nhwc || p.tma) return cudaErrorInvalidValue;
    switch (tile * 8 + kw) {
        case 0 * 8 + 1: return launch_smem_h2_lw<16, 4, 1>(p, smem, grid, s);
        case 0 * 8 + 2: return launch_smem_h2_lw<16, 4, 2>(p, smem, grid, s);
        case 0 * 8 + 4: return launch_smem_h2_lw<16, 4, 4>(p, smem, grid, s);
        case 1 * 8 + 1: return launch_smem_h2_lw<8, 4, 1>(p, smem, grid, s);
        case 1 * 8 + 2: return launch_smem_h2_lw<8, 4, 2>(p, smem, grid, s);
        default: return cudaErrorInvalidValue;
    }
}
}  // namespace tsc
