/*
 * Probe: a single-stage ("burst") sparse direct convolution for batch-1 small maps, fp32 NCHW, stride 1, sm_90.
 *
 * One block = one output tile (32 / LW rows x LW * PC columns) x Kb output channels x one slice of C / CL input
 * channels (CL blocks of a thread-block cluster split C and reduce through distributed shared memory). The block's
 * whole input slice (tile + halo, zero-padded by TMA's out-of-bounds fill) and its whole nonzero list arrive with
 * ONE mbarrier wait: no chunk loop, no per-chunk barrier. Lane (lr, lc) owns PC pixels of one row (columns lc +
 * jc * LW), so a nonzero costs one warp-uniform LDS.64 (value, byte offset), one IADD and PC (LDS + FFMA) with
 * immediate offsets. The 8 warps are WK output-channel groups (KPW channels each) x WC input-channel slices.
 *
 * Built and driven by bench/probes/burst_probe.py (ctypes); not part of the library.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <cooperative_groups.h>

#include <cstdint>
#include <cstring>

namespace cg = cooperative_groups;

struct BurstParams {
    float* y;
    const int2* entries; /* [blocks lists][ent_cap] (fp32 value bits, byte offset in the staged slice) */
    const int* seg;      /* [blocks lists][8 warps][KPW][2] begin / end in the block list */
    const float* bias;   /* K or null */
    int N, C, K, P, Q;
    int pad_t, pad_l;
    int BW, IH, Cc, CB, CL, Kb, WK, WC, tiles_x, ent_cap, in_bytes, act;
    const float* x; /* the input, for per-thread staging where TMA cannot map it (use_tma 0) */
    int H, W, use_tma;
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ float lds_f32(unsigned a) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}
__device__ __forceinline__ int2 lds_i2(unsigned a) {
    int2 v;
    asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a));
    return v;
}

template <int LW, int PC, int KPW>
__global__ void __launch_bounds__(256) burst_kernel(const __grid_constant__ CUtensorMap tmap, BurstParams p) {
    extern __shared__ __align__(128) unsigned char smem[];
    constexpr int LH = 32 / LW, TH = LH, TW = LW * PC;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int tile = blockIdx.x, ty = tile / p.tiles_x, tx = tile % p.tiles_x;
    const int by = blockIdx.y, g = by / p.CL, rank = by % p.CL, n = blockIdx.z;
    const int oy0 = ty * TH, ox0 = tx * TW;
    const int ent_bytes = p.ent_cap * 8;
    const unsigned s_in = smem_u32(smem), s_ent = s_in + (unsigned)p.in_bytes;
    const unsigned s_bar = s_ent + (unsigned)ent_bytes;
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(s_bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
        const unsigned chan_bytes = (unsigned)(p.IH * p.BW * 4);
        const unsigned total = (p.use_tma ? (unsigned)p.Cc * chan_bytes : 0u) + (unsigned)ent_bytes;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(s_bar), "r"(total) : "memory");
        const int c0 = rank * p.Cc;
        for (int cb = 0; p.use_tma && cb < p.Cc; cb += p.CB) {
            /* boxes start at a 16-byte aligned column (misaligned starts fault, see sparse_conv.cu) */
            const int x0 = ((ox0 - p.pad_l) >> 2) << 2, y0 = oy0 - p.pad_t, cc = c0 + cb;
            asm volatile(
                "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                ::"r"(s_in + (unsigned)cb * chan_bytes), "l"(&tmap), "r"(x0), "r"(y0), "r"(cc), "r"(n), "r"(s_bar)
                : "memory");
        }
        const int2* src = p.entries + (size_t)by * p.ent_cap;
        if (ent_bytes > 0)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(s_ent), "l"(src), "r"(ent_bytes), "r"(s_bar) : "memory");
    }
    if (!p.use_tma) {
        /* per-thread staging: warp w takes staged rows w, w + 8, ..; lanes the columns; 4-byte cp.async with zero
         * fill for the padding (every copy in flight before the one wait) */
        const int x0 = ((ox0 - p.pad_l) >> 2) << 2, y0 = oy0 - p.pad_t, c0 = rank * p.Cc;
        const int rows = p.Cc * p.IH;
        for (int rr = warp; rr < rows; rr += 8) {
            const int c = rr / p.IH, iy = y0 + rr % p.IH, cg_ = c0 + c;
            const bool rok = iy >= 0 && iy < p.H && cg_ < p.C;
            const float* src = p.x + (((size_t)n * p.C + (rok ? cg_ : 0)) * p.H + (rok ? iy : 0)) * p.W;
            const unsigned dst = s_in + (unsigned)(rr * p.BW) * 4u;
            for (int col = lane; col < p.BW; col += 32) {
                const int ix = x0 + col;
                const bool ok = rok && ix >= 0 && ix < p.W;
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst + (unsigned)col * 4u),
                             "l"(src + (ok ? ix : 0)), "r"(ok ? 4 : 0) : "memory");
            }
        }
        asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
        __syncthreads();
    }
    const int kg = warp % p.WK, cs = warp / p.WK;
    const int lr = lane / LW, lc = lane % LW;
    const int* sg = p.seg + ((size_t)by * 8 + warp) * KPW * 2;
    int b[KPW], e[KPW];
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk) {
        b[kk] = __ldg(sg + 2 * kk);
        e[kk] = __ldg(sg + 2 * kk + 1);
    }
    {
        unsigned done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred q;\n\tmbarrier.try_wait.parity.shared::cta.b64 q, [%1], 0;\n\tselp.u32 %0, 1, 0, q;\n\t}"
                         : "=r"(done) : "r"(s_bar) : "memory");
    }
    const int lead = (ox0 - p.pad_l) - (((ox0 - p.pad_l) >> 2) << 2);
    const unsigned lane_base = s_in + (unsigned)((lr * p.BW + lc + lead) * 4);
    float acc[KPW][PC];
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk) {
#pragma unroll
        for (int j = 0; j < PC; ++j) acc[kk][j] = 0.0f;
#pragma unroll 4
        for (int i = b[kk]; i < e[kk]; ++i) {
            const int2 en = lds_i2(s_ent + (unsigned)i * 8u);
            const float w = __int_as_float(en.x);
            const unsigned a = lane_base + (unsigned)en.y;
#pragma unroll
            for (int j = 0; j < PC; ++j) acc[kk][j] = fmaf(w, lds_f32(a + (unsigned)(j * LW * 4)), acc[kk][j]);
        }
    }
    const int TP = TH * TW;
    if (p.WC == 1 && p.CL == 1) {
        const int oy = oy0 + lr;
#pragma unroll
        for (int kk = 0; kk < KPW; ++kk) {
            const int k = g * p.Kb + kg * KPW + kk;
            if (k >= p.K || oy >= p.P) continue;
            const float bk = p.bias ? __ldg(p.bias + k) : 0.0f;
            float* yr = p.y + (((size_t)n * p.K + k) * p.P + oy) * p.Q;
#pragma unroll
            for (int j = 0; j < PC; ++j) {
                const int ox = ox0 + lc + j * LW;
                if (ox < p.Q) {
                    float v = acc[kk][j] + bk;
                    if (p.act == 1) v = fmaxf(v, 0.0f);
                    yr[ox] = v;
                }
            }
        }
        return;
    }
    /* partial sums -> shared memory (the staged input is dead once every warp is past its loop) */
    __syncthreads();
    float* red = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk) {
        const int kl = kg * KPW + kk;
#pragma unroll
        for (int j = 0; j < PC; ++j) red[((cs * p.Kb + kl) * TH + lr) * TW + lc + j * LW] = acc[kk][j];
    }
    cg::cluster_group cluster = cg::this_cluster();
    if (p.CL > 1) cluster.sync();
    else __syncthreads();
    const int total = p.Kb * TP;
    const int per = (total + p.CL - 1) / p.CL;
    const int lo = rank * per, hi = min(total, lo + per);
    for (int idx = lo + tid; idx < hi; idx += blockDim.x) {
        float s = 0.0f;
        for (int q = 0; q < p.CL; ++q) {
            const float* pr = p.CL > 1 ? cluster.map_shared_rank(red, q) : red;
            for (int c = 0; c < p.WC; ++c) s += pr[c * total + idx];
        }
        const int kl = idx / TP, pix = idx % TP;
        const int k = g * p.Kb + kl, oy = oy0 + pix / TW, ox = ox0 + pix % TW;
        if (k < p.K && oy < p.P && ox < p.Q) {
            float v = s + (p.bias ? __ldg(p.bias + k) : 0.0f);
            if (p.act == 1) v = fmaxf(v, 0.0f);
            p.y[(((size_t)n * p.K + k) * p.P + oy) * p.Q + ox] = v;
        }
    }
    if (p.CL > 1) cluster.sync();
}

typedef void (*KernelFn)(const __grid_constant__ CUtensorMap, BurstParams);

struct Cfg {
    int LW, PC, KPW;
    KernelFn fn;
};
#define CFG(lw, pc, kpw) {lw, pc, kpw, burst_kernel<lw, pc, kpw>}
static const Cfg kCfgs[] = {CFG(4, 8, 1), CFG(4, 8, 2), CFG(4, 7, 1), CFG(4, 7, 2), CFG(2, 7, 1), CFG(2, 7, 2),
                            CFG(4, 2, 4), CFG(4, 2, 2), CFG(8, 4, 1), CFG(8, 4, 2), CFG(2, 14, 1), CFG(4, 4, 2),
                            CFG(4, 4, 4), CFG(2, 8, 2), CFG(8, 2, 2), CFG(8, 2, 4)};
static const int kCfgCount = (int)(sizeof(kCfgs) / sizeof(kCfgs[0]));

static PFN_cuTensorMapEncodeTiled_v12000 encoder() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }
    return fn;
}

extern "C" int burst_cfg_count() { return kCfgCount; }
extern "C" void burst_cfg_info(int i, int* lw, int* pc, int* kpw) {
    *lw = kCfgs[i].LW;
    *pc = kCfgs[i].PC;
    *kpw = kCfgs[i].KPW;
}

/* Returns 0, or a negative step / positive CUDA error code. */
extern "C" int burst_launch(int cfg, const float* x, float* y, const int2* entries, const int* seg, const float* bias,
                            int N, int C, int H, int W, int K, int P, int Q, int pad_t, int pad_l, int BW, int IH,
                            int Cc, int CB, int CL, int Kb, int WK, int WC, int tiles_x, int tiles_y, int ent_cap,
                            int in_bytes, int smem, int act, void* stream) {
    if (cfg < 0 || cfg >= kCfgCount) return -1;
    PFN_cuTensorMapEncodeTiled_v12000 enc = encoder();
    if (!enc) return -2;
    const cuuint64_t dims[4] = {(cuuint64_t)W, (cuuint64_t)H, (cuuint64_t)C, (cuuint64_t)N};
    const cuuint64_t strides[3] = {(cuuint64_t)W * 4, (cuuint64_t)H * W * 4, (cuuint64_t)C * H * W * 4};
    const cuuint32_t box[4] = {(cuuint32_t)BW, (cuuint32_t)IH, (cuuint32_t)CB, 1u};
    const cuuint32_t es[4] = {1u, 1u, 1u, 1u};
    CUtensorMap m;
    std::memset(&m, 0, sizeof(m));
    const bool use_tma = (W * 4) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    if (use_tma && enc(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, const_cast<float*>(x), dims, strides, box, es,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return -3;
    BurstParams p;
    p.y = y; p.entries = entries; p.seg = seg; p.bias = bias;
    p.N = N; p.C = C; p.K = K; p.P = P; p.Q = Q; p.pad_t = pad_t; p.pad_l = pad_l;
    p.BW = BW; p.IH = IH; p.Cc = Cc; p.CB = CB; p.CL = CL; p.Kb = Kb; p.WK = WK; p.WC = WC;
    p.tiles_x = tiles_x; p.ent_cap = ent_cap; p.in_bytes = in_bytes; p.act = act;
    p.x = x; p.H = H; p.W = W; p.use_tma = use_tma ? 1 : 0;
    const KernelFn fn = kCfgs[cfg].fn;
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return (int)e;
    if (CL > 1) {
        e = cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (e != cudaSuccess) return (int)e;
    }
    cudaLaunchConfig_t lc;
    std::memset(&lc, 0, sizeof(lc));
    const int groups = (K + Kb - 1) / Kb;
    lc.gridDim = dim3((unsigned)(tiles_x * tiles_y), (unsigned)(groups * CL), (unsigned)N);
    lc.blockDim = dim3(256, 1, 1);
    lc.dynamicSmemBytes = (size_t)smem;
    lc.stream = (cudaStream_t)stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = (unsigned)CL;
    attr[0].val.clusterDim.z = 1;
    lc.attrs = attr;
    lc.numAttrs = 1;
    e = cudaLaunchKernelEx(&lc, fn, m, p);
    return e == cudaSuccess ? 0 : (int)e;
}
