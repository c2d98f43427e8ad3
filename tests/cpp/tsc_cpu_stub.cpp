/*
 * CPU stand-in for the kernel library (plugin/kernels/sparse_conv.h), for tests only.
 *
 * Implements the C ABI on the host: tsc_enqueue computes the convolution on HOST
 * pointers (fp32 or fp16 bits, accumulating in double) so that the plugin driver can
 * run its whole TensorRT-like sequence on a machine without a GPU. It also counts live
 * plans (tsc_stub_live_plans) so tests can prove that clone/attach/destroy neither leak
 * nor double-free plans. TSC_STUB_NO_DEVICE=1 makes tsc_plan_create fail with
 * TSC_ERR_CUDA, like an engine build on a CPU-only machine.
 * Kernel choice: the stub knows variant ids 0 (default), kStubTunedId (what
 * tsc_plan_tune_scratch "picks") and kStubTf32Id (a TF32 tensor-core variant: only fp32
 * plans after tsc_plan_set_math(TSC_MATH_ALLOW_TF32) offer it, and then tuning picks it;
 * enqueue with it rounds inputs and weights to TF32, like the real variant's products);
 * tsc_stub_last_set_choice reports the last accepted tsc_plan_set_choice so the drivers
 * can check a tuned choice survives serialization (a TF32 choice is accepted only when the
 * plan's math was set first).
 */
#include "kernels/sparse_conv.h"
#include "half_util.h" // fp16 <-> fp32 (round to nearest even)

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct tsc_plan
{
    tsc_conv_desc desc;
    tsc_dtype dtype;
    tsc_layout layout;
    std::vector<int32_t> offsets, indices;
    std::vector<float> values, bias;
    uint32_t magic;
    int32_t choiceN{0}, choiceH{0}, choiceW{0}, choiceId{-1};
    bool tf32{false}; // tsc_plan_set_math(TSC_MATH_ALLOW_TF32) on an fp32 plan
};

namespace
{
std::atomic<int32_t> gLive{0};
thread_local std::string gLastError;
constexpr int32_t kStubTunedId = 2;
constexpr int32_t kStubTf32Id = 5; // the real library's TF32 variants are kind 5 (plugin/kernels/sparse_conv.cu)
std::atomic<int32_t> gLastSet[4] = {{-1}, {0}, {0}, {0}}; // id, N, H, W of the last accepted set_choice
constexpr uint32_t kLiveMagic = 0x51A7E5U;

tsc_status fail(tsc_status st, std::string const& msg)
{
    gLastError = msg;
    return st;
}

// fp32 -> TF32 (10-bit mantissa, round to nearest, ties away from zero: cvt.rna.tf32.f32) for finite v
float roundToTf32(float v)
{
    uint32_t u;
    std::memcpy(&u, &v, sizeof(u));
    u = (u + 0x1000U) & 0xFFFFE000U;
    std::memcpy(&v, &u, sizeof(v));
    return v;
}
} // namespace

extern "C" {

int32_t tsc_abi_version(void)
{
    return TSC_ABI_VERSION;
}

const char* tsc_status_string(tsc_status status)
{
    switch (status)
    {
    case TSC_OK: return "TSC_OK";
    case TSC_ERR_INVALID_ARGUMENT: return "TSC_ERR_INVALID_ARGUMENT";
    case TSC_ERR_UNSUPPORTED: return "TSC_ERR_UNSUPPORTED";
    case TSC_ERR_OVERFLOW: return "TSC_ERR_OVERFLOW";
    case TSC_ERR_OUT_OF_MEMORY: return "TSC_ERR_OUT_OF_MEMORY";
    case TSC_ERR_CUDA: return "TSC_ERR_CUDA";
    }
    return "TSC_ERR_UNKNOWN";
}

const char* tsc_last_error(void)
{
    return gLastError.c_str();
}

tsc_status tsc_output_dims(const tsc_conv_desc* d, int32_t H, int32_t W, int32_t* P, int32_t* Q)
{
    if (!d || !P || !Q)
        return fail(TSC_ERR_INVALID_ARGUMENT, "null argument");
    int64_t nh = static_cast<int64_t>(H) + d->pad_top + d->pad_bottom - static_cast<int64_t>(d->dilation_h) * (d->R - 1) - 1;
    int64_t nw = static_cast<int64_t>(W) + d->pad_left + d->pad_right - static_cast<int64_t>(d->dilation_w) * (d->S - 1) - 1;
    if (nh < 0 || nw < 0)
        return fail(TSC_ERR_INVALID_ARGUMENT, "output < 1");
    *P = static_cast<int32_t>(nh / d->stride_h + 1);
    *Q = static_cast<int32_t>(nw / d->stride_w + 1);
    return TSC_OK;
}

tsc_status tsc_plan_create(const tsc_conv_desc* desc, const tsc_weights* w, tsc_dtype dtype, tsc_layout layout,
    tsc_plan** plan)
{
    if (!desc || !w || !plan || !w->row_offsets)
        return fail(TSC_ERR_INVALID_ARGUMENT, "null argument");
    *plan = nullptr;
    char const* nodev = std::getenv("TSC_STUB_NO_DEVICE");
    if (nodev && nodev[0] == '1')
        return fail(TSC_ERR_CUDA, "cudaGetDevice: no CUDA-capable device is detected (stub)");
    if (layout != TSC_NCHW && layout != TSC_NHWC)
        return fail(TSC_ERR_INVALID_ARGUMENT, "layout must be NCHW or NHWC");
    tsc_plan* p = new tsc_plan;
    p->desc = *desc;
    p->dtype = dtype;
    p->layout = layout;
    p->offsets.assign(w->row_offsets, w->row_offsets + desc->K + 1);
    int32_t const nnz = p->offsets.back();
    if (nnz > 0 && (!w->indices || !w->values))
    {
        delete p;
        return fail(TSC_ERR_INVALID_ARGUMENT, "null indices/values");
    }
    if (nnz > 0)
    {
        p->indices.assign(w->indices, w->indices + nnz);
        p->values.assign(w->values, w->values + nnz);
    }
    if (w->bias)
        p->bias.assign(w->bias, w->bias + desc->K);
    p->magic = kLiveMagic;
    ++gLive;
    *plan = p;
    return TSC_OK;
}

void tsc_plan_destroy(tsc_plan* plan)
{
    if (!plan)
        return;
    if (plan->magic != kLiveMagic)
        std::abort(); // double free
    plan->magic = 0;
    --gLive;
    delete plan;
}

tsc_status tsc_plan_tune(tsc_plan*, int32_t, int32_t, int32_t, const void*, void*, void*, void*)
{
    return TSC_OK;
}

size_t tsc_workspace_size(const tsc_plan* plan, int32_t N, int32_t, int32_t)
{
    // pretend the kernel needs a little scratch so the plugin's workspace path is exercised
    return plan ? static_cast<size_t>(64 + 16 * N) : 0;
}

tsc_status tsc_enqueue(const tsc_plan* p, int32_t N, int32_t H, int32_t W, const void* input, void* output,
    void* workspace, void*)
{
    if (!p || p->magic != kLiveMagic || !input || !output)
        return fail(TSC_ERR_INVALID_ARGUMENT, "bad plan or buffer");
    if (!workspace)
        return fail(TSC_ERR_INVALID_ARGUMENT, "stub needs its workspace");
    std::memset(workspace, 0xAB, tsc_workspace_size(p, N, H, W)); // must be writable
    tsc_conv_desc const& d = p->desc;
    int32_t P = 0, Q = 0;
    if (tsc_output_dims(&d, H, W, &P, &Q) != TSC_OK)
        return TSC_ERR_INVALID_ARGUMENT;
    int32_t const RS = d.R * d.S;
    // the variant for this shape: the TF32 one rounds both factors of every product to TF32
    bool const tf32 = p->tf32 && p->choiceId == kStubTf32Id && p->choiceN == N && p->choiceH == H && p->choiceW == W;
    auto in = [&](int64_t i) -> double {
        if (p->dtype == TSC_FLOAT32)
        {
            float const v = static_cast<float const*>(input)[i];
            return tf32 ? roundToTf32(v) : v;
        }
        return halfToFloatT(static_cast<uint16_t const*>(input)[i]);
    };
    auto weight = [&](int32_t i) -> double { return tf32 ? roundToTf32(p->values[i]) : p->values[i]; };
    for (int32_t n = 0; n < N; ++n)
        for (int32_t k = 0; k < d.K; ++k)
            for (int32_t y = 0; y < P; ++y)
                for (int32_t x = 0; x < Q; ++x)
                {
                    double acc = p->bias.empty() ? 0.0 : p->bias[k];
                    for (int32_t i = p->offsets[k]; i < p->offsets[k + 1]; ++i)
                    {
                        int32_t const c = p->indices[i] / RS, r = (p->indices[i] % RS) / d.S, s = p->indices[i] % d.S;
                        int64_t const iy = static_cast<int64_t>(y) * d.stride_h - d.pad_top + r * d.dilation_h;
                        int64_t const ix = static_cast<int64_t>(x) * d.stride_w - d.pad_left + s * d.dilation_w;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                            continue;
                        acc += weight(i)
                            * in(p->layout == TSC_NHWC ? ((static_cast<int64_t>(n) * H + iy) * W + ix) * d.C + c
                                                       : ((static_cast<int64_t>(n) * d.C + c) * H + iy) * W + ix);
                    }
                    if (d.activation == TSC_ACT_RELU)
                        acc = acc < 0 ? 0 : acc;
                    else if (d.activation == TSC_ACT_CLIP)
                        acc = acc < d.clip_min ? d.clip_min : (acc > d.clip_max ? d.clip_max : acc);
                    int64_t const o = p->layout == TSC_NHWC ? ((static_cast<int64_t>(n) * P + y) * Q + x) * d.K + k
                                                            : ((static_cast<int64_t>(n) * d.K + k) * P + y) * Q + x;
                    if (p->dtype == TSC_FLOAT32)
                        static_cast<float*>(output)[o] = static_cast<float>(acc);
                    else
                        static_cast<uint16_t*>(output)[o] = floatToHalfT(static_cast<float>(acc));
                }
    return TSC_OK;
}

size_t tsc_plan_describe(const tsc_plan* plan, char* buf, size_t buf_len)
{
    std::string s = plan ? (plan->tf32 ? "cpu-stub plan fp32(tf32-allowed)" : "cpu-stub plan") : "null";
    if (buf && buf_len)
    {
        std::strncpy(buf, s.c_str(), buf_len - 1);
        buf[buf_len - 1] = '\0';
    }
    return s.size() + 1;
}

tsc_status tsc_plan_get_choice(const tsc_plan* plan, int32_t N, int32_t H, int32_t W, int32_t* variant_id)
{
    if (!plan || plan->magic != kLiveMagic || !variant_id || N < 1 || H < 1 || W < 1)
        return fail(TSC_ERR_INVALID_ARGUMENT, "bad plan, pointer or shape");
    bool const tuned = plan->choiceId >= 0 && plan->choiceN == N && plan->choiceH == H && plan->choiceW == W;
    *variant_id = tuned ? plan->choiceId : 0;
    return TSC_OK;
}

tsc_status tsc_plan_set_choice(tsc_plan* plan, int32_t N, int32_t H, int32_t W, int32_t variant_id)
{
    if (!plan || plan->magic != kLiveMagic || N < 1 || H < 1 || W < 1)
        return fail(TSC_ERR_INVALID_ARGUMENT, "bad plan or shape");
    if (variant_id != 0 && variant_id != kStubTunedId && !(variant_id == kStubTf32Id && plan->tf32))
        return fail(TSC_ERR_INVALID_ARGUMENT, "unknown variant id " + std::to_string(variant_id)
                + (variant_id == kStubTf32Id ? " (a TF32 variant: the plan's math does not allow TF32)" : "")
                + " (stub)");
    plan->choiceN = N;
    plan->choiceH = H;
    plan->choiceW = W;
    plan->choiceId = variant_id;
    gLastSet[1] = N;
    gLastSet[2] = H;
    gLastSet[3] = W;
    gLastSet[0] = variant_id;
    return TSC_OK;
}

size_t tsc_plan_device_bytes(const tsc_plan* plan)
{
    return plan ? plan->values.size() * 8 : 0;
}

tsc_status tsc_plan_tune_scratch(tsc_plan* plan, int32_t N, int32_t H, int32_t W)
{
    if (!plan || plan->magic != kLiveMagic || N < 1 || H < 1 || W < 1)
        return fail(TSC_ERR_INVALID_ARGUMENT, "bad plan or shape");
    plan->choiceN = N;
    plan->choiceH = H;
    plan->choiceW = W;
    plan->choiceId = plan->tf32 ? kStubTf32Id : kStubTunedId;
    return TSC_OK;
}

tsc_status tsc_plan_set_math(tsc_plan* plan, int32_t math)
{
    if (!plan || plan->magic != kLiveMagic)
        return fail(TSC_ERR_INVALID_ARGUMENT, "plan is NULL");
    if (math != TSC_MATH_DEFAULT && math != TSC_MATH_ALLOW_TF32)
        return fail(TSC_ERR_INVALID_ARGUMENT, "math must be TSC_MATH_DEFAULT (0) or TSC_MATH_ALLOW_TF32 (1)");
    plan->tf32 = math == TSC_MATH_ALLOW_TF32 && plan->dtype == TSC_FLOAT32; // no effect on fp16 plans
    if (!plan->tf32 && plan->choiceId == kStubTf32Id)
        plan->choiceId = -1; // switching TF32 off forgets a tuned TF32 choice
    return TSC_OK;
}

// Last accepted tsc_plan_set_choice: writes id, N, H, W (id -1 if none since the last reset).
__attribute__((visibility("default"))) void tsc_stub_last_set_choice(int32_t* out4, int32_t reset)
{
    for (int i = 0; i < 4; ++i)
        out4[i] = gLastSet[i].load();
    if (reset)
        gLastSet[0] = -1;
}

__attribute__((visibility("default"))) int32_t tsc_stub_live_plans(void)
{
    return gLive.load();
}

} // extern "C"
