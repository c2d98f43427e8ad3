/*
 * Probe: how fast can the register-reuse kernel's per-nonzero brx.idx dispatch run on this GPU?
 *
 * Isolates the inner loop of the reuse design (no global staging, no epilogue): every warp walks a list of
 * (value, case) nonzeros held in shared memory (one warp-uniform LDS.64 each, as the smem kernel's lists), and
 * every NPC nonzeros (one input channel's share) reloads its input patch ((PH+2) x (PW+2) floats) from shared
 * memory into registers. Modes:
 *   0 fixed  : every nonzero runs the same PHxPW register FMAs (no dispatch) -- the loop's ceiling;
 *   1 brx    : ReuseFma<3,3,1,KT,PH,PW> (one brx.idx into KT*9 cases of PHxPW register FMAs) -- the reuse design;
 *   3 brx+pf : brx with the next nonzero's entry loaded one ahead;
 *   2 lds    : per nonzero PHxPW (LDS + FFMA) at the nonzero's offset (no patch reload). Not a calibration of the
 *              smem kernel: lanes here own PW adjacent pixels, so its loads have 4-way bank conflicts (4.0 TFLOP/s
 *              on the H200); the smem kernel interleaves lanes and measures 5.6-10 with staging;
 * Prints useful FMA throughput (TFLOP/s, 2 flop per FMA) per mode/config; JSON with --json.
 * Build: nvcc -O3 -std=c++17 -arch=sm_90 -I plugin/kernels bench/probes/reuse_dispatch_probe.cu -o /tmp/probe
 */
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <algorithm>

namespace probe {
#include "reuse_dispatch.inc"
}
using probe::ReuseFma;

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ int2 lds64(unsigned a) {
    int2 v;
    asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a));
    return v;
}
__device__ __forceinline__ float lds32(unsigned a) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}

constexpr int kPatchFloats = 8192; /* 32 KB of "staged input" */
constexpr int kPitch = 40;         /* floats per staged row */


/* Every block's "staged input": kPatchFloats floats of a fixed pattern. */
__device__ __forceinline__ void fill_patch_source(float* sp) {
    for (int i = threadIdx.x; i < kPatchFloats; i += 256) sp[i] = (float)((i * 37) % 101) * 0.01f;
}
/* Shared-window address of the lane's patch origin: lanes side by side (PW floats apart), 8 per row of lanes. */
template <int PH, int PW>
__device__ __forceinline__ unsigned patch_origin(const float* sp) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    return smem_u32(sp) + 4u * (unsigned)((lane >> 3) * PH * kPitch + (lane & 7) * PW + warp * 4 * kPitch);
}

template <int KT, int PH, int PW, int MINB, int MODE>
__global__ void __launch_bounds__(256, MINB) probe_kernel(const int2* __restrict__ ent_g, int n_ent, int npc, int reps,
                                                         float* out) {
    extern __shared__ __align__(16) unsigned char raw[];
    float* sp = reinterpret_cast<float*>(raw);
    int2* ent = reinterpret_cast<int2*>(raw + kPatchFloats * 4);
    fill_patch_source(sp);
    for (int i = threadIdx.x; i < n_ent + 2; i += 256) ent[i] = i < n_ent ? ent_g[i] : make_int2(0, 0);
    __syncthreads();
    constexpr int PX = PH * PW, PTH = PH + 2, PTW = PW + 2;
    float acc[KT][PX];
#pragma unroll
    for (int k = 0; k < KT; ++k)
#pragma unroll
        for (int j = 0; j < PX; ++j) acc[k][j] = 0.f;
    const unsigned ea = smem_u32(ent);
    const unsigned pa = patch_origin<PH, PW>(sp);
    for (int r = 0; r < reps; ++r) {
        for (int t0 = 0; t0 < n_ent; t0 += npc) {
            const unsigned ca = pa + 4u * (unsigned)(((t0 / npc) * 5 % 16) * kPitch * 8); /* "channel" t0 / npc */
            if constexpr (MODE == 2) {
                for (int t = t0; t < t0 + npc; ++t) {
                    const int2 e = lds64(ea + 8u * (unsigned)t);
                    const float v = __int_as_float(e.x);
                    const unsigned a = ca + 4u * (unsigned)e.y; /* the smem kernel stores the byte offset itself */
#pragma unroll
                    for (int jr = 0; jr < PH; ++jr)
#pragma unroll
                        for (int jc = 0; jc < PW; ++jc)
                            acc[0][jr * PW + jc] = fmaf(v, lds32(a + 4u * (unsigned)(jr * kPitch + jc)), acc[0][jr * PW + jc]);
                }
            } else {
            float xp[PTH][PTW];
#pragma unroll
            for (int a = 0; a < PTH; ++a)
#pragma unroll
                for (int b = 0; b < PTW; ++b) xp[a][b] = lds32(ca + 4u * (unsigned)(a * kPitch + b));
            if constexpr (MODE == 3) { /* brx, next entry loaded one nonzero ahead */
                int2 e = lds64(ea + 8u * (unsigned)t0);
#pragma unroll 1
                for (int t = t0; t < t0 + npc; ++t) {
                    const int2 en = lds64(ea + 8u * (unsigned)(t + 1)); /* one past the list: spare entry */
                    ReuseFma<3, 3, 1, KT, PH, PW>::run(acc, xp, __int_as_float(e.x), e.y);
                    e = en;
                }
                continue;
            }
#pragma unroll 1
            for (int t = t0; t < t0 + npc; ++t) {
                const int2 e = lds64(ea + 8u * (unsigned)t);
                const float v = __int_as_float(e.x);
                if constexpr (MODE == 0) {
#pragma unroll
                    for (int jr = 0; jr < PH; ++jr)
#pragma unroll
                        for (int jc = 0; jc < PW; ++jc) acc[0][jr * PW + jc] = fmaf(v, xp[jr][jc], acc[0][jr * PW + jc]);
                } else {
                    ReuseFma<3, 3, 1, KT, PH, PW>::run(acc, xp, v, e.y);
                }
            }
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < KT; ++k)
#pragma unroll
        for (int j = 0; j < PX; ++j) s += acc[k][j];
    out[blockIdx.x * 256 + threadIdx.x] = s;
}


struct Result {
    const char* mode;
    int kt, ph, pw, minb, npc, regs, blocks_per_sm;
    double us, tflops, ffma_tflops;
};

__device__ __forceinline__ uint4 lds128(unsigned a) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
    return v;
}

/* Bitmask dispatch (no indirect branch): per input channel one record {mask bits 0-31, 32-63, 64-95, first weight};
 * bit k*9 + tap set = output channel k of the warp has a nonzero at tap (r, s) = (tap / 3, tap % 3); the weights
 * follow in bit order. Per set bit: one warp-uniform predicated branch over one LDS (the weight) + PHxPW FFMAs.
 * HIER: skip a whole output channel's 9 bits with one test first. */
template <int KT, int PH, int PW, int MINB, bool HIER>
__global__ void __launch_bounds__(256, MINB) mask_kernel(const uint4* __restrict__ rec_g, const float* __restrict__ w_g,
                                                         int n_ch, int n_w, int reps, float* out) {
    extern __shared__ __align__(16) unsigned char raw[];
    float* sp = reinterpret_cast<float*>(raw);
    uint4* rec = reinterpret_cast<uint4*>(raw + kPatchFloats * 4);
    float* wv = reinterpret_cast<float*>(raw + kPatchFloats * 4 + (size_t)n_ch * 16);
    fill_patch_source(sp);
    for (int i = threadIdx.x; i < n_ch; i += 256) rec[i] = rec_g[i];
    for (int i = threadIdx.x; i < n_w; i += 256) wv[i] = w_g[i];
    __syncthreads();
    constexpr int PX = PH * PW, PTH = PH + 2, PTW = PW + 2;
    float acc[KT][PX];
#pragma unroll
    for (int k = 0; k < KT; ++k)
#pragma unroll
        for (int j = 0; j < PX; ++j) acc[k][j] = 0.f;
    const unsigned ra = smem_u32(rec), wa0 = smem_u32(wv);
    const unsigned pa = patch_origin<PH, PW>(sp);
    for (int r = 0; r < reps; ++r) {
#pragma unroll 1
        for (int ch = 0; ch < n_ch; ++ch) {
            const uint4 m = lds128(ra + 16u * (unsigned)ch);
            const unsigned ca = pa + 4u * (unsigned)((ch * 5 % 16) * kPitch * 8);
            float xp[PTH][PTW];
#pragma unroll
            for (int a = 0; a < PTH; ++a)
#pragma unroll
                for (int b = 0; b < PTW; ++b) xp[a][b] = lds32(ca + 4u * (unsigned)(a * kPitch + b));
            unsigned wa = wa0 + 4u * m.w;
#pragma unroll
            for (int k = 0; k < KT; ++k) {
                if (HIER) {
                    const int b0 = k * 9;
                    const unsigned long long m64 = ((unsigned long long)m.y << 32) | m.x;
                    const unsigned grp = b0 + 9 <= 64 ? (unsigned)(m64 >> b0) & 0x1ffu
                                                      : (b0 >= 64 ? (m.z >> (b0 - 64)) & 0x1ffu
                                                                  : ((unsigned)(m64 >> b0) | (m.z << (64 - b0))) & 0x1ffu);
                    if (grp == 0u) continue;
                }
#pragma unroll
                for (int tap = 0; tap < 9; ++tap) {
                    const int b = k * 9 + tap;
                    const unsigned mw = b < 32 ? m.x : (b < 64 ? m.y : m.z);
                    if (mw & (1u << (b & 31))) {
                        const float v = lds32(wa);
                        wa += 4u;
#pragma unroll
                        for (int jr = 0; jr < PH; ++jr)
#pragma unroll
                            for (int jc = 0; jc < PW; ++jc)
                                acc[k][jr * PW + jc] = fmaf(v, xp[jr + tap / 3][jc + tap % 3], acc[k][jr * PW + jc]);
                    }
                }
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < KT; ++k)
#pragma unroll
        for (int j = 0; j < PX; ++j) s += acc[k][j];
    out[blockIdx.x * 256 + threadIdx.x] = s;
}

/* Occupancy-sized grid (4 waves) of kernel k with `smem` dynamic bytes, its registers and blocks per SM. */
struct LaunchShape {
    int grid, regs, blocks_per_sm;
};
template <typename K>
LaunchShape launch_shape(K k, size_t smem, int sms) {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    cudaFuncAttributes fa;
    cudaFuncGetAttributes(&fa, k);
    int bps = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, k, 256, smem);
    return LaunchShape{sms * (bps > 0 ? bps : 1) * 4, fa.numRegs, bps};
}
/* Median of 7 CUDA-event timings (ms) of launch(reps), after one warm-up launch(1); exits on a CUDA error. */
template <typename F>
double median_ms(const char* name, int reps, F launch) {
    launch(1);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ts;
    for (int i = 0; i < 7; ++i) {
        cudaEventRecord(e0);
        launch(reps);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        ts.push_back(ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) { fprintf(stderr, "%s: %s\n", name, cudaGetErrorString(err)); exit(1); }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

template <int KT, int PH, int PW, int MINB, bool HIER>
Result run_mask(const char* name, double density, float* d_out, int sms, std::mt19937& rng) {
    const int n_ch = 256;
    std::vector<uint4> rec(n_ch);
    std::vector<float> w;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& r : rec) {
        r = make_uint4(0, 0, 0, (unsigned)w.size());
        for (int b = 0; b < KT * 9; ++b)
            if (u(rng) < density) {
                (b < 32 ? r.x : (b < 64 ? r.y : r.z)) |= 1u << (b & 31);
                w.push_back(1e-3f * (float)(rng() % 100));
            }
    }
    uint4* d_rec;
    float* d_w;
    cudaMalloc(&d_rec, n_ch * 16);
    cudaMalloc(&d_w, (w.size() + 1) * 4);
    cudaMemcpy(d_rec, rec.data(), n_ch * 16, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
    auto k = mask_kernel<KT, PH, PW, MINB, HIER>;
    const size_t smem = kPatchFloats * 4 + (size_t)n_ch * 16 + (w.size() + 1) * 4;
    const LaunchShape ls = launch_shape(k, smem, sms);
    const int reps = 8, n_w = (int)w.size();
    const double ms = median_ms(name, reps, [&](int r) { k<<<ls.grid, 256, smem>>>(d_rec, d_w, n_ch, n_w, r, d_out); });
    const double fmas = (double)ls.grid * 256 * reps * (double)w.size() * PH * PW;
    cudaFree(d_rec);
    cudaFree(d_w);
    const int npc_x10 = (int)(10.0 * (double)w.size() / n_ch + 0.5); /* nonzeros per channel x 10 */
    return Result{name, KT, PH, PW, MINB, npc_x10, ls.regs, ls.blocks_per_sm, ms * 1e3, 2 * fmas / (ms * 1e-3) / 1e12, 0};
}

template <int KT, int PH, int PW, int MINB, int MODE>
Result run_one(const char* name, const int2* d_ent, int n_ent, int npc, float* d_out, int sms) {
    auto k = probe_kernel<KT, PH, PW, MINB, MODE>;
    const size_t smem = kPatchFloats * 4 + (size_t)(n_ent + 2) * 8;
    const LaunchShape ls = launch_shape(k, smem, sms);
    const int reps = 8;
    const double ms = median_ms(name, reps, [&](int r) { k<<<ls.grid, 256, smem>>>(d_ent, n_ent, npc, r, d_out); });
    const double fmas = (double)ls.grid * 256 * reps * n_ent * PH * PW; /* one useful FMA per lane pixel per nonzero */
    return Result{name, KT, PH, PW, MINB, npc, ls.regs, ls.blocks_per_sm, ms * 1e3, 2 * fmas / (ms * 1e-3) / 1e12, 0};
}

int main(int argc, char** argv) {
    const char* json = nullptr;
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const int n_ent = 2048;
    std::mt19937 rng(7);
    float* d_out;
    cudaMalloc(&d_out, (size_t)sms * 8 * 4 * 256 * 4);
    std::vector<Result> res;
    for (int npc : {4, 8, 16}) {
        /* cases uniform over KT*9 (KT of the config), values small */
        auto mk = [&](int ncase) {
            std::vector<int2> h(n_ent);
            for (auto& e : h) {
                float v = 1e-3f * (float)(rng() % 100);
                std::memcpy(&e.x, &v, 4);
                e.y = (int)(rng() % ncase);
            }
            int2* d;
            cudaMalloc(&d, n_ent * 8);
            cudaMemcpy(d, h.data(), n_ent * 8, cudaMemcpyHostToDevice);
            return d;
        };
        int2* e36 = mk(36);
        int2* e72 = mk(72);
        int2* e144 = mk(144);
        res.push_back(run_one<1, 2, 4, 2, 2>("lds(smem kernel)", e36, n_ent, npc, d_out, sms));
        res.push_back(run_one<1, 2, 4, 3, 2>("lds(smem kernel)", e36, n_ent, npc, d_out, sms));
        res.push_back(run_one<4, 2, 4, 2, 0>("fixed", e36, n_ent, npc, d_out, sms));
        res.push_back(run_one<8, 4, 4, 1, 0>("fixed", e72, n_ent, npc, d_out, sms));
        res.push_back(run_one<4, 2, 4, 2, 1>("brx", e36, n_ent, npc, d_out, sms));
        res.push_back(run_one<4, 2, 4, 3, 1>("brx", e36, n_ent, npc, d_out, sms));
        res.push_back(run_one<8, 2, 4, 2, 1>("brx", e72, n_ent, npc, d_out, sms));
        res.push_back(run_one<8, 4, 4, 1, 1>("brx", e72, n_ent, npc, d_out, sms));
        res.push_back(run_one<16, 2, 4, 1, 1>("brx", e144, n_ent, npc, d_out, sms));
        res.push_back(run_one<4, 2, 4, 3, 3>("brx+prefetch", e36, n_ent, npc, d_out, sms));
        res.push_back(run_one<8, 2, 4, 2, 3>("brx+prefetch", e72, n_ent, npc, d_out, sms));
        res.push_back(run_one<8, 4, 4, 1, 3>("brx+prefetch", e72, n_ent, npc, d_out, sms));
        cudaFree(e36); cudaFree(e72); cudaFree(e144);
    }
    int clk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);
    for (double d : {0.1, 0.05}) { /* mask modes: npc column = nonzeros per channel x 10 */
        res.push_back(run_mask<4, 2, 4, 3, false>(d > 0.07 ? "mask d=0.10" : "mask d=0.05", d, d_out, sms, rng));
        res.push_back(run_mask<4, 4, 4, 2, false>(d > 0.07 ? "mask d=0.10" : "mask d=0.05", d, d_out, sms, rng));
        res.push_back(run_mask<8, 2, 4, 2, false>(d > 0.07 ? "mask d=0.10" : "mask d=0.05", d, d_out, sms, rng));
        res.push_back(run_mask<8, 4, 4, 1, false>(d > 0.07 ? "mask d=0.10" : "mask d=0.05", d, d_out, sms, rng));
        res.push_back(run_mask<8, 2, 4, 2, true>(d > 0.07 ? "mask+hier d=0.10" : "mask+hier d=0.05", d, d_out, sms, rng));
        res.push_back(run_mask<8, 4, 4, 1, true>(d > 0.07 ? "mask+hier d=0.10" : "mask+hier d=0.05", d, d_out, sms, rng));
    }
    printf("%s, %d SMs, clock %d kHz\n", prop.name, sms, clk);
    printf("%-18s %3s %5s %4s %4s %4s %5s %9s %8s\n", "mode", "KT", "PHxPW", "minB", "npc", "regs", "blk/SM", "us", "TFLOP/s");
    for (auto& r : res)
        printf("%-18s %3d %2dx%-2d %4d %4d %4d %5d %9.1f %8.2f\n", r.mode, r.kt, r.ph, r.pw, r.minb, r.npc, r.regs,
               r.blocks_per_sm, r.us, r.tflops);
    if (json) {
        FILE* f = fopen(json, "w");
        fprintf(f, "{\"device\": \"%s\", \"sms\": %d, \"results\": [\n", prop.name, sms);
        for (size_t i = 0; i < res.size(); ++i) {
            auto& r = res[i];
            fprintf(f, "  {\"mode\": \"%s\", \"kt\": %d, \"ph\": %d, \"pw\": %d, \"min_blocks\": %d, \"npc\": %d, \"regs\": %d, "
                       "\"blocks_per_sm\": %d, \"us\": %.2f, \"useful_tflops\": %.3f}%s\n",
                    r.mode, r.kt, r.ph, r.pw, r.minb, r.npc, r.regs, r.blocks_per_sm, r.us, r.tflops, i + 1 < res.size() ? "," : "");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return 0;
}
