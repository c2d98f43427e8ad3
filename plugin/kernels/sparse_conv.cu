/*
 * Host side of the kernel library: plan creation (validation of the canonical
 * CSR weights, re-layout per kernel variant, upload), variant choice (heuristic
 * or timed by tsc_plan_tune), enqueue, errors. C++14 host code.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "sparse_conv.h"
#include "tsc_bench.h"
#include "tsc_internal.h"
#if defined(TSC_HAS_TMA)
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled (the driver function is looked up at run time) */
#endif

namespace tsc {
static const TileCfgInfo kCfgTable[GEOM_COUNT][TILE_CFGS] =
#include "tile_dispatch.inc.table"
    ;
TileCfgInfo tile_cfg_info(int geom, int cfg) { return kCfgTable[geom][cfg]; }
}  // namespace tsc

namespace {

thread_local std::string g_last_error;

tsc_status fail(tsc_status st, const std::string& msg) {
    g_last_error = msg;
    return st;
}

tsc_status cuda_fail(cudaError_t e, const char* what) {
    return fail(TSC_ERR_CUDA, std::string(what) + ": " + cudaGetErrorString(e));
}

/* A kernel variant: generic, or a tile config with its split and lane shape. */
struct Variant {
    int kind;   /* 0 generic, 1 tile, 2 generic with 4 pixels per thread (NCHW), 3 smem (cfg = kSmemCfgs index),
                 * 4 register-reuse (cfg = tsc::reuse_cfg_info id), 5 tensor-core (cfg = tsc::mma_cfg_info id) */
    int cfg;
    int nsplit;
    int lw_log2;
    int vec;    /* 1: vector patch rows where the shape allows (tile kernel) */
};

struct TileLayout {
    int kt = 0;
    int groups = 0;
    int2* entries = nullptr; /* nnz + 1 (sentinel) */
    int* goff = nullptr;     /* groups + 1 */
    int* perm = nullptr;     /* groups * kt */
    size_t bytes = 0;        /* device bytes held (0 while not built) */
};

/* Shared-memory kernel configs: tile (tsc::smem_tile_info), output channels per warp slot, warps per slot. */
/* cl: blocks of a thread-block cluster splitting the input-channel chunks (sm_90+, small maps). h2: fp16 half2
 * layout (tiles 0-1: a lane's two pixels of a row in one staged word, HFMA2; fp16 NCHW, stride_w 1). */
struct SmemCfg { int tile, kw, ns, cl, h2; };
const SmemCfg kSmemCfgs[] = {{0, 4, 1, 1, 0}, {0, 2, 1, 1, 0}, {0, 1, 1, 1, 0}, {1, 2, 1, 1, 0}, {1, 1, 1, 1, 0},
                             {1, 1, 4, 1, 0}, {2, 2, 1, 1, 0}, {2, 1, 2, 1, 0}, {2, 1, 8, 1, 0},
                             {2, 1, 2, 8, 0}, {2, 1, 2, 4, 0}, {2, 2, 1, 8, 0}, {1, 1, 1, 8, 0}, {1, 2, 1, 4, 0},
                             {2, 2, 1, 2, 0}, {2, 2, 1, 4, 0},
                             {0, 2, 1, 1, 1}, {0, 4, 1, 1, 1}, {0, 1, 1, 1, 1}, {1, 2, 1, 1, 1}, {1, 1, 1, 1, 1},
                             {1, 1, 4, 1, 1}, {1, 1, 1, 8, 1}, {1, 2, 1, 4, 1}};
const int kSmemCfgCount = (int)(sizeof(kSmemCfgs) / sizeof(kSmemCfgs[0]));
const int kSmemSlots = 24; /* tsc_plan::slay entries */
static_assert(sizeof(kSmemCfgs) / sizeof(kSmemCfgs[0]) <= kSmemSlots, "tsc_plan::slay holds kSmemSlots smem layouts");
const int kSmemBudget = 48 * 1024; /* staging double buffer per block (no opt-in needed) */
const int kSmemMaxCC = 64;

struct SmemLayout {
    bool ok = false;
    int lead = 0, in_h = 0, pitch = 0, cstride = 0, cc = 0, groups = 0;
    int dense_chunks = 0; /* > 0: every group lists all of its chunks (SmemParams::dense_chunks) */
    int lcap = 0, lbuf_off = 0; /* smem kernel: staged list buffers (SmemParams::lcap / lbuf_off) */
    int bstride = 0, mbar_off = 0; /* smem kernel: input buffer stride (elements), mbarriers (SmemParams) */
    int h2_words = 0; /* half2 layout: staged words per row (pitch and cstride are then in 32-bit words) */
    size_t smem = 0;
    int2* entries = nullptr;
    int* seg = nullptr;
    int* gch_off = nullptr;
    int* chunk_ids = nullptr;
    int* perm = nullptr;
    size_t bytes = 0; /* device bytes held (0 while not built) */
};

/* Tensor-core layout: staging geometry and chunk lists in `s` (s.seg = per (listed chunk, group) first
 * k-step), plus the k-steps' A fragments and position offsets. */
struct MmaLayout {
    SmemLayout s;
    uint4* afrag = nullptr;
    unsigned* koff = nullptr;
};

/* Single-stage (burst) layout: per (group, cluster rank) one list of (value bits, byte offset) and per (group, rank,
 * warp, channel of the warp) its range; geometry from build_burst_layout. */
struct BurstLayout {
    bool ok = false;
    int BW = 0, IH = 0, Cc = 0, CB = 0, ncopies = 0, WC = 0, Kb = 0, groups = 0, cap = 0, in_bytes = 0;
    size_t smem = 0;
    int2* entries = nullptr;
    int* seg = nullptr;
    size_t bytes = 0;
};

struct Tuned {
    int N, H, W;
    Variant v;
};

}  // namespace

struct tsc_plan {
    tsc_conv_desc d;
    tsc_dtype dtype;
    tsc_layout layout;
    int nnz = 0;
    int geom = -1; /* tile geometry, -1 when only the generic kernel applies */
    int4* gentries = nullptr;
    int* growoff = nullptr;
    float* bias = nullptr;
    size_t base_bytes = 0; /* generic layout + bias */
    /* Per-variant layouts are built lazily (docs/PERFORMANCE.md, plan memory): create builds the generic
     * layout and those the heuristic can pick; tune / set_choice build the chosen ones and free the rest.
     * A layout's geometry (kt/groups, smem staging) is known from creation; its arrays only once built. */
    TileLayout lay[3]; /* kt = 8, 16, 32 (kt == 0: not available for this plan) */
    SmemLayout slay[kSmemSlots]; /* per kSmemCfgs entry (ok: available) */
    SmemLayout rlay[16]; /* per register-reuse config (tsc::REUSE_CFGS; ok: available) */
    MmaLayout mlay[tsc::MMA_CFGS]; /* per tensor-core config (fp16, or fp32 with TF32; sm_80+) */
    BurstLayout blay[tsc::BURST_CFGS]; /* per single-stage config (NCHW, stride_w 1, sm_90+) */
    bool burst = false;          /* the single-stage kernel can run (sm_90+ code, clusters); TRT_SPARSE_NO_BURST=1: off */
    int burst_stages = 4;        /* TMA stages per burst block (TRT_SPARSE_BURST_STAGES=1..8; 1: one wait for all) */
    bool pdl = false;            /* smem, tensor-core and burst kernels launched with programmatic dependent launch
                                  * (sm_90+ with cluster launch, CUDA 12+; TRT_SPARSE_PDL=1 at plan creation) */
    int smem_optin_full = 48 * 1024; /* the device's opt-in shared memory per block (burst layouts) */
    /* validated canonical CSR kept on the host to build layouts later */
    std::vector<int32_t> h_rowoff, h_idx;
    std::vector<float> h_val;
    int smem_optin = 48 * 1024;
    int sm_count = 1;
    bool clusters = false; /* device and build support thread-block clusters (sm_90+, CUDA 12+) */
    bool mma = false;      /* device is sm_80+ and the library holds the tensor-core kernels for it */
    bool tma = false;      /* smem kernels stage by TMA where the input allows (sm_90+, CUDA 12+ build and driver;
                            * TRT_SPARSE_NO_TMA=1 at plan creation turns it off) */
    bool tf32 = false;     /* fp32 plans may run TF32 tensor-core variants (tsc_plan_set_math; off by default) */
    bool mma_sorted = false; /* tensor-core k-steps in sorted position order, not mma_bank_order (A/B switch:
                              * TRT_SPARSE_MMA_SORTED=1 at plan creation) */
    int mma_cfg_limit = tsc::MMA_CFGS; /* tensor-core configs with ids >= this are left out of the candidates (A/B
                                        * switch: TRT_SPARSE_MMA_CFG_LIMIT=12 keeps the round-13 configs) */
    bool pair_stage = false; /* NCHW staging copies pairs of elements where W is even but not a multiple of 4 (sm_80+:
                              * cp.async; TRT_SPARSE_NO_PAIR_STAGE=1 at plan creation turns it off, A/B switch) */
    bool h2 = false; /* fp16 NCHW plans offer the half2 smem layouts (TRT_SPARSE_NO_H2=1 at plan creation turns them
                      * off, A/B switch) */
    bool mma_align8 = false; /* fp16 8-wide tensor-core tiles in 16-byte (TMA-able) units too (A/B switch:
                              * TRT_SPARSE_MMA_ALIGN8=1 at plan creation) */
    mutable std::mutex mu;  /* tuned */
    mutable std::mutex bmu; /* layout build / free */
    std::vector<Tuned> tuned;
};

namespace {

int lay_index(int kt) { return kt == 8 ? 0 : (kt == 16 ? 1 : 2); }

bool is_finite(float v) { return std::isfinite(v); }

tsc_status validate_desc(const tsc_conv_desc* d) {
    if (!d) return fail(TSC_ERR_INVALID_ARGUMENT, "desc is NULL");
    if (d->K < 1 || d->C < 1 || d->R < 1 || d->S < 1)
        return fail(TSC_ERR_INVALID_ARGUMENT, "weight_shape K, C, R, S must be >= 1");
    if (d->stride_h < 1 || d->stride_w < 1) return fail(TSC_ERR_INVALID_ARGUMENT, "strides must be >= 1");
    if (d->dilation_h < 1 || d->dilation_w < 1) return fail(TSC_ERR_INVALID_ARGUMENT, "dilations must be >= 1");
    if (d->pad_top < 0 || d->pad_left < 0 || d->pad_bottom < 0 || d->pad_right < 0)
        return fail(TSC_ERR_INVALID_ARGUMENT, "pads must be >= 0");
    if (d->activation < 0 || d->activation > 2)
        return fail(TSC_ERR_INVALID_ARGUMENT, "activation must be 0 (none), 1 (relu) or 2 (clip)");
    if (d->activation == 2 && (!is_finite(d->clip_min) || !is_finite(d->clip_max) || d->clip_min > d->clip_max))
        return fail(TSC_ERR_INVALID_ARGUMENT, "clip_min/clip_max must be finite with clip_min <= clip_max");
    if ((long long)d->C * d->R * d->S >= (1LL << 31)) return fail(TSC_ERR_OVERFLOW, "C*R*S does not fit int32");
    if ((long long)d->R * d->dilation_h >= (1LL << 30) || (long long)d->S * d->dilation_w >= (1LL << 30))
        return fail(TSC_ERR_OVERFLOW, "dilated kernel extent overflows int32");
    if (d->K > 65535) return fail(TSC_ERR_UNSUPPORTED, "K > 65535 output channels is not supported");
    return TSC_OK;
}

tsc_status validate_weights(const tsc_conv_desc* d, const tsc_weights* w) {
    if (!w) return fail(TSC_ERR_INVALID_ARGUMENT, "weights is NULL");
    if (!w->row_offsets) return fail(TSC_ERR_INVALID_ARGUMENT, "row_offsets is NULL");
    const long long crs = (long long)d->C * d->R * d->S;
    if (w->row_offsets[0] != 0) return fail(TSC_ERR_INVALID_ARGUMENT, "row_offsets[0] must be 0");
    for (int k = 0; k < d->K; ++k)
        if (w->row_offsets[k + 1] < w->row_offsets[k])
            return fail(TSC_ERR_INVALID_ARGUMENT, "row_offsets must be non-decreasing (at k=" + std::to_string(k) + ")");
    const int nnz = w->row_offsets[d->K];
    if (nnz > 0 && (!w->indices || !w->values))
        return fail(TSC_ERR_INVALID_ARGUMENT, "indices/values are NULL but nnz > 0");
    for (int k = 0; k < d->K; ++k) {
        for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i) {
            const int idx = w->indices[i];
            if (idx < 0 || idx >= crs)
                return fail(TSC_ERR_INVALID_ARGUMENT, "indices[" + std::to_string(i) + "] = " + std::to_string(idx) +
                                                          " out of range [0, C*R*S)");
            if (i > w->row_offsets[k] && idx <= w->indices[i - 1])
                return fail(TSC_ERR_INVALID_ARGUMENT,
                            "indices must be strictly increasing within output channel " + std::to_string(k));
            if (!is_finite(w->values[i]))
                return fail(TSC_ERR_INVALID_ARGUMENT, "values[" + std::to_string(i) + "] is not finite");
        }
    }
    if (w->bias)
        for (int k = 0; k < d->K; ++k)
            if (!is_finite(w->bias[k])) return fail(TSC_ERR_INVALID_ARGUMENT, "bias[" + std::to_string(k) + "] is not finite");
    return TSC_OK;
}

int tile_geom_of(const tsc_conv_desc* d, tsc_layout layout) {
    if (layout != TSC_NCHW || d->dilation_h != 1 || d->dilation_w != 1) return -1;
    if (d->stride_h != d->stride_w || d->stride_h > 2) return -1;
    if (d->C >= (1 << (31 - tsc::kCaseBits))) return -1;
    const bool s2 = d->stride_h == 2;
    if (d->R == 3 && d->S == 3) return s2 ? tsc::GEOM_3x3_S2 : tsc::GEOM_3x3_S1;
    if (d->R == 1 && d->S == 1) return s2 ? tsc::GEOM_1x1_S2 : tsc::GEOM_1x1_S1;
    return -1;
}

template <typename T>
tsc_status upload(T** dst, const void* src, size_t count, size_t* acc = nullptr) {
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    if (acc) *acc += bytes;
    cudaError_t e = cudaMalloc(reinterpret_cast<void**>(dst), bytes);
    if (e != cudaSuccess) {
        *dst = nullptr;
        if (e == cudaErrorMemoryAllocation) return fail(TSC_ERR_OUT_OF_MEMORY, "cudaMalloc failed");
        return cuda_fail(e, "cudaMalloc");
    }
    if (count) {
        e = cudaMemcpy(*dst, src, count * sizeof(T), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cuda_fail(e, "cudaMemcpy");
    } else {
        e = cudaMemset(*dst, 0, bytes);
        if (e != cudaSuccess) return cuda_fail(e, "cudaMemset");
    }
    return TSC_OK;
}

/* Output channels sorted by nnz and dealt snake-wise to U slots of `per` channels each (perm[u * per + i],
 * -1 where empty), so every slot (one warp's channel set) carries a similar number of nonzeros. */
std::vector<int> deal_channels(const tsc_weights* w, int K, int U, int per) {
    std::vector<int> order(K);
    for (int k = 0; k < K; ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return (w->row_offsets[a + 1] - w->row_offsets[a]) > (w->row_offsets[b + 1] - w->row_offsets[b]);
    });
    std::vector<int> perm((size_t)U * per, -1);
    std::vector<int> fill(U, 0);
    for (int i = 0; i < K; ++i) {
        const int round = i / U, pos = i % U;
        const int u = (round & 1) ? (U - 1 - pos) : pos;
        perm[(size_t)u * per + fill[u]++] = order[i];
    }
    return perm;
}

/* Output channels dealt to groups of kt slots (deal_channels). */
tsc_status build_tile_layout(tsc_plan* p, const tsc_weights* w, int kt, TileLayout* out) {
    const tsc_conv_desc& d = p->d;
    const int K = d.K, RS = d.R * d.S;
    const int G = (K + kt - 1) / kt;
    const std::vector<int> perm = deal_channels(w, K, G, kt);
    std::vector<int2> entries;
    entries.reserve((size_t)p->nnz + 1);
    std::vector<int> goff(G + 1, 0);
    std::vector<std::pair<long long, int2>> tmp;
    for (int g = 0; g < G; ++g) {
        tmp.clear();
        for (int kl = 0; kl < kt; ++kl) {
            const int k = perm[(size_t)g * kt + kl];
            if (k < 0) continue;
            for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i) {
                const int idx = w->indices[i];
                const int c = idx / RS, rs = idx % RS;
                const int cs = kl * RS + rs;
                int2 e;
                std::memcpy(&e.x, &w->values[i], 4);
                e.y = (c << tsc::kCaseBits) | cs;
                tmp.push_back(std::make_pair(((long long)c << tsc::kCaseBits) | cs, e));
            }
        }
        std::stable_sort(tmp.begin(), tmp.end(),
                         [](const std::pair<long long, int2>& a, const std::pair<long long, int2>& b) { return a.first < b.first; });
        for (size_t i = 0; i < tmp.size(); ++i) entries.push_back(tmp[i].second);
        goff[g + 1] = (int)entries.size();
    }
    int2 sentinel;
    sentinel.x = 0;
    sentinel.y = 0;
    entries.push_back(sentinel);
    out->kt = kt;
    out->groups = G;
    tsc_status st;
    out->bytes = 0;
    if ((st = upload(&out->entries, entries.data(), entries.size(), &out->bytes)) != TSC_OK) return st;
    if ((st = upload(&out->goff, goff.data(), goff.size(), &out->bytes)) != TSC_OK) return st;
    if ((st = upload(&out->perm, perm.data(), perm.size(), &out->bytes)) != TSC_OK) return st;
    return TSC_OK;
}

/* Append list items [b, e) of (key, value bits) pairs as kernel entries (value bits, key). */
void append_entries(const std::vector<std::pair<int, int> >& L, size_t b, size_t e, std::vector<int2>* entries) {
    for (size_t t = b; t < e; ++t) {
        int2 en;
        en.x = L[t].second;
        en.y = L[t].first;
        entries->push_back(en);
    }
}

/* Upload the arrays of a staged (smem / reuse) layout; out->bytes counts what it holds. */
tsc_status upload_staged(SmemLayout* out, const std::vector<int2>& entries, const std::vector<int>& seg,
                         const std::vector<int>& gch_off, const std::vector<int>& chunk_ids,
                         const std::vector<int>& perm) {
    tsc_status st;
    out->bytes = 0;
    if ((st = upload(&out->entries, entries.data(), entries.size(), &out->bytes)) != TSC_OK) return st;
    if ((st = upload(&out->seg, seg.data(), seg.size(), &out->bytes)) != TSC_OK) return st;
    if ((st = upload(&out->gch_off, gch_off.data(), gch_off.size(), &out->bytes)) != TSC_OK) return st;
    if ((st = upload(&out->chunk_ids, chunk_ids.data(), chunk_ids.size(), &out->bytes)) != TSC_OK) return st;
    if ((st = upload(&out->perm, perm.data(), perm.size(), &out->bytes)) != TSC_OK) return st;
    return TSC_OK;
}

/* Staged-chunk geometry of a TH x TW output tile (zero-padded tile + halo; `lead` extra columns on the left
 * so that 4-element vector copies are aligned; pitch a multiple of 4) for the smem and mma kernels, with the
 * chunk size cc that fits the double buffer (capped at C / (2 cl) with a cluster of cl blocks, so that every
 * block double-buffers). False when it does not fit (staging keeps one column unit per thread: pitch <= 256). */
struct StagedGeom {
    int lead, in_h, pitch, cstride, cc;
};
/* Channel stride (elements) of a staged chunk: in_h * pitch, made odd for NHWC plans (their staging writes the
 * channels of one pixel from consecutive threads: an odd stride puts them on distinct banks). */
long long chunk_cstride(long long in_h, long long pitch, bool nhwc) {
    const long long cs = in_h * pitch;
    return nhwc ? (cs | 1LL) : cs;
}

/* The chunk size of a staged geometry (channels whose double buffer of `cstride` units of `ub` bytes fits `budget`,
 * at most max_cc, capped at C / (2 cl) with a cluster of cl blocks) and the geometry's fields; false when the row
 * pitch exceeds one column unit per thread (256) or not one channel fits. */
bool fill_staged_geom(const tsc_conv_desc& d, int cl, int lead, long long in_h, long long pitch, long long cstride,
                      int ub, int budget, int max_cc, StagedGeom* g) {
    if (pitch > 256 || cstride * ub * 2 > budget) return false;
    int cc = (int)std::min<long long>(std::min(d.C, max_cc), budget / (2 * cstride * ub));
    if (cl > 1) cc = std::min(cc, std::max(1, d.C / (2 * cl)));
    if (cc < 1) return false;
    g->lead = lead;
    g->in_h = (int)in_h;
    g->pitch = (int)pitch;
    g->cstride = (int)cstride;
    g->cc = cc;
    return true;
}

bool staged_geometry(const tsc_conv_desc& d, int TH, int TW, int es, int cl, StagedGeom* g, int align = 4,
                     bool nhwc = false, int budget = kSmemBudget, int max_cc = kSmemMaxCC) {
    /* align (elements): lead and pitch are multiples of it -- 4 (16-byte fp32 / 8-byte fp16 vector copies) or 8
     * for fp16 layouts whose TMA boxes must start 16-byte aligned (tensor-core layouts) */
    const long long in_h = (long long)(TH - 1) * d.stride_h + (long long)(d.R - 1) * d.dilation_h + 1;
    const long long in_w = (long long)(TW - 1) * d.stride_w + (long long)(d.S - 1) * d.dilation_w + 1;
    const int lead = ((-d.pad_left) % align + align) % align;
    const long long pitch = (lead + in_w + align - 1) / align * align;
    return fill_staged_geom(d, cl, lead, in_h, pitch, chunk_cstride(in_h, pitch, nhwc), es, budget, max_cc, g);
}

/* Largest number of distinct 4-byte words one shared-memory bank serves in one LDS of the smem kernel (lw lanes
 * along the width sw elements apart, 32 / lw lane rows sh staged rows apart; every element shift for fp16). */
int smem_bank_degree(int lw, int sh, int sw, int es, long long pitch) {
    int worst = 0;
    for (int shift = 0; shift < 4 / es; ++shift) {
        long long word[32];
        for (int l = 0; l < 32; ++l) word[l] = (((long long)(l / lw) * sh * pitch + (long long)(l % lw) * sw + shift) * es) / 4;
        for (int bank = 0; bank < 32; ++bank) {
            int distinct = 0;
            for (int l = 0; l < 32; ++l) {
                if (word[l] % 32 != bank) continue;
                bool seen = false;
                for (int m = 0; m < l && !seen; ++m) seen = word[m] == word[l];
                distinct += seen ? 0 : 1;
            }
            worst = std::max(worst, distinct);
        }
    }
    return worst;
}

/* Row pitch (elements, a multiple of 4) of the smem kernel's staged chunk: the smallest pitch >= the geometry's
 * whose lane rows fall on distinct banks (fewest conflicts), growing the staged chunk by at most half. */
long long smem_pitch(const tsc_conv_desc& d, int lw, int es, long long pitch0) {
    long long best = pitch0;
    int best_deg = smem_bank_degree(lw, d.stride_h, d.stride_w, es, pitch0);
    for (long long pitch = pitch0 + 4; pitch <= pitch0 + 28 && 2 * pitch <= 3 * pitch0 && pitch <= 256; pitch += 4) {
        const int deg = smem_bank_degree(lw, d.stride_h, d.stride_w, es, pitch);
        if (deg < best_deg) { best = pitch; best_deg = deg; }
    }
    return best;
}

uint32_t float_to_half_bits(float v); /* below: IEEE fp16 bits, round to nearest even */

/* Half2 staged-chunk geometry (smem configs with h2; fp16 NCHW, stride_w 1, tiles with 2 pixels per lane along the
 * width): word j of a staged row holds columns j and j + lw, so a row needs lead + in_w - lw words; the pitch (words,
 * a multiple of 4) is the one in [pitch0, 2 pitch0] whose lane rows of one LDS fall on the fewest bank conflicts.
 * False when the geometry does not fit. */
bool h2_geometry(const tsc_conv_desc& d, int lw, int TH, int TW, int cl, StagedGeom* g, int* words) {
    const long long in_h = (long long)(TH - 1) * d.stride_h + (long long)(d.R - 1) * d.dilation_h + 1;
    const long long in_w = (long long)(TW - 1) + (long long)(d.S - 1) * d.dilation_w + 1;
    const int lead = ((-d.pad_left) % 4 + 4) % 4;
    const long long nw = lead + in_w - lw;
    if (nw < 1) return false;
    const long long pitch0 = (nw + 3) / 4 * 4;
    long long pitch = pitch0;
    int best = smem_bank_degree(lw, d.stride_h, 1, 4, pitch0);
    for (long long q = pitch0 + 4; q <= 2 * pitch0 && q <= 256 && best > 1; q += 4) {
        const int deg = smem_bank_degree(lw, d.stride_h, 1, 4, q);
        if (deg < best) { best = deg; pitch = q; }
    }
    if (!fill_staged_geom(d, cl, lead, in_h, pitch, in_h * pitch, 4, kSmemBudget, kSmemMaxCC, g)) return false;
    *words = (int)nw;
    return true;
}

/* Half2 layouts hold the weights as fp16: every value must be finite in fp16 (|w| < 65504), and near-dense weights
 * (> 60% nonzeros: fp16 partial sums of up to 16 products over many terms) are left to the fp32-accumulating
 * variants, as for the half2 reuse kernel. */
bool h2_weights_ok(const tsc_plan* p, const tsc_weights* w) {
    const tsc_conv_desc& d = p->d;
    if ((double)p->nnz > 0.6 * (double)d.K * d.C * d.R * d.S) return false;
    for (int i = 0; i < p->nnz; ++i)
        if (!(std::fabs(w->values[i]) < 65504.0f)) return false;
    return true;
}

/* Shared-memory kernel layout for config `ci`: staged-chunk geometry, output channels dealt to warp
 * slots (sorted by nnz, snake order), and per (group, non-empty chunk, warp, channel of the slot) lists
 * of (value, byte offset in the staged chunk); a slot's lists are split evenly over its ns warps. */
tsc_status build_smem_layout(tsc_plan* p, const tsc_weights* w, int ci, SmemLayout* out, bool build) {
    const tsc_conv_desc& d = p->d;
    const SmemCfg cfg = kSmemCfgs[ci];
    const int es = p->dtype == TSC_FLOAT16 ? 2 : 4;
    const int TH = tsc::smem_tile_h(cfg.tile), TW = tsc::smem_tile_w(cfg.tile);
    StagedGeom sg;
    const bool nhwc = p->layout == TSC_NHWC;
    const tsc::SmemTileInfo ti = tsc::smem_tile_info(cfg.tile);
    int h2_words = 0;
    if (cfg.h2) {
        if (!p->h2 || es != 2 || nhwc || d.stride_w != 1 || ti.pxw != 2 || !h2_weights_ok(p, w) ||
            !h2_geometry(d, ti.lw, TH, TW, cfg.cl, &sg, &h2_words))
            return TSC_OK; /* not available */
    } else if (!staged_geometry(d, TH, TW, es, cfg.cl, &sg, 4, nhwc)) {
        return TSC_OK; /* not available for this geometry */
    }
    const int ub = cfg.h2 ? 4 : es; /* bytes per staged unit (half2 word or element) */
    const int lead = sg.lead;
    const long long in_h = sg.in_h, pitch = cfg.h2 ? sg.pitch : smem_pitch(d, ti.lw, es, sg.pitch),
                    cstride = cfg.h2 ? sg.cstride : chunk_cstride(in_h, pitch, nhwc);
    const int slots = 8 / cfg.ns, cpb = slots * cfg.kw;
    const int K = d.K, C = d.C, RS = d.R * d.S;
    const int G = (K + cpb - 1) / cpb;
    if (G > 65535) return TSC_OK;
    /* output channels: sorted by nnz, snake-dealt to the G * slots warp slots (kw channels each) */
    const std::vector<int> perm = deal_channels(w, K, G * slots, cfg.kw);
    /* chunk size: the double-buffered input tile and the block's list of a chunk (8-byte entries) fit the budget */
    std::vector<int> cnt((size_t)G * C, 0); /* nonzeros of group g's channels in input channel c */
    for (size_t u = 0; u < perm.size(); ++u) {
        const int k = perm[u];
        if (k < 0) continue;
        const size_t g = u / (size_t)cpb;
        for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i) ++cnt[g * C + w->indices[i] / RS];
    }
    auto list_cap = [&](int cch) -> long long { /* longest block list of one chunk of cch channels */
        long long worst = 0;
        for (int g = 0; g < G; ++g)
            for (int c0 = 0; c0 < C; c0 += cch) {
                long long sum = 0;
                for (int c = c0; c < std::min(C, c0 + cch); ++c) sum += cnt[(size_t)g * C + c];
                worst = std::max(worst, sum);
            }
        return worst;
    };
    /* two input buffers, each a multiple of 128 bytes (TMA box destinations); lists of lcap entries, lcap even and
     * two spare (TMA copies a list widened to even entry bounds); 16 bytes of mbarriers */
    auto buf_bytes = [&](int cch) -> long long { return ((long long)cch * cstride * ub + 127) / 128 * 128; };
    auto in_bytes = [&](int cch) -> long long { return 2 * buf_bytes(cch); };
    auto cap_of = [&](int cch) -> long long { return (list_cap(cch) + 2 + 1) / 2 * 2; };
    const long long budget = kSmemBudget - 16;
    int cc = (int)std::min<long long>(sg.cc, kSmemBudget / (2 * cstride * ub));
    long long lcap = cc >= 1 ? cap_of(cc) : 0;
    while (cc > 1 && in_bytes(cc) + 16 * lcap > budget) {
        const int next = (int)std::max<long long>(1, std::min<long long>(cc - 1, (long long)cc * budget / (in_bytes(cc) + 16 * lcap)));
        cc = next;
        lcap = cap_of(cc);
    }
    if (cc < 1 || in_bytes(cc) + 16 * lcap > budget) return TSC_OK; /* not available */
    const int nch = (d.C + cc - 1) / cc;
    {
        const size_t red = (cfg.ns > 1 || cfg.cl > 1) ? (size_t)8 * cfg.kw * ti.pxh * ti.pxw * 32 * sizeof(float) : 0;
        out->lead = lead;
        out->in_h = (int)in_h;
        out->pitch = (int)pitch;
        out->cstride = (int)cstride;
        out->cc = cc;
        out->groups = G;
        out->lcap = (int)lcap;
        out->lbuf_off = (int)in_bytes(cc);
        out->bstride = (int)(buf_bytes(cc) / es); /* in elements (halves for half2 layouts) */
        out->h2_words = h2_words;
        out->mbar_off = (int)((std::max<size_t>((size_t)in_bytes(cc) + (size_t)16 * out->lcap, red) + 15) / 16 * 16);
        out->smem = (size_t)out->mbar_off + 16;
        out->ok = out->smem <= (size_t)kSmemBudget;
    }
    if (!build || !out->ok) return TSC_OK; /* geometry only */
    std::vector<int2> entries;
    entries.reserve((size_t)p->nnz);
    std::vector<int> seg, gch_off(1, 0), chunk_ids;
    /* per group: lists[(chunk * slots + slot) * kw + kl] */
    std::vector<std::vector<std::pair<int, int> > > lists((size_t)nch * slots * cfg.kw);
    for (int g = 0; g < G; ++g) {
        for (size_t i = 0; i < lists.size(); ++i) lists[i].clear();
        for (int slot = 0; slot < slots; ++slot)
            for (int kl = 0; kl < cfg.kw; ++kl) {
                const int k = perm[(size_t)g * cpb + slot * cfg.kw + kl];
                if (k < 0) continue;
                for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i) {
                    const int idx = w->indices[i];
                    const int c = idx / RS, r = (idx % RS) / d.S, sc = idx % d.S;
                    const int ch = c / cc, cl = c % cc;
                    const long long off = ((long long)cl * cstride + (long long)r * d.dilation_h * pitch +
                                           (long long)sc * d.dilation_w) * ub;
                    int vbits;
                    if (cfg.h2) { /* half2(w, w) */
                        const uint32_t hb = float_to_half_bits(w->values[i]);
                        vbits = (int)(hb | (hb << 16));
                    } else {
                        std::memcpy(&vbits, &w->values[i], 4);
                    }
                    lists[((size_t)ch * slots + slot) * cfg.kw + kl].push_back(std::make_pair((int)off, vbits));
                }
            }
        for (int ch = 0; ch < nch; ++ch) {
            bool any = false;
            for (int q = 0; q < slots * cfg.kw && !any; ++q) any = !lists[(size_t)ch * slots * cfg.kw + q].empty();
            if (!any) continue;
            chunk_ids.push_back(ch);
            for (int wp = 0; wp < 8; ++wp) {
                const int slot = wp / cfg.ns, sp = wp % cfg.ns;
                for (int kl = 0; kl < cfg.kw; ++kl) {
                    std::vector<std::pair<int, int> >& L = lists[((size_t)ch * slots + slot) * cfg.kw + kl];
                    std::sort(L.begin(), L.end());
                    seg.push_back((int)entries.size());
                    append_entries(L, L.size() * sp / cfg.ns, L.size() * (sp + 1) / cfg.ns, &entries);
                }
            }
        }
        gch_off.push_back((int)chunk_ids.size());
    }
    seg.push_back((int)entries.size());
    entries.push_back(make_int2(0, 0)); /* spare entries: a TMA list copy reads up to the next even index */
    entries.push_back(make_int2(0, 0));
    out->dense_chunks = (long long)chunk_ids.size() == (long long)G * nch ? nch : 0; /* every group lists all */
    return upload_staged(out, entries, seg, gch_off, chunk_ids, perm);
}

/* Launch parameters of a staged-input kernel (smem or reuse) with output tile TH x TW, ns warps per slot and
 * cl blocks per cluster; false if the shape overflows the kernel's index types. narrow: stage only the columns the
 * tile reads (the smem kernel, whose pitch may be wider for its banks), else whole pitches. */
bool staged_params(const tsc_plan* p, const SmemLayout& L, int TH, int TW, int ns, int cl, int N, int H, int W, int P,
                   int Q, const void* x, void* y, tsc::SmemParams* sp, bool narrow = false) {
    const long long tiles = (long long)((P + TH - 1) / TH) * ((Q + TW - 1) / TW);
    if (ns < 1 || ns > 8 || (ns & (ns - 1)) || cl < 1 || (cl & (cl - 1))) return false; /* kernels shift by them */
    if (tiles * cl >= (1LL << 31) || (long long)H * W >= (1LL << 31) || (long long)P * Q >= (1LL << 31)) return false;
    const int es = p->dtype == TSC_FLOAT16 ? 2 : 4;
    *sp = tsc::SmemParams();
    sp->x = x;
    sp->y = y;
    sp->entries = L.entries;
    sp->seg = L.seg;
    sp->gch_off = L.gch_off;
    sp->chunk_ids = L.chunk_ids;
    sp->perm = L.perm;
    sp->bias = p->bias;
    sp->N = N; sp->C = p->d.C; sp->H = H; sp->W = W; sp->K = p->d.K; sp->P = P; sp->Q = Q;
    sp->sh = p->d.stride_h; sp->sw = p->d.stride_w;
    sp->pad_top = p->d.pad_top; sp->pad_left = p->d.pad_left;
    sp->lead = L.lead;
    sp->in_h = L.in_h; sp->pitch = L.pitch; sp->cstride = L.cstride; sp->cc = L.cc;
    sp->tiles_h = (P + TH - 1) / TH;
    sp->tiles_w = (Q + TW - 1) / TW;
    sp->groups = L.groups;
    sp->ns = ns;
    sp->cl = cl;
    sp->nhwc = p->layout == TSC_NHWC ? 1 : 0; /* element-wise staging, channel-last stores */
    /* staging copy unit: 4 elements where W and the input allow, else pairs (even W; asynchronous 4- / 8-byte copies
     * on sm_80+, half the copies of element-wise staging), else single elements. Tiles start at columns that are
     * multiples of 4 (lead + pad_left aligned, TW a multiple of 4), so an aligned unit never straddles a row end. */
    const uintptr_t xa = reinterpret_cast<uintptr_t>(x);
    sp->vec = 1;
    if (!sp->nhwc && (W % 4) == 0 && xa % (uintptr_t)(4 * es) == 0) sp->vec = 4;
    else if (!sp->nhwc && p->pair_stage && (W % 2) == 0 && xa % (uintptr_t)(2 * es) == 0) sp->vec = 2;
    sp->act = p->d.activation;
    sp->clip_min = p->d.clip_min;
    sp->clip_max = p->d.clip_max;
    sp->dense_chunks = L.dense_chunks;
    sp->lcap = L.lcap;
    sp->lbuf_off = L.lbuf_off;
    sp->bstride = L.bstride > 0 ? L.bstride : L.cc * L.cstride;
    sp->tma = 0; /* set by launch_variant where the TMA path applies */
    sp->mbar_off = L.mbar_off;
    if (L.pitch % 4 != 0 || (p->d.pad_left + L.lead) % 4 != 0 || TW % 4 != 0) sp->vec = 1; /* (layouts keep them aligned) */
    if (L.h2_words > 0 && sp->vec == 2) sp->vec = 1; /* half2 staging: 4-word units or single words */
    sp->st_nv = L.pitch / sp->vec;
    if (L.h2_words > 0) { /* half2 layout: the row's words, in copy units */
        sp->st_nv = (L.h2_words + sp->vec - 1) / sp->vec;
    } else if (narrow) { /* lead + the tile's input columns, in copy units */
        const long long cols = L.lead + (long long)(TW - 1) * p->d.stride_w + (long long)(p->d.S - 1) * p->d.dilation_w + 1;
        sp->st_nv = (int)std::min<long long>(sp->st_nv, (cols + sp->vec - 1) / sp->vec);
    }
    if (sp->st_nv < 1 || sp->st_nv > 256 || L.in_h < 1) return false; /* layouts keep pitch <= 256 */
    if (sp->nhwc) { /* cc threads per staged pixel, 256 / cc pixels per pass */
        if (L.cc < 1 || L.cc > 256) return false;
        const int ps = 256 / L.cc;
        sp->nh_ps_r = ps / sp->st_nv;
        sp->nh_ps_c = ps % sp->st_nv;
    } else {
        sp->nh_ps_r = sp->nh_ps_c = 0;
    }
    sp->st_step = 256 / sp->st_nv;
    sp->st_step_c = sp->st_step / L.in_h;
    sp->st_step_r = sp->st_step % L.in_h;
    sp->tw_magic = tsc::udiv_magic(sp->tiles_w, tiles * cl); /* tile index < tiles (x blocks / cl) */
    sp->nv_magic = tsc::udiv_magic(sp->st_nv, 256);          /* threadIdx.x < 256 */
    sp->inh_magic = tsc::udiv_magic(L.in_h, 256);            /* row0 <= 255 */
    return true;
}

/* Launch parameters of a smem variant; false if it cannot run this shape. */
bool smem_params(const tsc_plan* p, const Variant& v, int N, int H, int W, int P, int Q, const void* x, void* y,
                 tsc::SmemParams* sp) {
    if (v.cfg < 0 || v.cfg >= kSmemCfgCount) return false; /* NCHW and NHWC */
    const SmemLayout& L = p->slay[v.cfg];
    if (!L.ok) return false; /* geometry not supported (availability, not whether the arrays are built) */
    const SmemCfg cfg = kSmemCfgs[v.cfg];
    if (cfg.cl > 1 && !p->clusters) return false;
    return staged_params(p, L, tsc::smem_tile_h(cfg.tile), tsc::smem_tile_w(cfg.tile), cfg.ns, cfg.cl, N, H, W, P, Q,
                         x, y, sp, true);
}

/* TF32 value of v as fp32 bits (10-bit mantissa, round to nearest with ties away from zero, as the device's
 * cvt.rna.tf32.f32; values are finite, validated). */
uint32_t float_to_tf32_bits(float v) {
    uint32_t f;
    std::memcpy(&f, &v, 4);
    return (f + 0x1000u) & 0xFFFFE000u; /* may round up into the next binade or to inf: as the device does */
}

/* IEEE fp16 bits of v, round to nearest even (host side; values are finite, validated). */
uint32_t float_to_half_bits(float v) {
    uint32_t f;
    std::memcpy(&f, &v, 4);
    const uint32_t sign = (f >> 16) & 0x8000u;
    const int exp = (int)((f >> 23) & 0xFF) - 127 + 15;
    uint32_t man = f & 0x7FFFFFu;
    if (exp >= 31) return sign | 0x7C00u; /* overflow -> inf (as the kernels' __float2half_rn) */
    if (exp <= 0) {                       /* subnormal or zero */
        if (exp < -10) return sign;
        man |= 0x800000u;
        const int shift = 14 - exp;
        uint32_t h = man >> shift;
        const uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return sign | h;
    }
    uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
    const uint32_t rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h; /* may carry into the exponent: correct */
    return sign | h;
}

/* Register-reuse layout for config `ci` (tsc::reuse_cfg_info): staged-chunk geometry like the smem kernel
 * (zero-padded tile + halo, lead columns for aligned vector copies), output channels dealt to warp slots
 * (sorted by nnz, snake order), and per (group, non-empty chunk, warp, input channel of the chunk) a list
 * of (value, case = kl*R*S + r*S + s); with NS > 1 the chunk's input channels alternate over the slot's NS
 * warps. fp16 plans store the value as half2 (v, v) bits for the half2 kernel. */
tsc_status build_reuse_layout(tsc_plan* p, const tsc_weights* w, int ci, SmemLayout* out, bool build) {
    const tsc_conv_desc& d = p->d;
    const tsc::ReuseCfgInfo cfg = tsc::reuse_cfg_info(ci);
    out->ok = false;
    if (p->layout != TSC_NCHW || d.R != cfg.r || d.S != cfg.s || d.stride_h != cfg.st || d.stride_w != cfg.st ||
        d.dilation_h != 1 || d.dilation_w != 1)
        return TSC_OK;
    const bool f16 = p->dtype == TSC_FLOAT16;
    if (f16 && !cfg.f16) return TSC_OK;
    /* half2 sums up to 16 input channels' products in fp16: on near-dense weights (up to 144 terms per partial
     * sum) that measured 2.3e-3 norm-relative error (0% sparsity, C = 33), over the 2e-3 fp16 tolerance; keep it
     * to layers with at most 60% nonzeros (the deep-reduction test bounds 50% and 90% sparsity) */
    if (f16 && (double)p->nnz > 0.6 * (double)d.K * d.C * d.R * d.S) return TSC_OK;
    const int es = f16 ? 2 : 4;
    const int TH = (32 / cfg.lw) * cfg.ph, TW = cfg.lw * cfg.pw;
    const long long in_h = (long long)(TH - 1) * d.stride_h + d.R;
    const long long in_w = (long long)(TW - 1) * d.stride_w + d.S;
    const int lead = ((-d.pad_left) % 4 + 4) % 4;
    const long long pitch = (lead + in_w + 3) / 4 * 4;
    const long long cstride = in_h * pitch;
    if (pitch > 256 || cstride * es * 2 > kSmemBudget) return TSC_OK;
    const int cc_cap = f16 ? 16 : 63; /* half2 accumulates at most cc input channels in fp16; cc + 1 <= 64 lanes */
    const int cc = (int)std::min<long long>(std::min(d.C, cc_cap), kSmemBudget / (2 * cstride * es));
    if (cc < 1) return TSC_OK;
    const int slots = 8 / cfg.ns, cpb = slots * cfg.kt;
    const int K = d.K, RS = d.R * d.S;
    const int G = (K + cpb - 1) / cpb;
    if (G > 65535) return TSC_OK;
    const int nch = (d.C + cc - 1) / cc;
    const int PX = cfg.ph * cfg.pw;
    const size_t red = cfg.ns > 1 ? (size_t)8 * cfg.kt * PX * 32 * sizeof(float) : 0;
    /* list offsets: up to G x chunks x 8 warps x cc ints; keep the layout <= 64 MB of them */
    if ((long long)G * nch * 8 * cc >= (16LL << 20)) return TSC_OK;
    out->lead = lead;
    out->in_h = (int)in_h;
    out->pitch = (int)pitch;
    out->cstride = (int)cstride;
    out->cc = cc;
    out->groups = G;
    out->smem = std::max<size_t>((size_t)2 * cc * cstride * es, red);
    out->ok = out->smem <= (size_t)p->smem_optin;
    if (!build || !out->ok) return TSC_OK; /* geometry only */
    const std::vector<int> perm = deal_channels(w, K, G * slots, cfg.kt);
    std::vector<int2> entries;
    entries.reserve((size_t)p->nnz + 1);
    std::vector<int> seg, gch_off(1, 0), chunk_ids;
    /* per group: lists[slot * C + c] of (case, value bits) */
    std::vector<std::vector<std::pair<int, int> > > lists((size_t)slots * d.C);
    for (int g = 0; g < G; ++g) {
        for (size_t i = 0; i < lists.size(); ++i) lists[i].clear();
        for (int slot = 0; slot < slots; ++slot)
            for (int kl = 0; kl < cfg.kt; ++kl) {
                const int k = perm[(size_t)g * cpb + slot * cfg.kt + kl];
                if (k < 0) continue;
                for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i) {
                    const int idx = w->indices[i];
                    const int c = idx / RS, rs = idx % RS;
                    int vbits;
                    if (f16) {
                        const uint32_t h = float_to_half_bits(w->values[i]);
                        vbits = (int)(h | (h << 16));
                    } else {
                        std::memcpy(&vbits, &w->values[i], 4);
                    }
                    lists[(size_t)slot * d.C + c].push_back(std::make_pair(kl * RS + rs, vbits));
                }
            }
        for (int ch = 0; ch < nch; ++ch) {
            const int c0 = ch * cc, c1 = std::min(d.C, c0 + cc);
            bool any = false;
            for (int slot = 0; slot < slots && !any; ++slot)
                for (int c = c0; c < c1 && !any; ++c) any = !lists[(size_t)slot * d.C + c].empty();
            if (!any) continue;
            chunk_ids.push_back(ch);
            for (int wp = 0; wp < 8; ++wp) {
                const int slot = wp / cfg.ns, sp = wp % cfg.ns;
                for (int cl = 0; cl < cc; ++cl) {
                    seg.push_back((int)entries.size());
                    const int c = c0 + cl;
                    if (c >= c1 || cl % cfg.ns != sp) continue;
                    std::vector<std::pair<int, int> >& L = lists[(size_t)slot * d.C + c];
                    std::sort(L.begin(), L.end());
                    append_entries(L, 0, L.size(), &entries);
                }
            }
        }
        gch_off.push_back((int)chunk_ids.size());
    }
    seg.push_back((int)entries.size());
    int2 sentinel;
    sentinel.x = 0;
    sentinel.y = 0;
    entries.resize(entries.size() + 64, sentinel); /* the kernel reads up to 64 entries ahead */
    return upload_staged(out, entries, seg, gch_off, chunk_ids, perm);
}

/* Launch parameters of a register-reuse variant; false if it cannot run this shape. */
bool reuse_params(const tsc_plan* p, const Variant& v, int N, int H, int W, int P, int Q, const void* x, void* y,
                  tsc::SmemParams* sp) {
    if (p->layout != TSC_NCHW || v.cfg < 0 || v.cfg >= tsc::REUSE_CFGS) return false;
    const SmemLayout& L = p->rlay[v.cfg];
    if (!L.ok) return false;
    const tsc::ReuseCfgInfo cfg = tsc::reuse_cfg_info(v.cfg);
    return staged_params(p, L, (32 / cfg.lw) * cfg.ph, cfg.lw * cfg.pw, cfg.ns, 1, N, H, W, P, Q, x, y, sp);
}

/* Bank-aware order of one (block group, chunk, group) union of positions for the tensor-core gather.
 * A k-step's B fragment is read by `loads` shared-memory loads (fp16: 4, TF32: 2); load q of lane (g, tg) reads
 * pixel g (g * step bytes past the n-tile's first pixel, step = stride_w * element size) of the position in slot
 * kslot(q, tg) of the k-step, so each load reads 8 pixels of 4 positions. Taking positions in sorted order made
 * 1.6-1.7 wavefronts per load (Nsight Compute, round 12: 41% of the shared-memory wavefronts were bank
 * conflicts): here each load's 4 positions are picked greedily so that no two of them read different words of one
 * bank (scan of at most 64 unused candidates in sorted order; else the fewest conflicting words). Returns the
 * position index of every slot (k-step * ks + k), -2 - j for a padding slot that repeats position j of the same
 * load (the same words: a broadcast, no extra wavefront), -1 for a slot of an empty load. `sorted`: the layout
 * before round 12 (positions in sorted order, padding at element 0; A/B runs). */
std::vector<int> mma_bank_order(const std::vector<int>& offs, int step, bool f16, bool sorted) {
    const int ks = f16 ? 16 : 8, loads = f16 ? 4 : 2;
    const int n = (int)offs.size();
    const int nk = (n + ks - 1) / ks;
    std::vector<int> slot((size_t)nk * ks, -1);
    if (sorted) {
        for (int i = 0; i < n; ++i) slot[(size_t)i] = i;
        return slot;
    }
    std::vector<char> used((size_t)n, 0);
    int first = 0; /* lowest unused position */
    auto kslot = [&](int q, int tg) { return f16 ? (q & 1) + 2 * tg + (q >> 1) * 8 : tg + 4 * q; };
    for (int k = 0; k < nk; ++k) {
        for (int q = 0; q < loads; ++q) {
            int bank_word[32];
            for (int b = 0; b < 32; ++b) bank_word[b] = -1;
            int lead_pos = -1;
            for (int tg = 0; tg < 4; ++tg) {
                while (first < n && used[first]) ++first;
                int& dst = slot[(size_t)k * ks + kslot(q, tg)];
                if (first >= n) { dst = lead_pos >= 0 ? -2 - lead_pos : -1; continue; }
                int best = -1, best_c = 1 << 30, scanned = 0;
                for (int j = first; j < n && scanned < 64; ++j) {
                    if (used[j]) continue;
                    ++scanned;
                    int c = 0;
                    for (int g = 0; g < 8; ++g) {
                        const int wd = (offs[j] + g * step) >> 2, bw = bank_word[wd & 31];
                        c += bw >= 0 && bw != wd;
                    }
                    if (c < best_c) { best = j; best_c = c; if (c == 0) break; }
                }
                used[best] = 1;
                for (int g = 0; g < 8; ++g) {
                    const int wd = (offs[best] + g * step) >> 2;
                    if (bank_word[wd & 31] < 0) bank_word[wd & 31] = wd;
                }
                dst = best;
                if (lead_pos < 0) lead_pos = best;
            }
        }
    }
    return slot;
}

/* Tensor-core layout for config `ci` (tsc::mma_cfg_info): staged-chunk geometry like the smem kernel; output
 * channels in natural order, 16 per group (vector-sparse masks of consecutive channels stay aligned), WG
 * groups per block; per (block group, non-empty chunk, group) the union of the 16 channels' positions in
 * the chunk in k-steps of 16, ordered for conflict-free gathers (mma_bank_order; the last padded with zero
 * weights): the A fragment of each lane (fp16, m16n8k16 layout: row = channel, column = position) and the
 * positions' byte offsets. */
tsc_status build_mma_layout(tsc_plan* p, const tsc_weights* w, int ci, MmaLayout* out, bool build) {
    const tsc_conv_desc& d = p->d;
    const tsc::MmaCfgInfo cfg = tsc::mma_cfg_info(ci);
    SmemLayout& L = out->s;
    L.ok = false;
    if (!p->mma) return TSC_OK; /* fp32 plans run it only with TF32 allowed */
    const bool f16 = p->dtype == TSC_FLOAT16;
    const int es = f16 ? 2 : 4;
    const int KS = f16 ? 16 : 8;     /* positions per k-step: m16n8k16 (fp16) / m16n8k8 (TF32) */
    const int KWORDS = f16 ? 8 : 4;  /* offset words per k-step (two 16-bit offsets each) */
    StagedGeom sg;
    /* fp16 tiles >= 16 wide: lead and pitch in 8-element (16-byte) units so that TMA boxes start 16-byte aligned
     * (1.05-1.25x on maps TMA can stage, same-process A/B). 8-wide tiles keep 4-element units: their pitch would
     * grow 16 -> 24 and the 8x8 configs measured 1.1-1.5x slower with it, TMA or not (h200_round10 runs). */
    /* staging budget: 48 KB (no opt-in), or the config's larger one (96 KB: up to 128-channel chunks) where the
     * device's opt-in allows it */
    const int budget = cfg.sb * 1024;
    if (budget > kSmemBudget && budget + 16 > p->smem_optin) return TSC_OK; /* not available on this device */
    const int align = f16 && (cfg.tw >= 16 || p->mma_align8) ? 8 : 4;
    if (!staged_geometry(d, cfg.th, cfg.tw, es, cfg.cl, &sg, align, p->layout == TSC_NHWC, budget,
                         budget > kSmemBudget ? 2 * kSmemMaxCC : kSmemMaxCC))
        return TSC_OK; /* not available */
    const int lead = sg.lead;
    const long long in_h = sg.in_h, pitch = sg.pitch, cstride = sg.cstride;
    const size_t red = (cfg.ws > 1 || cfg.cl > 1) ? (size_t)8 * cfg.nt * 4 * 32 * sizeof(float) : 0;
    /* shared memory of chunk size c: two input buffers of a multiple of 128 bytes each (TMA box destinations),
     * 16 bytes of mbarriers past them (or past the split reduction buffer) */
    auto buf_bytes = [&](int c) { return ((size_t)c * cstride * es + 127) / 128 * 128; };
    auto smem_bytes = [&](int c) { return (std::max<size_t>(2 * buf_bytes(c), red) + 15) / 16 * 16 + 16; };
    /* staged_geometry sized the chunk for the bare buffers: shrink it until the rounding and the mbarriers fit too
     * (round 10's first runs dropped every config whose buffers filled the budget, e.g. 8x8 tiles at stride 2) */
    int cc = sg.cc;
    while (cc > 1 && (smem_bytes(cc) > (size_t)budget || (long long)cc * cstride * es >= 65536)) --cc;
    const int cpb = 16 * cfg.wg;
    const int K = d.K, RS = d.R * d.S;
    const int G = (K + cpb - 1) / cpb;
    if (G > 65535) return TSC_OK;
    const int nch = (d.C + cc - 1) / cc;
    L.lead = lead;
    L.in_h = (int)in_h;
    L.pitch = (int)pitch;
    L.cstride = (int)cstride;
    L.cc = cc;
    L.groups = G;
    L.bstride = (int)(buf_bytes(cc) / es);
    L.smem = smem_bytes(cc);
    L.mbar_off = (int)(L.smem - 16); /* the mbarriers are the last 16 bytes */
    L.ok = L.smem <= (size_t)budget && (long long)cc * cstride * es < 65536; /* 16-bit offsets */
    if (budget > kSmemBudget && L.ok) { /* a larger budget is only worth a variant where it gives larger chunks */
        StagedGeom sg48;
        L.ok = !staged_geometry(d, cfg.th, cfg.tw, es, cfg.cl, &sg48, align, p->layout == TSC_NHWC) || sg48.cc < cc;
    }
    if (!build || !L.ok) return TSC_OK; /* geometry only */
    std::vector<uint32_t> afrag, koff;
    std::vector<int> kseg, gch_off(1, 0), chunk_ids;
    /* per group of the block: (position, channel of the group, fp16 bits) sorted by position */
    std::vector<std::vector<std::pair<int, std::pair<int, uint32_t> > > > lists(cfg.wg);
    std::vector<size_t> cur(cfg.wg);
    long long nks = 0;
    for (int bg = 0; bg < G; ++bg) {
        for (int wg = 0; wg < cfg.wg; ++wg) {
            lists[wg].clear();
            cur[wg] = 0;
            for (int i = 0; i < 16; ++i) {
                const int k = bg * cpb + wg * 16 + i;
                if (k >= K) break;
                for (int t = w->row_offsets[k]; t < w->row_offsets[k + 1]; ++t)
                    lists[wg].push_back(std::make_pair(w->indices[t], std::make_pair(i, f16 ? float_to_half_bits(w->values[t]) : float_to_tf32_bits(w->values[t]))));
            }
            std::sort(lists[wg].begin(), lists[wg].end());
        }
        for (int ch = 0; ch < nch; ++ch) {
            const int pend = std::min(d.C, (ch + 1) * cc) * RS; /* positions of this chunk end here */
            bool any = false;
            for (int wg = 0; wg < cfg.wg && !any; ++wg) any = cur[wg] < lists[wg].size() && lists[wg][cur[wg]].first < pend;
            if (!any) continue;
            chunk_ids.push_back(ch);
            for (int wg = 0; wg < cfg.wg; ++wg) {
                kseg.push_back((int)nks);
                std::vector<std::pair<int, std::pair<int, uint32_t> > >& V = lists[wg];
                size_t t = cur[wg];
                /* the chunk's union of positions: byte offset in the staged chunk, first entry of V */
                std::vector<int> poffs, pbeg;
                while (t < V.size() && V[t].first < pend) {
                    const int idx = V[t].first;
                    if (pbeg.empty() || V[pbeg.back()].first != idx) {
                        const int c = idx / RS, r = (idx % RS) / d.S, sc = idx % d.S;
                        poffs.push_back((int)(((long long)(c - ch * cc) * cstride + (long long)r * d.dilation_h * pitch +
                                               (long long)sc * d.dilation_w) * es));
                        pbeg.push_back((int)t);
                    }
                    ++t;
                }
                pbeg.push_back((int)t);
                cur[wg] = t;
                const std::vector<int> slot = mma_bank_order(poffs, d.stride_w * es, f16, p->mma_sorted);
                for (size_t k0 = 0; k0 < slot.size(); k0 += KS) { /* one k-step */
                    uint32_t wm[16][16]; /* [channel of the group][position of the k-step]: fp16 / TF32 bits */
                    int offs[16];
                    std::memset(wm, 0, sizeof(wm));
                    for (int u = 0; u < KS; ++u) {
                        const int pi = slot[k0 + u];
                        if (pi >= 0) {
                            offs[u] = poffs[pi];
                            for (int e = pbeg[pi]; e < pbeg[pi + 1]; ++e) wm[V[e].second.first][u] = V[e].second.second;
                        } else { /* padding: weight 0 at a position its load reads anyway (or element 0) */
                            offs[u] = pi <= -2 ? poffs[-2 - pi] : 0;
                        }
                    }
                    for (int lane = 0; lane < 32; ++lane) {
                        const int gr = lane >> 2, tg = lane & 3;
                        if (f16) { /* m16n8k16 A: (gr, 2tg..2tg+1), (gr+8, ..), (gr, 2tg+8..), (gr+8, 2tg+8..) */
                            afrag.push_back(wm[gr][2 * tg] | (wm[gr][2 * tg + 1] << 16));
                            afrag.push_back(wm[gr + 8][2 * tg] | (wm[gr + 8][2 * tg + 1] << 16));
                            afrag.push_back(wm[gr][2 * tg + 8] | (wm[gr][2 * tg + 9] << 16));
                            afrag.push_back(wm[gr + 8][2 * tg + 8] | (wm[gr + 8][2 * tg + 9] << 16));
                        } else { /* m16n8k8 TF32 A: (gr, tg), (gr+8, tg), (gr, tg+4), (gr+8, tg+4) */
                            afrag.push_back(wm[gr][tg]);
                            afrag.push_back(wm[gr + 8][tg]);
                            afrag.push_back(wm[gr][tg + 4]);
                            afrag.push_back(wm[gr + 8][tg + 4]);
                        }
                    }
                    for (int q = 0; q < KWORDS; ++q) { /* fp16: positions (2q, 2q+1) / (2(q-4)+8, +9); TF32: (q, q+4) */
                        const int u0 = f16 ? (q < 4 ? 2 * q : 2 * (q - 4) + 8) : q;
                        const int u1 = f16 ? u0 + 1 : q + 4;
                        koff.push_back((uint32_t)offs[u0] | ((uint32_t)offs[u1] << 16));
                    }
                    ++nks;
                    if (nks >= (1LL << 24)) return fail(TSC_ERR_OVERFLOW, "tensor-core layout too large");
                }
            }
        }
        gch_off.push_back((int)chunk_ids.size());
    }
    kseg.push_back((int)nks);
    afrag.resize(afrag.size() + 32 * 4, 0u); /* a zero k-step past the end: the kernel loads one k-step ahead */
    koff.resize(koff.size() + KWORDS, 0u);
    L.dense_chunks = (long long)chunk_ids.size() == (long long)G * nch ? nch : 0;
    tsc_status st;
    L.bytes = 0;
    if ((st = upload(&L.seg, kseg.data(), kseg.size(), &L.bytes)) != TSC_OK) return st;
    if ((st = upload(&L.gch_off, gch_off.data(), gch_off.size(), &L.bytes)) != TSC_OK) return st;
    if ((st = upload(&L.chunk_ids, chunk_ids.data(), chunk_ids.size(), &L.bytes)) != TSC_OK) return st;
    if ((st = upload(&out->afrag, afrag.data(), afrag.size() / 4, &L.bytes)) != TSC_OK) return st;
    if ((st = upload(&out->koff, koff.data(), koff.size(), &L.bytes)) != TSC_OK) return st;
    return TSC_OK;
}

/* Launch parameters of a tensor-core variant; false if it cannot run this shape. */
bool mma_params(const tsc_plan* p, const Variant& v, int N, int H, int W, int P, int Q, const void* x, void* y,
                tsc::MmaParams* mp) {
    if (v.cfg < 0 || v.cfg >= p->mma_cfg_limit) return false; /* NCHW and NHWC; the limit is <= tsc::MMA_CFGS */
    const MmaLayout& M = p->mlay[v.cfg];
    if (!M.s.ok || (p->dtype == TSC_FLOAT32 && !p->tf32)) return false; /* TF32 only where allowed */
    const tsc::MmaCfgInfo cfg = tsc::mma_cfg_info(v.cfg);
    if (cfg.cl > 1 && !p->clusters) return false;
    if (!staged_params(p, M.s, cfg.th, cfg.tw, 1, cfg.cl, N, H, W, P, Q, x, y, &mp->s)) return false;
    mp->afrag = M.afrag;
    mp->koff = M.koff;
    mp->kseg = M.s.seg;
    mp->cpb = 16 * cfg.wg;
    return true;
}

void free_plan(tsc_plan* p) {
    if (!p) return;
    cudaFree(p->gentries);
    cudaFree(p->growoff);
    cudaFree(p->bias);
    for (int i = 0; i < 3; ++i) {
        cudaFree(p->lay[i].entries);
        cudaFree(p->lay[i].goff);
        cudaFree(p->lay[i].perm);
    }
    for (int i = 0; i < tsc::MMA_CFGS; ++i) {
        cudaFree(p->mlay[i].afrag);
        cudaFree(p->mlay[i].koff);
    }
    for (int i = 0; i < tsc::BURST_CFGS; ++i) {
        cudaFree(p->blay[i].entries);
        cudaFree(p->blay[i].seg);
    }
    for (int i = 0; i < kSmemSlots + 16 + tsc::MMA_CFGS; ++i) {
        SmemLayout& L = i < kSmemSlots ? p->slay[i]
                                       : (i < kSmemSlots + 16 ? p->rlay[i - kSmemSlots] : p->mlay[i - kSmemSlots - 16].s);
        cudaFree(L.entries);
        cudaFree(L.seg);
        cudaFree(L.gch_off);
        cudaFree(L.chunk_ids);
        cudaFree(L.perm);
    }
    delete p;
}

tsc_status out_dims(const tsc_conv_desc* d, int H, int W, int* P, int* Q) {
    if (H < 1 || W < 1) return fail(TSC_ERR_INVALID_ARGUMENT, "input H and W must be >= 1");
    const long long ph = (long long)H + d->pad_top + d->pad_bottom - (long long)d->dilation_h * (d->R - 1) - 1;
    const long long pw = (long long)W + d->pad_left + d->pad_right - (long long)d->dilation_w * (d->S - 1) - 1;
    if (ph < 0 || pw < 0) return fail(TSC_ERR_INVALID_ARGUMENT, "output would be empty (kernel larger than padded input)");
    const long long p = ph / d->stride_h + 1, q = pw / d->stride_w + 1;
    if (p >= (1LL << 31) || q >= (1LL << 31)) return fail(TSC_ERR_OVERFLOW, "output size overflows int32");
    *P = (int)p;
    *Q = (int)q;
    return TSC_OK;
}

int ilog2_ceil(int v) {
    int l = 0;
    while ((1 << l) < v) ++l;
    return l;
}

/* Vector patch rows: 3x3 stride 1, 4 pixels per lane, pad_left 1, W % 4 == 0, 16-byte aligned input. */
bool vec_eligible(const tsc_plan* p, int W, const void* x) {
    return p->geom == tsc::GEOM_3x3_S1 && p->d.pad_left == 1 && (W % 4) == 0 &&
           (reinterpret_cast<uintptr_t>(x) % 16) == 0;
}

/* Tile launch parameters for a variant; false if it cannot run this shape. */
bool tile_params(const tsc_plan* p, const Variant& v, int N, int H, int W, int P, int Q, const void* x, void* y,
                 tsc::TileParams* tp) {
    const tsc::TileCfgInfo ci = tsc::tile_cfg_info(p->geom, v.cfg);
    const TileLayout& L = p->lay[lay_index(ci.kt)];
    if (L.kt == 0 || v.lw_log2 < 0 || v.lw_log2 > 5 || v.nsplit < 1 || v.nsplit > 8) return false;
    if ((long long)tsc::tile_smem_bytes(p->geom, v.cfg, v.nsplit) > p->smem_optin) return false;
    const int lw = 1 << v.lw_log2, lh = 32 >> v.lw_log2;
    tp->x = x;
    tp->y = y;
    tp->entries = L.entries;
    tp->group_off = L.goff;
    tp->perm = L.perm;
    tp->bias = p->bias;
    tp->N = N; tp->C = p->d.C; tp->H = H; tp->W = W; tp->K = p->d.K; tp->P = P; tp->Q = Q;
    tp->pad_top = p->d.pad_top;
    tp->pad_left = p->d.pad_left;
    tp->lw_log2 = v.lw_log2;
    tp->tiles_w = (Q + lw * ci.pw - 1) / (lw * ci.pw);
    tp->tiles_h = (P + lh * ci.ph - 1) / (lh * ci.ph);
    tp->nsplit = v.nsplit;
    tp->vec = (v.vec && vec_eligible(p, W, x)) ? 1 : 0;
    tp->act = p->d.activation;
    tp->clip_min = p->d.clip_min;
    tp->clip_max = p->d.clip_max;
    if ((long long)tp->tiles_w * tp->tiles_h * N >= (1LL << 31) || L.groups > 65535) return false;
    if ((long long)H * W >= (1LL << 31)) return false;
    return true;
}

int default_lw(const tsc_plan* p, int cfg, int Q) {
    const tsc::TileCfgInfo ci = tsc::tile_cfg_info(p->geom, cfg);
    return std::min(5, ilog2_ceil((Q + ci.pw - 1) / ci.pw));
}

/* ---- single-stage (burst) kernel: geometry, layout, launch parameters ---- */

/* Staged row pitch (elements, a multiple of 16 bytes, >= min_w, <= 256) with the fewest shared-memory bank conflicts
 * for the kernel's lanes (row lr * row_step, columns lc + j * lw), or 0. */
int burst_pitch(int min_w, int lw, int pc, int row_step, int es) {
    const int al = 16 / es;
    int best = 0, best_deg = 1 << 30;
    for (int bw = (min_w + al - 1) / al * al; bw <= 256 && bw <= (min_w + al - 1) / al * al + 64; bw += al) {
        int deg = 1;
        for (int j = 0; j < pc; ++j) {
            int words[32][32];
            int nw[32] = {0};
            for (int lane = 0; lane < 32; ++lane) {
                const int e = (lane / lw) * row_step * bw + lane % lw + j * lw;
                const int word = e * es / 4, bank = word % 32;
                bool seen = false;
                for (int q = 0; q < nw[bank]; ++q) seen = seen || words[bank][q] == word;
                if (!seen) words[bank][nw[bank]++] = word;
                deg = std::max(deg, nw[bank]);
            }
        }
        if (deg < best_deg) { best_deg = deg; best = bw; }
    }
    return best;
}

/* Geometry of burst config ci (out->ok where it can run this plan) and, with build, its device layout. */
tsc_status build_burst_layout(tsc_plan* p, const tsc_weights* w, int ci, BurstLayout* out, bool build) {
    const tsc_conv_desc& d = p->d;
    const tsc::BurstCfgInfo cfg = tsc::burst_cfg_info(ci);
    out->ok = false;
    if (!p->burst || p->layout != TSC_NCHW || d.stride_w != 1 || (cfg.cl > 1 && !p->clusters)) return TSC_OK;
    const int es = p->dtype == TSC_FLOAT16 ? 2 : 4;
    const int TH = 32 / cfg.lw, TW = cfg.lw * cfg.pc, WC = 8 / cfg.wk, Kb = cfg.wk * cfg.kpw;
    const long long IH = (long long)(TH - 1) * d.stride_h + (long long)(d.R - 1) * d.dilation_h + 1;
    const long long IW = (long long)TW + (long long)(d.S - 1) * d.dilation_w + (16 / es - 1); /* + lead columns */
    if (IH > 256 || IW > 256) return TSC_OK;
    const int BW = burst_pitch((int)IW, cfg.lw, cfg.pc, d.stride_h, es);
    if (BW == 0) return TSC_OK;
    const int CL = cfg.cl, Cc = (d.C + CL - 1) / CL;
    if ((long long)Cc * (CL - 1) >= d.C) return TSC_OK; /* a cluster rank without input channels */
    /* TMA stages: ncopies boxes of CB channels, each on its own mbarrier (the loop starts on the first channels while
     * the others arrive); at most 8, a box holds at most 256 channels, and every box starts 128-byte aligned in
     * shared memory (the tensor copy's requirement): CB is a multiple of 128 / gcd(channel bytes, 128) */
    const long long chan = IH * BW;
    long long align = 128;
    while (align > 1 && (chan * es) % align != 0) align /= 2;
    const int cb_unit = (int)(128 / align);
    int ncopies = std::min(8, std::max((Cc + 255) / 256, std::min(p->burst_stages, Cc)));
    const int CB = ((Cc + ncopies - 1) / ncopies + cb_unit - 1) / cb_unit * cb_unit;
    ncopies = (Cc + CB - 1) / CB;
    if (CB > 256 || ncopies > 8) return TSC_OK;
    long long in_bytes = ((long long)ncopies * CB * chan * es + 127) / 128 * 128;
    if (WC > 1 || CL > 1) in_bytes = std::max(in_bytes, ((long long)WC * Kb * TH * TW * 4 + 127) / 128 * 128);
    const int G = (d.K + Kb - 1) / Kb;
    if ((long long)G * CL > 65535) return TSC_OK;
    /* entries per (group, rank) list */
    const int RS = d.R * d.S;
    std::vector<int> cnt((size_t)G * CL, 0);
    for (int k = 0; k < d.K; ++k)
        for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i)
            ++cnt[(size_t)(k / Kb) * CL + (w->indices[i] / RS) / Cc];
    int cap = 2;
    for (size_t i = 0; i < cnt.size(); ++i) cap = std::max(cap, cnt[i]);
    cap = (cap + 1) / 2 * 2; /* a list is a multiple of 16 bytes (bulk copy) */
    const long long smem = in_bytes + (long long)cap * 8 + 8 * 8; /* + one mbarrier per stage */
    const long long tx = (long long)ncopies * CB * chan * es + (long long)cap * 8; /* mbarrier tx count < 2^20 */
    if (smem > p->smem_optin_full || tx >= (1LL << 20)) return TSC_OK;
    out->BW = BW; out->IH = (int)IH; out->Cc = Cc; out->CB = CB; out->ncopies = ncopies; out->WC = WC; out->Kb = Kb;
    out->groups = G; out->cap = cap; out->in_bytes = (int)in_bytes; out->smem = (size_t)smem;
    out->ok = true;
    if (!build) return TSC_OK;
    std::vector<int2> entries((size_t)G * CL * cap, make_int2(0, 0));
    const int NS = ncopies + 1;
    std::vector<int> seg((size_t)G * CL * 8 * cfg.kpw * NS, 0);
    const int wsl = (Cc + WC - 1) / WC;
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < CL; ++r) {
            const size_t bl = (size_t)g * CL + r;
            int n = 0;
            const int c0 = r * Cc;
            for (int warp = 0; warp < 8; ++warp) {
                const int kg = warp % cfg.wk, cs = warp / cfg.wk;
                const int ca = c0 + cs * wsl, cz = std::min(std::min(c0 + Cc, d.C), c0 + (cs + 1) * wsl);
                for (int kk = 0; kk < cfg.kpw; ++kk) {
                    const int k = g * Kb + kg * cfg.kpw + kk;
                    int* sg = &seg[((bl * 8 + warp) * cfg.kpw + kk) * NS];
                    /* one pass over the row: its indices increase, so its channels (and their TMA boxes,
                     * stage (c - c0) / CB) do too; sg[s] = start of stage s's nonzeros, sg[ncopies] = the end */
                    int stage = 0;
                    sg[0] = n;
                    if (k < d.K)
                        for (int i = w->row_offsets[k]; i < w->row_offsets[k + 1]; ++i) {
                            const int idx = w->indices[i], c = idx / RS, rr = (idx % RS) / d.S, ss = idx % d.S;
                            if (c < ca || c >= cz) continue;
                            while (stage < (c - c0) / CB) sg[++stage] = n;
                            int2 e;
                            std::memcpy(&e.x, &w->values[i], 4);
                            e.y = (int)((((long long)(c - c0) * IH + (long long)rr * d.dilation_h) * BW +
                                         (long long)ss * d.dilation_w) * es);
                            entries[bl * cap + n++] = e;
                        }
                    while (stage < ncopies) sg[++stage] = n;
                }
            }
        }
    tsc_status st;
    if ((st = upload(&out->entries, entries.data(), entries.size(), &out->bytes)) != TSC_OK) return st;
    return upload(&out->seg, seg.data(), seg.size(), &out->bytes);
}

/* Shared memory of a burst launch staging by one bulk copy (use_tma 2) for an input H x W: the layout's plus the span
 * from the first staged row of the block's first channel to the last staged row of its last one (the inner channels
 * whole), widened to 16-byte bounds; 0 where over the opt-in limit. */
size_t burst_span_smem(const tsc_plan* p, const BurstLayout& L, int H, int W) {
    const long long es = p->dtype == TSC_FLOAT16 ? 2 : 4;
    const long long span = (((long long)(L.Cc - 1) * H + std::min<long long>(L.IH, H)) * W * es + 30 + 15) / 16 * 16;
    const long long smem = (long long)L.smem + span;
    const long long tx = span + (long long)L.cap * 8; /* mbarrier tx count < 2^20 */
    if (H <= 0 || W <= 0 || smem > p->smem_optin_full || tx >= (1LL << 20)) return 0;
    return (size_t)smem;
}

/* Launch parameters of burst variant v for this shape; false where it cannot run it. */
bool burst_params(const tsc_plan* p, const Variant& v, int N, int H, int W, int P, int Q, const void* x, void* y,
                  tsc::BurstParams* bp, int* grid_x, int* grid_y) {
    if (v.cfg < 0 || v.cfg >= tsc::BURST_CFGS || N > 65535) return false;
    const BurstLayout& L = p->blay[v.cfg];
    if (!L.ok) return false;
    const tsc::BurstCfgInfo cfg = tsc::burst_cfg_info(v.cfg);
    const int TH = 32 / cfg.lw, TW = cfg.lw * cfg.pc;
    const long long tiles = (long long)((P + TH - 1) / TH) * ((Q + TW - 1) / TW);
    if (tiles >= (1LL << 31)) return false;
    bp->x = x; bp->y = y; bp->entries = L.entries; bp->seg = L.seg; bp->bias = p->bias;
    bp->N = N; bp->C = p->d.C; bp->H = H; bp->W = W; bp->K = p->d.K; bp->P = P; bp->Q = Q;
    bp->pad_t = p->d.pad_top; bp->pad_l = p->d.pad_left; bp->sh = p->d.stride_h;
    bp->BW = L.BW; bp->IH = L.IH; bp->Cc = L.Cc; bp->CB = L.CB; bp->ncopies = L.ncopies;
    bp->CL = cfg.cl; bp->Kb = L.Kb; bp->WK = cfg.wk; bp->WC = L.WC; bp->tiles_x = (Q + TW - 1) / TW;
    bp->ent_cap = L.cap; bp->in_bytes = L.in_bytes;
    bp->act = p->d.activation; bp->clip_min = p->d.clip_min; bp->clip_max = p->d.clip_max;
    bp->use_tma = 0;
    bp->raw_off = (int)L.smem;
    *grid_x = (int)tiles;
    *grid_y = L.groups * cfg.cl;
    return true;
}

/* Heuristic variant (without tsc_plan_tune), from the H200 sweeps (docs/PERFORMANCE.md, bench/results/
 * h200_smem_*.json). Convolutions (NCHW or NHWC) wider than 1x1 with >= 150K outputs (N x K x P x Q) run the
 * shared-memory kernel: 16x16 tiles x 2 channels per warp for large maps (P, Q >= 28 and >= 800K outputs),
 * 8x8 tiles x 2 channels per warp otherwise while C <= 256 (its input staging grows with C). Else: below
 * ~400K outputs the one-output-per-thread generic kernel, above it the 4-pixels-per-thread one (NCHW only). */
Variant heuristic_variant(const tsc_plan* p, int N, int H, int W, int P, int Q) {
    Variant v = {0, 0, 1, 0, 0};
    const long long outs = (long long)N * P * Q * p->d.K;
    if (p->d.R * p->d.S > 1 && outs >= 150000LL) {
        const int cfg = (P >= 28 && Q >= 28 && outs >= 800000LL) ? 3 : (p->d.C <= 256 ? 6 : -1);
        Variant sv = {3, cfg, 1, 0, 0};
        tsc::SmemParams sp;
        if (cfg >= 0 && smem_params(p, sv, N, H, W, P, Q, nullptr, nullptr, &sp)) return sv;
    }
    if (outs >= 400000LL && p->layout == TSC_NCHW) v.kind = 2; /* generic4 is NCHW only */
    return v;
}

/* ---- lazy layouts: a key per device layout (generic, tile kt 8/16/32, smem cfg) ---- */
const int kKeyGeneric = 0, kKeyTile0 = 1, kKeySmem0 = 4, kKeyReuse0 = 4 + kSmemSlots, kKeyMma0 = kKeyReuse0 + 16,
          kKeyBurst0 = kKeyMma0 + tsc::MMA_CFGS, kKeyCount = kKeyBurst0 + tsc::BURST_CFGS;

int layout_key(const tsc_plan* p, const Variant& v) {
    if (v.kind == 1) return kKeyTile0 + lay_index(tsc::tile_cfg_info(p->geom, v.cfg).kt);
    if (v.kind == 3) return kKeySmem0 + v.cfg;
    if (v.kind == 4) return kKeyReuse0 + v.cfg;
    if (v.kind == 5) return kKeyMma0 + v.cfg;
    if (v.kind == 6) return kKeyBurst0 + v.cfg;
    return kKeyGeneric;
}

bool key_built(const tsc_plan* p, int key) {
    if (key == kKeyGeneric) return p->gentries != nullptr;
    if (key < kKeySmem0) return p->lay[key - kKeyTile0].entries != nullptr;
    if (key < kKeyReuse0) return p->slay[key - kKeySmem0].entries != nullptr;
    if (key < kKeyMma0) return p->rlay[key - kKeyReuse0].entries != nullptr;
    if (key >= kKeyBurst0) return p->blay[key - kKeyBurst0].entries != nullptr;
    return p->mlay[key - kKeyMma0].afrag != nullptr;
}

/* Free a layout's arrays (never the generic one); its geometry stays. Caller holds bmu. */
void free_key_locked(tsc_plan* p, int key) {
    if (key == kKeyGeneric) return;
    if (key >= kKeyBurst0) {
        BurstLayout& B = p->blay[key - kKeyBurst0];
        cudaFree(B.entries); cudaFree(B.seg);
        B.entries = nullptr; B.seg = nullptr;
        B.bytes = 0;
        return;
    }
    if (key < kKeySmem0) {
        TileLayout& L = p->lay[key - kKeyTile0];
        cudaFree(L.entries); cudaFree(L.goff); cudaFree(L.perm);
        L.entries = nullptr; L.goff = nullptr; L.perm = nullptr;
        L.bytes = 0;
    } else {
        if (key >= kKeyMma0) {
            MmaLayout& M = p->mlay[key - kKeyMma0];
            cudaFree(M.afrag); cudaFree(M.koff);
            M.afrag = nullptr; M.koff = nullptr;
        }
        SmemLayout& L = key < kKeyReuse0 ? p->slay[key - kKeySmem0]
                                         : (key < kKeyMma0 ? p->rlay[key - kKeyReuse0] : p->mlay[key - kKeyMma0].s);
        cudaFree(L.entries); cudaFree(L.seg); cudaFree(L.gch_off); cudaFree(L.chunk_ids); cudaFree(L.perm);
        L.entries = nullptr; L.seg = nullptr; L.gch_off = nullptr; L.chunk_ids = nullptr; L.perm = nullptr;
        L.bytes = 0;
    }
}

/* Build and upload a layout from the host CSR if it is not built yet (allocates: build-time only). */
tsc_status ensure_key(const tsc_plan* cp, int key) {
    tsc_plan* p = const_cast<tsc_plan*>(cp); /* plans are always created non-const */
    std::lock_guard<std::mutex> lock(p->bmu);
    if (key_built(p, key)) return TSC_OK;
    tsc_weights w;
    w.row_offsets = p->h_rowoff.data();
    w.indices = p->h_idx.empty() ? nullptr : p->h_idx.data();
    w.values = p->h_val.empty() ? nullptr : p->h_val.data();
    w.bias = nullptr;
    tsc_status st = TSC_ERR_INVALID_ARGUMENT;
    if (key > kKeyGeneric && key < kKeySmem0) {
        TileLayout& L = p->lay[key - kKeyTile0];
        if (L.kt == 0) return fail(TSC_ERR_UNSUPPORTED, "tile layout not available for this plan");
        st = build_tile_layout(p, &w, L.kt, &L);
    } else if (key >= kKeySmem0 && key < kKeyReuse0) {
        if (!p->slay[key - kKeySmem0].ok) return fail(TSC_ERR_UNSUPPORTED, "smem layout not available for this plan");
        st = build_smem_layout(p, &w, key - kKeySmem0, &p->slay[key - kKeySmem0], true);
    } else if (key >= kKeyReuse0 && key < kKeyMma0) {
        if (!p->rlay[key - kKeyReuse0].ok) return fail(TSC_ERR_UNSUPPORTED, "reuse layout not available for this plan");
        st = build_reuse_layout(p, &w, key - kKeyReuse0, &p->rlay[key - kKeyReuse0], true);
    } else if (key >= kKeyBurst0 && key < kKeyCount) {
        if (!p->blay[key - kKeyBurst0].ok) return fail(TSC_ERR_UNSUPPORTED, "burst layout not available for this plan");
        st = build_burst_layout(p, &w, key - kKeyBurst0, &p->blay[key - kKeyBurst0], true);
    } else if (key >= kKeyMma0 && key < kKeyCount) {
        if (!p->mlay[key - kKeyMma0].s.ok) return fail(TSC_ERR_UNSUPPORTED, "tensor-core layout not available for this plan");
        st = build_mma_layout(p, &w, key - kKeyMma0, &p->mlay[key - kKeyMma0], true);
    }
    if (st != TSC_OK) free_key_locked(p, key);
    return st;
}

/* Layouts the plan must hold: generic, those the heuristic can pick for some shape, the tuned choices. */
void needed_keys(const tsc_plan* p, bool keep[kKeyCount]) {
    for (int k = 0; k < kKeyCount; ++k) keep[k] = false;
    keep[kKeyGeneric] = true;
    if (p->d.R * p->d.S > 1) { /* heuristic_variant's smem picks */
        if (p->slay[3].ok) keep[kKeySmem0 + 3] = true;
        if (p->d.C <= 256 && p->slay[6].ok) keep[kKeySmem0 + 6] = true;
    }
    std::lock_guard<std::mutex> lock(p->mu);
    for (size_t i = 0; i < p->tuned.size(); ++i) keep[layout_key(p, p->tuned[i].v)] = true;
}

/* Free every built layout that is neither needed nor in `extra` (may be NULL). */
void prune_layouts(tsc_plan* p, const bool* extra) {
    bool keep[kKeyCount];
    needed_keys(p, keep);
    std::lock_guard<std::mutex> lock(p->bmu);
    for (int k = 0; k < kKeyCount; ++k)
        if (!keep[k] && !(extra && extra[k]) && key_built(p, k)) free_key_locked(p, k);
}

size_t device_bytes(const tsc_plan* p) {
    std::lock_guard<std::mutex> lock(p->bmu);
    size_t b = p->base_bytes;
    for (int i = 0; i < 3; ++i) b += p->lay[i].bytes;
    for (int i = 0; i < kSmemSlots; ++i) b += p->slay[i].bytes;
    for (int i = 0; i < 16; ++i) b += p->rlay[i].bytes;
    for (int i = 0; i < tsc::MMA_CFGS; ++i) b += p->mlay[i].s.bytes;
    for (int i = 0; i < tsc::BURST_CFGS; ++i) b += p->blay[i].bytes;
    return b;
}

/* Stable variant id (< kVariantIdLimit): kind | (cfg & 15) << 4 | log2(split) << 8 | lw_log2 << 12 | vec << 16 |
 * (cfg >> 4) << 17. Ids of configs 0-15 are the same as before bits 17-20 existed (serialized choices stay valid). */
const int32_t kVariantIdLimit = 1 << 21;
static_assert(tsc::MMA_CFGS <= 256 && tsc::REUSE_CFGS <= 16, "a variant id holds the config in 8 bits");
int32_t encode_variant(const Variant& v) {
    const int ns = v.nsplit >= 8 ? 3 : (v.nsplit >= 4 ? 2 : (v.nsplit >= 2 ? 1 : 0));
    return (int32_t)(v.kind | ((v.cfg & 15) << 4) | (ns << 8) | (v.lw_log2 << 12) | (v.vec << 16) | ((v.cfg >> 4) << 17));
}

Variant decode_variant(int32_t id) {
    Variant v;
    v.kind = id & 15;
    v.cfg = ((id >> 4) & 15) | (((id >> 17) & 15) << 4);
    v.nsplit = 1 << ((id >> 8) & 15);
    v.lw_log2 = (id >> 12) & 15;
    v.vec = (id >> 16) & 1;
    return v;
}

#if defined(TSC_HAS_TMA)
/* cuTensorMapEncodeTiled of the installed driver (looked up once per process), or null. */
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 fn = []() -> PFN_cuTensorMapEncodeTiled_v12000 {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q);
#else
        const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &q);
#endif
        if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
            cudaGetLastError();
            return nullptr;
        }
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}
#endif

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && v[0] && std::strcmp(v, "0") != 0;
}

/* TMA staging can run (both dtypes; which launches use it is decided per input by encode_input_map). */
bool tma_available() {
#if defined(TSC_HAS_TMA)
    if (env_flag("TRT_SPARSE_NO_TMA")) return false;
    return tsc::smem_tma_supported() && tensor_map_encoder() != nullptr;
#else
    return false;
#endif
}

/* Tensor map of the NCHW input x (N x C x H x W) whose box is one staged chunk of sp (pitch columns x in_h rows x cc
 * channels of one image) for tiles TW outputs wide, for TMA staging; false where the input or the chunk does not meet
 * TMA's rules -- 16-byte aligned base and row stride, box rows a multiple of 16 bytes, and every block's box starting
 * at a 16-byte aligned column (ox0 * sw - pad_left - lead; fp16 boxes starting 8 bytes off a 16-byte boundary hit an
 * illegal instruction on the H200, round 9) -- the kernel then stages with cp.async. */
bool encode_input_map(const tsc_plan* p, const tsc::SmemParams& sp, int TW, const void* x, tsc::TmaDesc* out) {
#if defined(TSC_HAS_TMA)
    const PFN_cuTensorMapEncodeTiled_v12000 enc = tensor_map_encoder();
    const long long es = p->dtype == TSC_FLOAT16 ? 2 : 4;
    if (!enc || !x || sp.nhwc || reinterpret_cast<uintptr_t>(x) % 16 != 0) return false; /* NCHW boxes only */
    if ((sp.W * es) % 16 != 0 || (sp.pitch * es) % 16 != 0) return false;
    if (((long long)(sp.pad_left + sp.lead) * es) % 16 != 0 || ((long long)TW * sp.sw * es) % 16 != 0) return false;
    if (sp.pitch < 1 || sp.pitch > 256 || sp.in_h < 1 || sp.in_h > 256 || sp.cc < 1 || sp.cc > 256) return false;
    const cuuint64_t dims[4] = {(cuuint64_t)sp.W, (cuuint64_t)sp.H, (cuuint64_t)sp.C, (cuuint64_t)sp.N};
    const cuuint64_t strides[3] = {(cuuint64_t)(sp.W * es), (cuuint64_t)((long long)sp.H * sp.W * es),
                                   (cuuint64_t)((long long)sp.C * sp.H * sp.W * es)};
    if (strides[2] >= (1ULL << 40)) return false;
    const cuuint32_t box[4] = {(cuuint32_t)sp.pitch, (cuuint32_t)sp.in_h, (cuuint32_t)sp.cc, 1u};
    const cuuint32_t estr[4] = {1u, 1u, 1u, 1u};
    CUtensorMap m;
    const CUresult r = enc(&m, es == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4,
                           const_cast<void*>(x), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                           CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return false;
    static_assert(sizeof(CUtensorMap) == sizeof(tsc::TmaDesc), "TmaDesc holds a CUtensorMap");
    std::memcpy(out, &m, sizeof(m));
    return true;
#else
    (void)p; (void)sp; (void)TW; (void)x; (void)out;
    return false;
#endif
}

/* Tensor map of the NCHW input for a burst launch (box: BW columns x IH rows x CB channels of one image); false where
 * TMA cannot map it (16-byte aligned base and row stride) -- the kernel then stages with per-thread copies. */
bool encode_burst_map(const tsc_plan* p, const tsc::BurstParams& bp, const void* x, tsc::TmaDesc* out) {
#if defined(TSC_HAS_TMA)
    const PFN_cuTensorMapEncodeTiled_v12000 enc = tensor_map_encoder();
    const long long es = p->dtype == TSC_FLOAT16 ? 2 : 4;
    if (!enc || !p->tma || !x || reinterpret_cast<uintptr_t>(x) % 16 != 0 || (bp.W * es) % 16 != 0) return false;
    const cuuint64_t dims[4] = {(cuuint64_t)bp.W, (cuuint64_t)bp.H, (cuuint64_t)bp.C, (cuuint64_t)bp.N};
    const cuuint64_t strides[3] = {(cuuint64_t)(bp.W * es), (cuuint64_t)((long long)bp.H * bp.W * es),
                                   (cuuint64_t)((long long)bp.C * bp.H * bp.W * es)};
    if (strides[2] >= (1ULL << 40)) return false;
    const cuuint32_t box[4] = {(cuuint32_t)bp.BW, (cuuint32_t)bp.IH, (cuuint32_t)bp.CB, 1u};
    const cuuint32_t estr[4] = {1u, 1u, 1u, 1u};
    CUtensorMap m;
    if (enc(&m, es == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, const_cast<void*>(x),
            dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return false;
    std::memcpy(out, &m, sizeof(m));
    return true;
#else
    (void)p; (void)bp; (void)x; (void)out;
    return false;
#endif
}

bool same_variant(const Variant& a, const Variant& b) {
    return a.kind == b.kind && a.cfg == b.cfg && a.nsplit == b.nsplit && a.lw_log2 == b.lw_log2 && a.vec == b.vec;
}

tsc_status launch_variant(const tsc_plan* p, const Variant& v, int N, int H, int W, int P, int Q, const void* x, void* y,
                          cudaStream_t s) {
    cudaError_t e;
    if (!key_built(p, layout_key(p, v))) return fail(TSC_ERR_UNSUPPORTED, "variant layout not built");
    if (v.kind == 3) {
        tsc::SmemParams sp;
        if (!smem_params(p, v, N, H, W, P, Q, x, y, &sp))
            return fail(TSC_ERR_UNSUPPORTED, "smem variant cannot run this shape");
        sp.pdl = p->pdl ? 1 : 0;
        const SmemCfg cfg = kSmemCfgs[v.cfg];
        const size_t smem = p->slay[v.cfg].smem;
        tsc::TmaDesc tm;
        if (cfg.h2) { /* per-thread staging (the words interleave two columns) */
            sp.tma = 0;
            e = tsc::launch_smem_h2(cfg.tile, cfg.kw, sp, smem, s);
            if (e != cudaSuccess) return cuda_fail(e, "kernel launch");
            return TSC_OK;
        }
        sp.tma = (p->tma && encode_input_map(p, sp, tsc::smem_tile_w(cfg.tile), x, &tm)) ? 1 : 0;
        e = p->dtype == TSC_FLOAT16 ? tsc::launch_smem_f16(cfg.tile, cfg.kw, sp, sp.tma ? &tm : nullptr, smem, s)
                                    : tsc::launch_smem_f32(cfg.tile, cfg.kw, sp, sp.tma ? &tm : nullptr, smem, s);
    } else if (v.kind == 4) {
        tsc::SmemParams sp;
        if (!reuse_params(p, v, N, H, W, P, Q, x, y, &sp))
            return fail(TSC_ERR_UNSUPPORTED, "reuse variant cannot run this shape");
        sp.pdl = 0; /* plain launch */
        const size_t smem = p->rlay[v.cfg].smem;
        const bool fast = sp.lead == 3;
        e = p->dtype == TSC_FLOAT16 ? tsc::launch_reuse_f16(v.cfg, fast, sp, smem, s)
                                    : tsc::launch_reuse_f32(v.cfg, fast, sp, smem, s);
    } else if (v.kind == 6) {
        tsc::BurstParams bp;
        int gx = 0, gy = 0;
        if (!burst_params(p, v, N, H, W, P, Q, x, y, &bp, &gx, &gy))
            return fail(TSC_ERR_UNSUPPORTED, "burst variant cannot run this shape");
        bp.pdl = p->pdl ? 1 : 0;
        tsc::TmaDesc tm;
        size_t smem = p->blay[v.cfg].smem;
        if (encode_burst_map(p, bp, x, &tm)) {
            bp.use_tma = 1;
        } else if (const size_t ss = burst_span_smem(p, p->blay[v.cfg], H, W)) {
            bp.use_tma = 2; /* one bulk copy of the rows' span */
            smem = ss;
        }
        e = tsc::launch_burst(p->dtype == TSC_FLOAT16, v.cfg, bp, bp.use_tma == 1 ? &tm : nullptr, smem, gx, gy, s);
    } else if (v.kind == 5) {
        tsc::MmaParams mp;
        if (!mma_params(p, v, N, H, W, P, Q, x, y, &mp))
            return fail(TSC_ERR_UNSUPPORTED, "tensor-core variant cannot run this shape (or TF32 not allowed)");
        mp.s.pdl = p->pdl ? 1 : 0;
        tsc::TmaDesc tm;
        mp.s.tma = (p->tma && encode_input_map(p, mp.s, tsc::mma_cfg_info(v.cfg).tw, x, &tm)) ? 1 : 0;
        e = p->dtype == TSC_FLOAT16 ? tsc::launch_mma_f16(v.cfg, mp, mp.s.tma ? &tm : nullptr, p->mlay[v.cfg].s.smem, s)
                                    : tsc::launch_mma_tf32(v.cfg, mp, mp.s.tma ? &tm : nullptr, p->mlay[v.cfg].s.smem, s);
    } else if (v.kind == 1) {
        tsc::TileParams tp;
        if (!tile_params(p, v, N, H, W, P, Q, x, y, &tp))
            return fail(TSC_ERR_UNSUPPORTED, "tile variant cannot run this shape");
        e = p->dtype == TSC_FLOAT16 ? tsc::launch_tile_f16(p->geom, v.cfg, tp, s)
                                    : tsc::launch_tile_f32(p->geom, v.cfg, tp, s);
    } else {
        tsc::GenericParams gp;
        gp.x = x; gp.y = y; gp.entries = p->gentries; gp.row_off = p->growoff; gp.bias = p->bias;
        gp.N = N; gp.C = p->d.C; gp.H = H; gp.W = W; gp.K = p->d.K; gp.P = P; gp.Q = Q;
        gp.stride_h = p->d.stride_h; gp.stride_w = p->d.stride_w;
        gp.pad_top = p->d.pad_top; gp.pad_left = p->d.pad_left;
        gp.act = p->d.activation; gp.clip_min = p->d.clip_min; gp.clip_max = p->d.clip_max;
        if ((long long)P * Q / 128 + 1 >= (1LL << 31)) return fail(TSC_ERR_OVERFLOW, "output plane too large");
        if (v.kind == 2)
            e = tsc::launch_generic_vec(p->dtype == TSC_FLOAT16, gp, s);
        else
            e = tsc::launch_generic(p->dtype == TSC_FLOAT16, p->layout == TSC_NHWC, gp, s);
    }
    if (e != cudaSuccess) return cuda_fail(e, "kernel launch");
    return TSC_OK;
}

tsc_status check_enqueue_args(const tsc_plan* p, int N, int H, int W, const void* x, void* y, int* P, int* Q) {
    if (!p) return fail(TSC_ERR_INVALID_ARGUMENT, "plan is NULL");
    if (N < 1) return fail(TSC_ERR_INVALID_ARGUMENT, "batch N must be >= 1");
    tsc_status st = out_dims(&p->d, H, W, P, Q);
    if (st != TSC_OK) return st;
    if (!x || !y) return fail(TSC_ERR_INVALID_ARGUMENT, "input/output pointer is NULL");
    return TSC_OK;
}

/* Tuned choice for this shape, else the heuristic; never a variant whose layout is not built
 * (falls back to the heuristic, then generic), so enqueue never allocates. */
Variant chosen_variant(const tsc_plan* p, int N, int H, int W, int P, int Q) {
    {
        std::lock_guard<std::mutex> lock(p->mu);
        for (size_t i = 0; i < p->tuned.size(); ++i)
            if (p->tuned[i].N == N && p->tuned[i].H == H && p->tuned[i].W == W) {
                const Variant v = p->tuned[i].v;
                if (key_built(p, layout_key(p, v))) return v;
                break;
            }
    }
    Variant v = heuristic_variant(p, N, H, W, P, Q);
    if (!key_built(p, layout_key(p, v))) {
        const bool g4 = p->layout == TSC_NCHW && (v.kind == 2 || (v.kind == 3 && (long long)N * P * Q * p->d.K >= 400000LL));
        Variant g = {g4 ? 2 : 0, 0, 1, 0, 0};
        v = g;
    }
    return v;
}

/* Every variant that can run this shape: generic, then tile configs x splits x lane shapes. */
std::vector<Variant> candidates(const tsc_plan* plan, int N, int H, int W, int P, int Q, const void* x, void* y) {
    std::vector<Variant> cands;
    Variant gen = {0, 0, 1, 0, 0};
    cands.push_back(gen);
    if (plan->layout == TSC_NCHW) {
        Variant gv = {2, 0, 1, 0, 0};
        cands.push_back(gv);
    }
    for (int c = 0; c < kSmemCfgCount; ++c) {
        Variant v = {3, c, 1, 0, 0};
        tsc::SmemParams sp;
        if (smem_params(plan, v, N, H, W, P, Q, x, y, &sp)) cands.push_back(v);
    }
    if (plan->layout == TSC_NCHW)
        for (int c = 0; c < tsc::REUSE_CFGS; ++c) {
            Variant v = {4, c, 1, 0, 0};
            tsc::SmemParams sp;
            if (reuse_params(plan, v, N, H, W, P, Q, x, y, &sp)) cands.push_back(v);
        }
    if (plan->mma && (plan->dtype == TSC_FLOAT16 || plan->tf32))
        for (int c = 0; c < tsc::MMA_CFGS; ++c) {
            Variant v = {5, c, 1, 0, 0};
            tsc::MmaParams mp;
            if (mma_params(plan, v, N, H, W, P, Q, x, y, &mp)) cands.push_back(v);
        }
    /* offered where TMA can map the input rows (16-byte row stride) or the rows' span fits the shared memory: the
     * per-thread staging (kept for the case where neither does at launch) measured 2-4x slower (round 22) */
    if (plan->burst && plan->tma)
        for (int c = 0; c < tsc::BURST_CFGS; ++c) {
            if (((long long)W * (plan->dtype == TSC_FLOAT16 ? 2 : 4)) % 16 != 0 &&
                (!plan->blay[c].ok || burst_span_smem(plan, plan->blay[c], H, W) == 0))
                continue;
            Variant v = {6, c, 1, 0, 0};
            tsc::BurstParams bp;
            int gx = 0, gy = 0;
            if (!burst_params(plan, v, N, H, W, P, Q, x, y, &bp, &gx, &gy)) continue;
            /* offered where the tiles are mostly filled (its kind of layer: small maps) */
            const tsc::BurstCfgInfo ci = tsc::burst_cfg_info(c);
            const long long area = (long long)gx * (32 / ci.lw) * (ci.lw * ci.pc);
            if (2LL * P * Q >= area) cands.push_back(v);
        }
    if (plan->geom >= 0) {
        /* the list depends on the shape only (indices stay stable); an unaligned input runs the vec
         * variants on the scalar path */
        const bool vec_ok = vec_eligible(plan, W, reinterpret_cast<const void*>(256));
        for (int c = 0; c < tsc::TILE_CFGS; ++c) {
            const tsc::TileCfgInfo ci = tsc::tile_cfg_info(plan->geom, c);
            const int lw0 = default_lw(plan, c, Q);
            for (int ns = 1; ns <= 8; ns *= 2)
                for (int dl = 0; dl < 2; ++dl)
                    for (int vec = 0; vec < ((vec_ok && ci.pw == 4) ? 2 : 1); ++vec) {
                        Variant v = {1, c, ns, lw0 - dl, vec};
                        tsc::TileParams tp;
                        if (v.lw_log2 >= 0 && tile_params(plan, v, N, H, W, P, Q, x, y, &tp)) cands.push_back(v);
                    }
        }
    }
    return cands;
}

std::string variant_name(const tsc_plan* plan, const Variant& v) {
    if (v.kind == 0) return "generic";
    if (v.kind == 2) return "generic4";
    if (v.kind == 3) {
        const SmemCfg c = kSmemCfgs[v.cfg];
        return "smem(tile=" + std::to_string(tsc::smem_tile_h(c.tile)) + "x" + std::to_string(tsc::smem_tile_w(c.tile)) +
               ",kw=" + std::to_string(c.kw) + ",split=" + std::to_string(c.ns) +
               (c.cl > 1 ? ",cluster=" + std::to_string(c.cl) : std::string()) + (c.h2 ? ",half2" : "") + ")";
    }
    if (v.kind == 4) {
        const tsc::ReuseCfgInfo c = tsc::reuse_cfg_info(v.cfg);
        return std::string("reuse(tile=") + std::to_string((32 / c.lw) * c.ph) + "x" + std::to_string(c.lw * c.pw) +
               ",kt=" + std::to_string(c.kt) + ",px=" + std::to_string(c.ph) + "x" + std::to_string(c.pw) +
               ",split=" + std::to_string(c.ns) + (plan->dtype == TSC_FLOAT16 ? ",half2" : "") + ")";
    }
    if (v.kind == 5) {
        const tsc::MmaCfgInfo c = tsc::mma_cfg_info(v.cfg);
        return "mma(tile=" + std::to_string(c.th) + "x" + std::to_string(c.tw) + ",groups=" + std::to_string(c.wg) +
               ",nt=" + std::to_string(c.nt) + ",split=" + std::to_string(c.ws) +
               (c.cl > 1 ? ",cluster=" + std::to_string(c.cl) : std::string()) +
               (c.sb != 48 ? ",stage=" + std::to_string(c.sb) + "k" : std::string()) +
               (plan->dtype == TSC_FLOAT32 ? ",tf32" : "") + ")";
    }
    if (v.kind == 6) {
        const tsc::BurstCfgInfo c = tsc::burst_cfg_info(v.cfg);
        return "burst(tile=" + std::to_string(32 / c.lw) + "x" + std::to_string(c.lw * c.pc) + ",kw=" +
               std::to_string(c.kpw) + ",csplit=" + std::to_string(8 / c.wk) +
               (c.cl > 1 ? ",cluster=" + std::to_string(c.cl) : std::string()) + ")";
    }
    const tsc::TileCfgInfo ci = tsc::tile_cfg_info(plan->geom, v.cfg);
    return "tile(kt=" + std::to_string(ci.kt) + ",px=" + std::to_string(ci.ph) + "x" + std::to_string(ci.pw) +
           ",split=" + std::to_string(v.nsplit) + ",lw=" + std::to_string(1 << v.lw_log2) + (v.vec ? ",vec" : "") + ")";
}

void remember_choice(tsc_plan* plan, int N, int H, int W, const Variant& v) {
    std::lock_guard<std::mutex> lock(plan->mu);
    for (size_t i = 0; i < plan->tuned.size(); ++i)
        if (plan->tuned[i].N == N && plan->tuned[i].H == H && plan->tuned[i].W == W) {
            plan->tuned[i].v = v;
            return;
        }
    Tuned t = {N, H, W, v};
    plan->tuned.push_back(t);
}

size_t copy_out(const std::string& s, char* buf, size_t buf_len) {
    if (buf && buf_len) {
        const size_t n = std::min(buf_len - 1, s.size());
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return s.size() + 1;
}

std::once_flag g_smem_once[64];
std::once_flag g_reuse_once[64];

}  // namespace

extern "C" {

int32_t tsc_abi_version(void) { return TSC_ABI_VERSION; }

const char* tsc_status_string(tsc_status s) {
    switch (s) {
        case TSC_OK: return "TSC_OK";
        case TSC_ERR_INVALID_ARGUMENT: return "TSC_ERR_INVALID_ARGUMENT";
        case TSC_ERR_UNSUPPORTED: return "TSC_ERR_UNSUPPORTED";
        case TSC_ERR_OVERFLOW: return "TSC_ERR_OVERFLOW";
        case TSC_ERR_OUT_OF_MEMORY: return "TSC_ERR_OUT_OF_MEMORY";
        case TSC_ERR_CUDA: return "TSC_ERR_CUDA";
    }
    return "TSC_ERR_UNKNOWN";
}

const char* tsc_last_error(void) { return g_last_error.c_str(); }

tsc_status tsc_output_dims(const tsc_conv_desc* desc, int32_t H, int32_t W, int32_t* P, int32_t* Q) {
    g_last_error.clear();
    tsc_status st = validate_desc(desc);
    if (st != TSC_OK) return st;
    if (!P || !Q) return fail(TSC_ERR_INVALID_ARGUMENT, "P/Q pointers are NULL");
    return out_dims(desc, H, W, P, Q);
}

tsc_status tsc_plan_create(const tsc_conv_desc* desc, const tsc_weights* weights, tsc_dtype dtype, tsc_layout layout,
                           tsc_plan** plan) {
    g_last_error.clear();
    if (!plan) return fail(TSC_ERR_INVALID_ARGUMENT, "plan out-pointer is NULL");
    *plan = nullptr;
    tsc_status st = validate_desc(desc);
    if (st != TSC_OK) return st;
    if (dtype != TSC_FLOAT32 && dtype != TSC_FLOAT16) return fail(TSC_ERR_INVALID_ARGUMENT, "dtype must be fp32 or fp16");
    if (layout != TSC_NCHW && layout != TSC_NHWC) return fail(TSC_ERR_INVALID_ARGUMENT, "layout must be NCHW or NHWC");
    if ((st = validate_weights(desc, weights)) != TSC_OK) return st;

    tsc_plan* p = new tsc_plan();
    p->d = *desc;
    p->dtype = dtype;
    p->layout = layout;
    p->nnz = weights->row_offsets[desc->K];
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) { free_plan(p); return cuda_fail(e, "cudaGetDevice"); }
    cudaDeviceGetAttribute(&p->sm_count, cudaDevAttrMultiProcessorCount, dev);
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12000
    {
        int cc_major = 0, cluster_launch = 0;
        cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev);
        p->clusters = cc_major >= 9 && cluster_launch != 0;
    }
#endif
    {
        int cc_major = 0;
        cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev);
        p->mma = cc_major >= 8 && tsc::mma_supported();
        p->tma = p->clusters && tma_available(); /* see encode_input_map */
        p->burst = p->clusters && !env_flag("TRT_SPARSE_NO_BURST") && tsc::burst_supported();
        p->pdl = p->clusters && env_flag("TRT_SPARSE_PDL");
        if (const char* bs = std::getenv("TRT_SPARSE_BURST_STAGES")) {
            const int v = std::atoi(bs);
            if (v >= 1 && v <= 8) p->burst_stages = v;
        }
        p->mma_sorted = env_flag("TRT_SPARSE_MMA_SORTED");
        p->mma_align8 = env_flag("TRT_SPARSE_MMA_ALIGN8");
        p->pair_stage = cc_major >= 8 && !env_flag("TRT_SPARSE_NO_PAIR_STAGE");
        p->h2 = !env_flag("TRT_SPARSE_NO_H2");
        if (const char* lim = std::getenv("TRT_SPARSE_MMA_CFG_LIMIT"))
            p->mma_cfg_limit = std::max(0, std::min(tsc::MMA_CFGS, std::atoi(lim)));
    }
    int optin = 48 * 1024;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess || optin < 48 * 1024)
        optin = 48 * 1024;
    p->smem_optin = std::min(optin, 8 * 128 * 32 * 4); /* largest split buffer any variant needs */
    p->smem_optin_full = optin;
    cudaGetLastError();

    /* generic layout: CSR over k of (value, c, r*dh, s*dw) */
    const int RS = desc->R * desc->S;
    std::vector<int4> ge((size_t)p->nnz);
    for (int i = 0; i < p->nnz; ++i) {
        const int idx = weights->indices[i];
        int4 q;
        std::memcpy(&q.x, &weights->values[i], 4);
        q.y = idx / RS;
        q.z = ((idx % RS) / desc->S) * desc->dilation_h;
        q.w = (idx % desc->S) * desc->dilation_w;
        ge[i] = q;
    }
    std::vector<float> bias(desc->K, 0.0f);
    if (weights->bias) std::memcpy(bias.data(), weights->bias, sizeof(float) * desc->K);
    if ((st = upload(&p->gentries, ge.data(), ge.size(), &p->base_bytes)) != TSC_OK ||
        (st = upload(&p->growoff, weights->row_offsets, (size_t)desc->K + 1, &p->base_bytes)) != TSC_OK ||
        (st = upload(&p->bias, bias.data(), bias.size(), &p->base_bytes)) != TSC_OK) {
        free_plan(p);
        return st;
    }
    /* host copy of the canonical CSR: the other layouts are built from it when needed */
    p->h_rowoff.assign(weights->row_offsets, weights->row_offsets + desc->K + 1);
    if (p->nnz > 0) {
        p->h_idx.assign(weights->indices, weights->indices + p->nnz);
        p->h_val.assign(weights->values, weights->values + p->nnz);
    }
    { /* smem and tensor-core kernels: NCHW and NHWC; reuse: NCHW only (build_reuse_layout checks) */
        for (int c = 0; c < kSmemCfgCount; ++c)
            build_smem_layout(p, weights, c, &p->slay[c], false); /* geometry only */
        for (int c = 0; c < tsc::REUSE_CFGS; ++c)
            build_reuse_layout(p, weights, c, &p->rlay[c], false); /* geometry only */
        for (int c = 0; c < tsc::MMA_CFGS; ++c)
            build_mma_layout(p, weights, c, &p->mlay[c], false); /* geometry only */
        for (int c = 0; c < tsc::BURST_CFGS; ++c)
            build_burst_layout(p, weights, c, &p->blay[c], false); /* geometry only */
        if (dev >= 0 && dev < 64) {
            const int bytes = p->smem_optin, optin_full = p->smem_optin_full;
            std::call_once(g_reuse_once[dev], [bytes, optin_full]() {
                tsc::reuse_set_smem_limit_f32(bytes);
                tsc::reuse_set_smem_limit_f16(bytes);
                if (tsc::burst_supported()) tsc::burst_set_smem_limit(optin_full);
                if (tsc::mma_supported()) { /* configs with more than 48 KB of staging */
                    tsc::mma_set_smem_limit_f16(bytes);
                    tsc::mma_set_smem_limit_tf32(bytes);
                }
            });
        }
        cudaGetLastError();
    }
    p->geom = tile_geom_of(desc, layout);
    if (p->geom >= 0) {
        for (int c = 0; c < tsc::TILE_CFGS; ++c) { /* geometry only; arrays built by tune / set_choice */
            const int kt = tsc::tile_cfg_info(p->geom, c).kt;
            p->lay[lay_index(kt)].kt = kt;
            p->lay[lay_index(kt)].groups = (desc->K + kt - 1) / kt;
        }
        if (dev >= 0 && dev < 64) {
            const int bytes = p->smem_optin;
            std::call_once(g_smem_once[dev], [bytes]() {
                tsc::tile_set_smem_limit_f32(bytes);
                tsc::tile_set_smem_limit_f16(bytes);
            });
        }
        cudaGetLastError();
    }
    /* the layouts the heuristic can pick for some input shape (enqueue never allocates) */
    bool keep[kKeyCount];
    needed_keys(p, keep);
    for (int k = 1; k < kKeyCount; ++k)
        if (keep[k] && (st = ensure_key(p, k)) != TSC_OK) {
            free_plan(p);
            return st;
        }
    *plan = p;
    return TSC_OK;
}

void tsc_plan_destroy(tsc_plan* plan) { free_plan(plan); }

size_t tsc_workspace_size(const tsc_plan* plan, int32_t N, int32_t H, int32_t W) {
    (void)plan; (void)N; (void)H; (void)W;
    return 0;
}

tsc_status tsc_enqueue(const tsc_plan* plan, int32_t N, int32_t H, int32_t W, const void* input, void* output,
                       void* workspace, void* stream) {
    g_last_error.clear();
    (void)workspace;
    int P = 0, Q = 0;
    tsc_status st = check_enqueue_args(plan, N, H, W, input, output, &P, &Q);
    if (st != TSC_OK) return st;
    Variant v = chosen_variant(plan, N, H, W, P, Q);
    return launch_variant(plan, v, N, H, W, P, Q, input, output, static_cast<cudaStream_t>(stream));
}

tsc_status tsc_plan_tune(tsc_plan* plan, int32_t N, int32_t H, int32_t W, const void* input, void* output,
                         void* workspace, void* stream) {
    g_last_error.clear();
    (void)workspace;
    int P = 0, Q = 0;
    tsc_status st = check_enqueue_args(plan, N, H, W, input, output, &P, &Q);
    if (st != TSC_OK) return st;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    std::vector<Variant> cands = candidates(plan, N, H, W, P, Q, input, output);
    cudaEvent_t e0, e1;
    cudaError_t ce;
    if ((ce = cudaEventCreate(&e0)) != cudaSuccess) return cuda_fail(ce, "cudaEventCreate");
    if ((ce = cudaEventCreate(&e1)) != cudaSuccess) { cudaEventDestroy(e0); return cuda_fail(ce, "cudaEventCreate"); }
    float best = 1e30f;
    Variant bestv = chosen_variant(plan, N, H, W, P, Q);
    /* best-of-trials time (ms per `reps` launches) of candidate i, or < 0 when it cannot run; its layout is built */
    auto time_cand = [&](size_t i, int reps, int trials, float* out) -> tsc_status {
        *out = -1.0f;
        if (ensure_key(plan, layout_key(plan, cands[i])) != TSC_OK) return TSC_OK; /* e.g. out of memory: skip */
        if (launch_variant(plan, cands[i], N, H, W, P, Q, input, output, s) != TSC_OK) return TSC_OK; /* warm-up */
        float tmin = 1e30f;
        for (int trial = 0; trial < trials; ++trial) {
            cudaEventRecord(e0, s);
            for (int r = 0; r < reps; ++r) launch_variant(plan, cands[i], N, H, W, P, Q, input, output, s);
            cudaEventRecord(e1, s);
            const cudaError_t err = cudaEventSynchronize(e1);
            if (err != cudaSuccess) return cuda_fail(err, "tuning run");
            float ms = 0.0f;
            cudaEventElapsedTime(&ms, e0, e1);
            tmin = std::min(tmin, ms / (float)reps);
        }
        *out = tmin;
        return TSC_OK;
    };
    std::vector<int> keys(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) keys[i] = layout_key(plan, cands[i]);
    std::vector<std::pair<float, size_t> > first; /* (time, candidate) of the first pass */
    /* A layout is kept while a remaining candidate or one of the three fastest so far uses it (bounded peak). */
    auto keep_top = [&](size_t next, bool* extra) {
        for (int k = 0; k < kKeyCount; ++k) extra[k] = false;
        extra[layout_key(plan, bestv)] = true;
        for (size_t j = next; j < cands.size(); ++j) extra[keys[j]] = true;
        std::vector<std::pair<float, size_t> > top = first;
        std::sort(top.begin(), top.end());
        for (size_t j = 0; j < top.size() && j < 3; ++j) extra[keys[top[j].second]] = true;
    };
    for (size_t i = 0; i < cands.size(); ++i) {
        if (i > 0) {
            bool extra[kKeyCount];
            keep_top(i, extra);
            prune_layouts(plan, extra);
        }
        float t = 0.0f;
        if ((st = time_cand(i, 5, 3, &t)) != TSC_OK) {
            cudaEventDestroy(e0); cudaEventDestroy(e1);
            prune_layouts(plan, nullptr);
            return st;
        }
        if (t < 0.0f) continue;
        first.push_back(std::make_pair(t, i));
        if (t < best) { best = t; bestv = cands[i]; }
    }
    /* second pass: the three fastest again with longer runs (a 5-launch pass mis-ranks variants within noise) */
    std::sort(first.begin(), first.end());
    if (first.size() > 1) {
        best = 1e30f;
        for (size_t j = 0; j < first.size() && j < 3; ++j) {
            float t = 0.0f;
            if ((st = time_cand(first[j].second, 20, 3, &t)) != TSC_OK) {
                cudaEventDestroy(e0); cudaEventDestroy(e1);
                prune_layouts(plan, nullptr);
                return st;
            }
            if (t >= 0.0f && t < best) { best = t; bestv = cands[first[j].second]; }
        }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    g_last_error.clear();
    remember_choice(plan, N, H, W, bestv);
    prune_layouts(plan, nullptr); /* keep the winner's layout (now needed), free the losers' */
    return TSC_OK;
}

tsc_status tsc_plan_get_choice(const tsc_plan* plan, int32_t N, int32_t H, int32_t W, int32_t* variant_id) {
    g_last_error.clear();
    if (!plan) return fail(TSC_ERR_INVALID_ARGUMENT, "plan is NULL");
    if (!variant_id) return fail(TSC_ERR_INVALID_ARGUMENT, "variant_id is NULL");
    if (N < 1) return fail(TSC_ERR_INVALID_ARGUMENT, "batch N must be >= 1");
    int P = 0, Q = 0;
    tsc_status st = out_dims(&plan->d, H, W, &P, &Q);
    if (st != TSC_OK) return st;
    *variant_id = encode_variant(chosen_variant(plan, N, H, W, P, Q));
    return TSC_OK;
}

tsc_status tsc_plan_set_choice(tsc_plan* plan, int32_t N, int32_t H, int32_t W, int32_t variant_id) {
    g_last_error.clear();
    if (!plan) return fail(TSC_ERR_INVALID_ARGUMENT, "plan is NULL");
    if (N < 1) return fail(TSC_ERR_INVALID_ARGUMENT, "batch N must be >= 1");
    int P = 0, Q = 0;
    tsc_status st = out_dims(&plan->d, H, W, &P, &Q);
    if (st != TSC_OK) return st;
    if (variant_id < 0 || variant_id >= kVariantIdLimit)
        return fail(TSC_ERR_INVALID_ARGUMENT, "unknown variant id " + std::to_string(variant_id));
    const Variant v = decode_variant(variant_id);
    const std::vector<Variant> cands = candidates(plan, N, H, W, P, Q, nullptr, nullptr);
    bool found = false;
    for (size_t i = 0; i < cands.size() && !found; ++i) found = same_variant(cands[i], v);
    if (!found)
        return fail(TSC_ERR_INVALID_ARGUMENT, "variant id " + std::to_string(variant_id) +
                                                  " is unknown or cannot run input " + std::to_string(N) + "x" +
                                                  std::to_string(H) + "x" + std::to_string(W) + " with this plan");
    if ((st = ensure_key(plan, layout_key(plan, v))) != TSC_OK) return st;
    remember_choice(plan, N, H, W, v);
    prune_layouts(plan, nullptr);
    return TSC_OK;
}

size_t tsc_plan_device_bytes(const tsc_plan* plan) { return plan ? device_bytes(plan) : 0; }

tsc_status tsc_plan_set_math(tsc_plan* plan, int32_t math) {
    g_last_error.clear();
    if (!plan) return fail(TSC_ERR_INVALID_ARGUMENT, "plan is NULL");
    if (math != TSC_MATH_DEFAULT && math != TSC_MATH_ALLOW_TF32)
        return fail(TSC_ERR_INVALID_ARGUMENT, "math must be TSC_MATH_DEFAULT (0) or TSC_MATH_ALLOW_TF32 (1)");
    const bool tf32 = math == TSC_MATH_ALLOW_TF32;
    if (plan->dtype != TSC_FLOAT32 || tf32 == plan->tf32) {
        plan->tf32 = tf32 && plan->dtype == TSC_FLOAT32; /* fp16 plans: no effect */
        return TSC_OK;
    }
    plan->tf32 = tf32;
    if (!tf32) { /* forget tuned TF32 choices; their layouts are freed below */
        std::lock_guard<std::mutex> lock(plan->mu);
        std::vector<Tuned> kept;
        for (size_t i = 0; i < plan->tuned.size(); ++i)
            if (plan->tuned[i].v.kind != 5) kept.push_back(plan->tuned[i]);
        plan->tuned.swap(kept);
    }
    prune_layouts(plan, nullptr);
    return TSC_OK;
}

tsc_status tsc_plan_tune_scratch(tsc_plan* plan, int32_t N, int32_t H, int32_t W) {
    g_last_error.clear();
    int P = 0, Q = 0;
    const int dummy = 1;
    tsc_status st = check_enqueue_args(plan, N, H, W, &dummy, const_cast<int*>(&dummy), &P, &Q);
    if (st != TSC_OK) return st;
    const size_t es = plan->dtype == TSC_FLOAT16 ? 2 : 4;
    const size_t in_bytes = (size_t)N * plan->d.C * H * W * es, out_bytes = (size_t)N * plan->d.K * P * Q * es;
    const size_t ws_bytes = tsc_workspace_size(plan, N, H, W);
    void *x = nullptr, *y = nullptr, *ws = nullptr;
    cudaStream_t s = nullptr;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cuda_fail(e, "cudaStreamCreate");
    if ((e = cudaMalloc(&x, in_bytes)) != cudaSuccess || (e = cudaMalloc(&y, out_bytes)) != cudaSuccess ||
        (ws_bytes && (e = cudaMalloc(&ws, ws_bytes)) != cudaSuccess) ||
        (e = cudaMemsetAsync(x, 0, in_bytes, s)) != cudaSuccess) {
        st = e == cudaErrorMemoryAllocation ? fail(TSC_ERR_OUT_OF_MEMORY, "cudaMalloc of the tuning scratch buffers failed")
                                            : cuda_fail(e, "tuning scratch buffers");
    } else {
        st = tsc_plan_tune(plan, N, H, W, x, y, ws, s);
    }
    std::string err = g_last_error;
    cudaStreamSynchronize(s);
    cudaFree(x);
    cudaFree(y);
    cudaFree(ws);
    cudaStreamDestroy(s);
    cudaGetLastError();
    g_last_error = err;
    return st;
}

size_t tsc_plan_describe(const tsc_plan* plan, char* buf, size_t buf_len) {
    if (!plan) return 0;
    std::string s = std::string("dtype=") + (plan->dtype == TSC_FLOAT16 ? "fp16(fp32-accumulate)"
                                                                     : (plan->tf32 ? "fp32(tf32-allowed)" : "fp32")) +
                    " layout=" + (plan->layout == TSC_NHWC ? "NHWC" : "NCHW") + " K=" + std::to_string(plan->d.K) +
                    " C=" + std::to_string(plan->d.C) + " R=" + std::to_string(plan->d.R) + " S=" +
                    std::to_string(plan->d.S) + " nnz=" + std::to_string(plan->nnz) +
                    " tile_geom=" + std::to_string(plan->geom) + " tma=" + (plan->tma ? "1" : "0") +
                    " pairs=" + (plan->pair_stage ? "1" : "0") + " h2=" + (plan->h2 ? "1" : "0") + " burst_stages=" + std::to_string(plan->burst_stages) + " pdl=" + (plan->pdl ? "1" : "0") + " device_bytes=" + std::to_string(device_bytes(plan));
    {
        std::lock_guard<std::mutex> lock(plan->mu);
        for (size_t i = 0; i < plan->tuned.size(); ++i) {
            const Tuned& t = plan->tuned[i];
            s += " tuned[" + std::to_string(t.N) + "x" + std::to_string(t.H) + "x" + std::to_string(t.W) + "]=";
            s += variant_name(plan, t.v);
        }
    }
    return copy_out(s, buf, buf_len);
}

/* ---- variant access for tests and benchmarks (tsc_bench.h) ---- */
int32_t tsc_plan_variant_count(const tsc_plan* plan, int32_t N, int32_t H, int32_t W) {
    int P = 0, Q = 0;
    if (!plan || N < 1 || out_dims(&plan->d, H, W, &P, &Q) != TSC_OK) return 0;
    return (int32_t)candidates(plan, N, H, W, P, Q, nullptr, nullptr).size();
}

size_t tsc_plan_variant_name(const tsc_plan* plan, int32_t index, int32_t N, int32_t H, int32_t W, char* buf,
                             size_t buf_len) {
    int P = 0, Q = 0;
    if (!plan || N < 1 || out_dims(&plan->d, H, W, &P, &Q) != TSC_OK) return 0;
    std::vector<Variant> c = candidates(plan, N, H, W, P, Q, nullptr, nullptr);
    if (index < 0 || index >= (int)c.size()) return 0;
    return copy_out(variant_name(plan, c[index]), buf, buf_len);
}

tsc_status tsc_plan_enqueue_variant(const tsc_plan* plan, int32_t index, int32_t N, int32_t H, int32_t W,
                                    const void* input, void* output, void* workspace, void* stream) {
    g_last_error.clear();
    (void)workspace;
    int P = 0, Q = 0;
    tsc_status st = check_enqueue_args(plan, N, H, W, input, output, &P, &Q);
    if (st != TSC_OK) return st;
    std::vector<Variant> c = candidates(plan, N, H, W, P, Q, input, output);
    if (index < 0 || index >= (int)c.size()) return fail(TSC_ERR_INVALID_ARGUMENT, "variant index out of range");
    /* builds the variant's layout on first use (allocates: tests and benchmarks only, not graph-capturable) */
    if ((st = ensure_key(plan, layout_key(plan, c[index]))) != TSC_OK) return st;
    return launch_variant(plan, c[index], N, H, W, P, Q, input, output, static_cast<cudaStream_t>(stream));
}

}  // extern "C"
