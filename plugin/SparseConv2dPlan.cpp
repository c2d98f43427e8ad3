/*
 * trt-sparse: kernel plans and per-plugin runtime state (see the header).
 */
#include "SparseConv2dPlan.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <vector>

namespace trt_sparse
{

namespace
{
std::string tscError(char const* call, tsc_status status)
{
    std::string msg = std::string(call) + " failed: " + tsc_status_string(status);
    char const* detail = tsc_last_error();
    if (detail != nullptr && detail[0] != '\0')
    {
        msg += ": ";
        msg += detail;
    }
    return msg;
}

bool fitsInt32(int64_t v)
{
    return v >= 0 && v <= std::numeric_limits<int32_t>::max();
}

// "No CUDA device here" is expected for every layer of an engine built on a CPU-only
// machine (TensorRT-RTX): say it once per process, not twice per layer.
void warnNoDeviceOnce(std::string const& message)
{
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
    {
        logMessage(LogLevel::kWARNING, message + " (further 'no device' messages suppressed)");
    }
    else
    {
        logMessage(LogLevel::kINFO, message);
    }
}
} // namespace

tsc_conv_desc makeDesc(ConvSpec const& s)
{
    tsc_conv_desc d;
    d.K = s.K;
    d.C = s.C;
    d.R = s.R;
    d.S = s.S;
    d.stride_h = s.stride_h;
    d.stride_w = s.stride_w;
    d.pad_top = s.pad_top;
    d.pad_left = s.pad_left;
    d.pad_bottom = s.pad_bottom;
    d.pad_right = s.pad_right;
    d.dilation_h = s.dilation_h;
    d.dilation_w = s.dilation_w;
    d.activation = s.activation;
    d.clip_min = s.clip_min;
    d.clip_max = s.clip_max;
    return d;
}

std::shared_ptr<KernelPlan const> KernelPlan::create(
    ConvSpec const& spec, tsc_dtype dtype, tsc_layout layout, tsc_status& status, std::string& err)
{
    std::vector<int32_t> indices;
    std::vector<float> values;
    decodeWeights(spec, indices, values);
    tsc_conv_desc const desc = makeDesc(spec);
    tsc_weights w;
    w.row_offsets = spec.row_offsets.data();
    w.indices = indices.empty() ? nullptr : indices.data();
    w.values = values.empty() ? nullptr : values.data();
    w.bias = spec.bias.empty() ? nullptr : spec.bias.data();
    tsc_plan* plan = nullptr;
    status = tsc_plan_create(&desc, &w, dtype, layout, &plan);
    if (status != TSC_OK || plan == nullptr)
    {
        if (status == TSC_OK)
        {
            status = TSC_ERR_INVALID_ARGUMENT;
        }
        err = tscError("tsc_plan_create", status);
        tsc_plan_destroy(plan);
        return nullptr;
    }
    // allow_tf32: fp32 plans may also run the TF32 tensor-core variants. Set before anything tunes or
    // applies a stored choice (a TF32 tactic is refused by a plan without it); fp16 plans ignore it.
    if (spec.allow_tf32 != 0 && dtype == TSC_FLOAT32)
    {
        status = tsc_plan_set_math(plan, TSC_MATH_ALLOW_TF32);
        if (status != TSC_OK)
        {
            err = tscError("tsc_plan_set_math", status);
            tsc_plan_destroy(plan);
            return nullptr;
        }
    }
    return std::shared_ptr<KernelPlan const>(new KernelPlan(plan, dtype, layout));
}

KernelPlan::~KernelPlan()
{
    tsc_plan_destroy(mPlan);
}

SparseConvState::SparseConvState(std::shared_ptr<ConvSpec const> spec)
    : mSpec(std::move(spec))
{
}

tsc_status SparseConvState::ensurePlan(std::string& err)
{
    if (mDtype != TSC_FLOAT32 && mDtype != TSC_FLOAT16)
    {
        err = "the tensor type is not configured (fp32 or fp16 expected)";
        return TSC_ERR_INVALID_ARGUMENT;
    }
    if (mLayout != TSC_NCHW && mLayout != TSC_NHWC)
    {
        err = "the tensor format is not supported (linear NCHW or channel-last expected)";
        return TSC_ERR_INVALID_ARGUMENT;
    }
    if (mPlan != nullptr && mPlan->dtype() == static_cast<tsc_dtype>(mDtype)
        && mPlan->layout() == static_cast<tsc_layout>(mLayout))
    {
        return TSC_OK;
    }
    mPlan.reset();
    tsc_status status = TSC_OK;
    mPlan = KernelPlan::create(*mSpec, static_cast<tsc_dtype>(mDtype), static_cast<tsc_layout>(mLayout), status, err);
    if (status == TSC_OK && mPlan != nullptr)
    {
        applyTactic();
    }
    return status;
}

void SparseConvState::setTactic(Tactic const& t)
{
    mTactic = checkTactic(t) ? t : Tactic();
    if (mTactic.valid())
    {
        // a stored tactic comes with the engine's I/O layout: a plan created before the runtime configures the
        // formats (V2 initialize) is then already the right one, not recreated at the first enqueue
        mLayout = mTactic.layout;
    }
    if (mPlan != nullptr)
    {
        applyTactic();
    }
}

void SparseConvState::applyTactic()
{
    if (!mTactic.valid() || mPlan == nullptr || mTactic.dtype != static_cast<int32_t>(mPlan->dtype())
        || mTactic.layout != static_cast<int32_t>(mPlan->layout()))
    {
        return;
    }
    tsc_status const st = tsc_plan_set_choice(mPlan->get(), mTactic.n, mTactic.h, mTactic.w, mTactic.id);
    if (st != TSC_OK)
    {
        // e.g. an engine built with another kernel library build: the heuristic choice still runs
        logMessage(LogLevel::kWARNING,
            "stored tactic " + std::to_string(mTactic.id) + " not applied (heuristic choice used): "
                + tscError("tsc_plan_set_choice", st) + " [" + describeSpec(*mSpec) + "]");
    }
}

void SparseConvState::tune(int64_t n, int64_t h, int64_t w, char const* where)
{
    if (!fitsInt32(n) || !fitsInt32(h) || !fitsInt32(w) || n < 1 || h < 1 || w < 1)
    {
        return;
    }
    if (mPlan == nullptr || (mDtype != TSC_FLOAT32 && mDtype != TSC_FLOAT16))
    {
        return; // no device here (plan deferred): nothing to time
    }
    char const* off = std::getenv("TRT_SPARSE_NO_TUNE");
    if (off != nullptr && off[0] == '1')
    {
        return; // heuristic choice only (faster engine builds, e.g. under compute-sanitizer)
    }
    if (mTactic.valid() && mTactic.n == n && mTactic.h == h && mTactic.w == w && mTactic.dtype == mDtype
        && mTactic.layout == mLayout)
    {
        return;
    }
    int32_t const n32 = static_cast<int32_t>(n);
    int32_t const h32 = static_cast<int32_t>(h);
    int32_t const w32 = static_cast<int32_t>(w);
    char const* call = "tsc_plan_tune_scratch";
    tsc_status st = tsc_plan_tune_scratch(mPlan->get(), n32, h32, w32);
    int32_t id = -1;
    if (st == TSC_OK)
    {
        call = "tsc_plan_get_choice";
        st = tsc_plan_get_choice(mPlan->get(), n32, h32, w32, &id);
    }
    if (st != TSC_OK)
    {
        logMessage(LogLevel::kWARNING,
            std::string(where) + ": kernel tuning skipped (heuristic choice used): " + tscError(call, st));
        return;
    }
    Tactic t;
    t.id = id;
    t.n = n32;
    t.h = h32;
    t.w = w32;
    t.dtype = mDtype;
    t.layout = mLayout;
    mTactic = checkTactic(t) ? t : Tactic();
    logMessage(LogLevel::kINFO,
        std::string(where) + ": tuned kernel variant " + std::to_string(id) + " for input " + std::to_string(n) + "x"
            + std::to_string(h) + "x" + std::to_string(w) + " [" + describeSpec(*mSpec) + "]");
}

int32_t SparseConvState::preparePlan(char const* where)
{
    std::string err;
    tsc_status const st = ensurePlan(err);
    if (st == TSC_OK)
    {
        return 0;
    }
    if (st == TSC_ERR_CUDA)
    {
        warnNoDeviceOnce(std::string(where) + ": kernel plan deferred to enqueue (no usable CUDA device here?): " + err);
        return 0;
    }
    logMessage(LogLevel::kERROR, std::string(where) + ": " + err + " [" + describeSpec(*mSpec) + "]");
    return -1;
}

size_t SparseConvState::workspaceSize(int64_t N, int64_t H, int64_t W)
{
    std::string err;
    if (!fitsInt32(N) || !fitsInt32(H) || !fitsInt32(W))
    {
        logMessage(LogLevel::kERROR, "getWorkspaceSize: input dims out of the int32 range");
        return 0;
    }
    tsc_status const st = ensurePlan(err);
    if (st == TSC_ERR_CUDA)
    {
        warnNoDeviceOnce("getWorkspaceSize: no kernel plan (" + err + "); reporting 0 bytes");
        return 0;
    }
    if (st != TSC_OK)
    {
        logMessage(LogLevel::kERROR, "getWorkspaceSize: no kernel plan (" + err + "); reporting 0 bytes");
        return 0;
    }
    size_t const ws = tsc_workspace_size(mPlan->get(), static_cast<int32_t>(N), static_cast<int32_t>(H),
        static_cast<int32_t>(W));
    if (!mWorkspaceKnown || ws > mWorkspaceReported)
    {
        mWorkspaceReported = ws;
    }
    mWorkspaceKnown = true;
    return ws;
}

int32_t SparseConvState::enqueue(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t P, int64_t Q,
    void const* input, void* output, void* workspace, void* stream)
{
    ConvSpec const& s = *mSpec;
    if (C != s.C || K != s.K)
    {
        logMessage(LogLevel::kERROR,
            "enqueue: input has " + std::to_string(C) + " channels / output " + std::to_string(K)
                + ", the weight is (K=" + std::to_string(s.K) + ", C=" + std::to_string(s.C) + ")");
        return -1;
    }
    if (!fitsInt32(N) || !fitsInt32(H) || !fitsInt32(W))
    {
        logMessage(LogLevel::kERROR, "enqueue: input dims out of the int32 range");
        return -1;
    }
    int64_t p = 0;
    int64_t q = 0;
    if (!outputDims(s, H, W, p, q) || p != P || q != Q)
    {
        logMessage(LogLevel::kERROR,
            "enqueue: input " + std::to_string(H) + "x" + std::to_string(W) + " does not give the output "
                + std::to_string(P) + "x" + std::to_string(Q));
        return -1;
    }
    if (N == 0)
    {
        return 0;
    }
    std::string err;
    tsc_status st = ensurePlan(err);
    if (st != TSC_OK)
    {
        logMessage(LogLevel::kERROR, "enqueue: " + err);
        return -1;
    }
    int32_t const n = static_cast<int32_t>(N);
    int32_t const h = static_cast<int32_t>(H);
    int32_t const w = static_cast<int32_t>(W);
    size_t const need = tsc_workspace_size(mPlan->get(), n, h, w);
    if ((need > 0 && workspace == nullptr) || (mWorkspaceKnown && need > mWorkspaceReported))
    {
        logMessage(LogLevel::kERROR,
            "enqueue: the kernel needs " + std::to_string(need) + " workspace bytes, TensorRT provided "
                + (workspace == nullptr ? std::string("none") : std::to_string(mWorkspaceReported)));
        return -1;
    }
    st = tsc_enqueue(mPlan->get(), n, h, w, input, output, workspace, stream);
    if (st != TSC_OK)
    {
        logMessage(LogLevel::kERROR, "enqueue: " + tscError("tsc_enqueue", st));
        return -1;
    }
    return 0;
}

} // namespace trt_sparse
