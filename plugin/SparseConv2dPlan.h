/*
 * trt-sparse: kernel plans and the per-plugin runtime state shared by the TensorRT
 * adapters (V3 for TensorRT >= 10, V2DynamicExt for 8.x).
 *
 * A plan (tsc_plan of plugin/kernels/sparse_conv.h) is immutable and may be used
 * from several streams, so clones share it through a shared_ptr: the last owner
 * destroys it (no leak, no double free). Plans are built for the tensor type that
 * TensorRT chose (fp32 or fp16), lazily: creation needs a CUDA device, which an
 * engine build on a CPU-only machine (TensorRT-RTX) does not have.
 * No TensorRT and no CUDA include here.
 */
#ifndef TRT_SPARSE_SPARSE_CONV2D_PLAN_H
#define TRT_SPARSE_SPARSE_CONV2D_PLAN_H

#include "SparseConv2dCore.h"
#include "kernels/sparse_conv.h"

#include <memory>
#include <string>

namespace trt_sparse
{

// Owner of one tsc_plan.
class KernelPlan
{
public:
    // Decodes packed32 words to fp32 on the host and calls tsc_plan_create (I/O layout `layout`); for an
    // fp32 plan of a spec with allow_tf32 = 1 also tsc_plan_set_math(TSC_MATH_ALLOW_TF32) (fp16: nothing).
    static std::shared_ptr<KernelPlan const> create(
        ConvSpec const& spec, tsc_dtype dtype, tsc_layout layout, tsc_status& status, std::string& err);
    ~KernelPlan();
    KernelPlan(KernelPlan const&) = delete;
    KernelPlan& operator=(KernelPlan const&) = delete;

    tsc_plan* get() const { return mPlan; }
    tsc_dtype dtype() const { return mDtype; }
    tsc_layout layout() const { return mLayout; }

private:
    KernelPlan(tsc_plan* plan, tsc_dtype dtype, tsc_layout layout)
        : mPlan(plan)
        , mDtype(dtype)
        , mLayout(layout)
    {
    }
    tsc_plan* mPlan;
    tsc_dtype mDtype;
    tsc_layout mLayout;
};

// Conversion of a tsc_desc from a spec.
tsc_conv_desc makeDesc(ConvSpec const& spec);

// Spec + plan of one plugin object; copyable (a copy shares spec and plan).
class SparseConvState
{
public:
    explicit SparseConvState(std::shared_ptr<ConvSpec const> spec);

    ConvSpec const& spec() const { return *mSpec; }

    // tsc_dtype of the configured tensor type, or -1 before configuration.
    int32_t dtype() const { return mDtype; }
    void setDtype(int32_t dtype) { mDtype = dtype; }

    // tsc_layout of the configured tensor format (NCHW for kLINEAR, NHWC for kHWC / kHWC8; NCHW until
    // configured).
    int32_t layout() const { return mLayout; }
    void setLayout(int32_t layout) { mLayout = layout; }

    bool hasPlan() const { return mPlan != nullptr; }

    // Make sure a plan for the configured dtype and layout exists (recreates it if either changed).
    // Returns TSC_OK, or the failing status with err set. Logs nothing.
    tsc_status ensurePlan(std::string& err);

    // ensurePlan for configure-time callers: returns 0 on success, 0 with a warning when
    // only the CUDA device is missing (plan deferred to enqueue), -1 (logged) otherwise.
    int32_t preparePlan(char const* where);

    void releasePlan() { mPlan.reset(); }

    // Tuned kernel choice (serialized with the plugin). setTactic: from a deserialized plugin (also sets the
    // layout to the tactic's); it is applied (tsc_plan_set_choice) whenever a plan of the tactic's dtype and
    // layout is created.
    Tactic const& tactic() const { return mTactic; }
    void setTactic(Tactic const& t);

    // ENGINE BUILD time only (never during enqueue / graph capture): time the kernel variants for
    // input n x h x w on scratch buffers the kernel library allocates and frees itself, and keep the
    // winner as the tactic. Does nothing without a plan (no CUDA device: TensorRT-RTX on a CPU
    // machine), when this shape and dtype are tuned already, or with env TRT_SPARSE_NO_TUNE=1;
    // a failure only logs a warning.
    void tune(int64_t n, int64_t h, int64_t w, char const* where);

    // Workspace for an input of N x C x H x W (the profile's max); 0 and a warning when
    // no plan can be created here. Remembers the largest value it reported.
    size_t workspaceSize(int64_t N, int64_t H, int64_t W);

    // Validates the runtime shapes and launches the kernel; 0 on success, -1 (logged) on error.
    int32_t enqueue(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t P, int64_t Q, void const* input,
        void* output, void* workspace, void* stream);

private:
    std::shared_ptr<ConvSpec const> mSpec;
    std::shared_ptr<KernelPlan const> mPlan;
    int32_t mDtype{-1};
    int32_t mLayout{TSC_NCHW};
    size_t mWorkspaceReported{0};
    bool mWorkspaceKnown{false};
    Tactic mTactic{};

    void applyTactic();
};

} // namespace trt_sparse

#endif // TRT_SPARSE_SPARSE_CONV2D_PLAN_H
