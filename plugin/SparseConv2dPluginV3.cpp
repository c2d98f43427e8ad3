/*
 * trt-sparse: SparseConv2d IPluginV3 adapter (TensorRT >= 10, TensorRT-RTX).
 */
#include "SparseConv2dPluginV3.h"

#if NV_TENSORRT_MAJOR >= 10

#include "SparseConv2dTrtUtils.h"

#include <algorithm>

namespace trt_sparse
{

using namespace nvinfer1;

// ------------------------------------------------------------------ plugin
SparseConv2dPluginV3::SparseConv2dPluginV3(
    std::string name, std::string nameSpace, std::shared_ptr<ConvSpec const> spec)
    : mName(std::move(name))
    , mNamespace(std::move(nameSpace))
    , mSpec(spec)
    , mState(spec)
{
}

SparseConv2dPluginV3::SparseConv2dPluginV3(SparseConv2dPluginV3 const& other)
    : IPluginV3(other)
    , IPluginV3OneCore(other)
    , IPluginV3OneBuild(other)
    , IPluginV3OneRuntime(other)
    , mName(other.mName)
    , mNamespace(other.mNamespace)
    , mSpec(other.mSpec)
    , mState(other.mState) // shares the immutable spec and kernel plan
{
}

IPluginCapability* SparseConv2dPluginV3::getCapabilityInterface(PluginCapabilityType type) noexcept
{
    switch (type)
    {
    case PluginCapabilityType::kCORE: return static_cast<IPluginV3OneCore*>(this);
    case PluginCapabilityType::kBUILD: return static_cast<IPluginV3OneBuild*>(this);
    case PluginCapabilityType::kRUNTIME: return static_cast<IPluginV3OneRuntime*>(this);
    }
    return nullptr;
}

IPluginV3* SparseConv2dPluginV3::clone() noexcept
{
    return guarded<IPluginV3*>("clone", nullptr, [&]() -> IPluginV3* { return new SparseConv2dPluginV3(*this); });
}

char const* SparseConv2dPluginV3::getPluginName() const noexcept
{
    return kPluginName;
}

char const* SparseConv2dPluginV3::getPluginVersion() const noexcept
{
    return kPluginVersion;
}

char const* SparseConv2dPluginV3::getPluginNamespace() const noexcept
{
    return mNamespace.c_str();
}

int32_t SparseConv2dPluginV3::getNbOutputs() const noexcept
{
    return 1;
}

int32_t SparseConv2dPluginV3::getOutputDataTypes(
    DataType* outputTypes, int32_t nbOutputs, DataType const* inputTypes, int32_t nbInputs) const noexcept
{
    return guarded<int32_t>("getOutputDataTypes", -1, [&]() -> int32_t {
        if (nbInputs != 1 || nbOutputs != 1 || outputTypes == nullptr || inputTypes == nullptr)
        {
            logMessage(LogLevel::kERROR, "getOutputDataTypes: expects 1 input and 1 output");
            return -1;
        }
        if (kernelDtype(inputTypes[0]) < 0)
        {
            logMessage(LogLevel::kERROR, "getOutputDataTypes: input must be fp32 or fp16 (layer " + mName + ")");
            return -1;
        }
        outputTypes[0] = inputTypes[0];
        return 0;
    });
}

int32_t SparseConv2dPluginV3::getOutputShapes(DimsExprs const* inputs, int32_t nbInputs,
    DimsExprs const* /*shapeInputs*/, int32_t /*nbShapeInputs*/, DimsExprs* outputs, int32_t nbOutputs,
    IExprBuilder& exprBuilder) noexcept
{
    return guarded<int32_t>("getOutputShapes", -1, [&]() -> int32_t {
        if (nbInputs != 1 || nbOutputs != 1 || inputs == nullptr || outputs == nullptr || inputs[0].nbDims != 4)
        {
            logMessage(LogLevel::kERROR, "getOutputShapes: expects one 4-D NCHW input and one output (layer "
                    + mName + ")");
            return -1;
        }
        if (!inputChannelsMatch(*mSpec, mName, "getOutputShapes", inputs[0]))
        {
            return -1;
        }
        if (!convOutputDims(*mSpec, inputs[0], exprBuilder, outputs[0]))
        {
            logMessage(LogLevel::kERROR, "getOutputShapes failed (layer " + mName + ")");
            return -1;
        }
        return 0;
    });
}

bool SparseConv2dPluginV3::supportsFormatCombination(
    int32_t pos, DynamicPluginTensorDesc const* inOut, int32_t nbInputs, int32_t nbOutputs) noexcept
{
    return guarded<bool>("supportsFormatCombination", false, [&]() -> bool {
        if (inOut == nullptr || nbInputs != 1 || nbOutputs != 1 || pos < 0 || pos > 1)
        {
            return false;
        }
        PluginTensorDesc const descs[2] = {inOut[0].desc, inOut[1].desc};
        return supportedCombination(*mSpec, pos, descs);
    });
}

int32_t SparseConv2dPluginV3::configurePlugin(
    DynamicPluginTensorDesc const* in, int32_t nbInputs, DynamicPluginTensorDesc const* out, int32_t nbOutputs) noexcept
{
    return guarded<int32_t>("configurePlugin", -1, [&]() -> int32_t {
        int64_t n = 0, h = 0, w = 0;
        int32_t layout = -1;
        int32_t const dt = configuredDtype(*mSpec, mName, in, nbInputs, out, nbOutputs, n, h, w, layout);
        if (dt < 0)
        {
            return -1;
        }
        mState.setDtype(dt);
        mState.setLayout(layout);
        int32_t const st = mState.preparePlan("configurePlugin");
        if (st == 0)
        {
            // engine build: time the kernel variants for the profile's opt shape (the shape itself when
            // static), keep the winner as the tactic serialized with the plugin (no-op without a device)
            int64_t tn = n, tc = 0, th = h, tw = w;
            if (tn < 1 || th < 1 || tw < 1)
            {
                (void) dims4(in[0].opt, tn, tc, th, tw);
            }
            mState.tune(tn, th, tw, "configurePlugin");
        }
        return st;
    });
}

size_t SparseConv2dPluginV3::getWorkspaceSize(DynamicPluginTensorDesc const* inputs, int32_t nbInputs,
    DynamicPluginTensorDesc const* /*outputs*/, int32_t /*nbOutputs*/) const noexcept
{
    return guarded<size_t>("getWorkspaceSize", 0, [&]() -> size_t {
        if (inputs == nullptr || nbInputs != 1)
        {
            return 0;
        }
        int64_t n = 0, c = 0, h = 0, w = 0;
        if (!dims4(inputs[0].max, n, c, h, w) || n < 0 || h < 0 || w < 0)
        {
            if (!dims4(inputs[0].desc.dims, n, c, h, w) || n < 0 || h < 0 || w < 0)
            {
                logMessage(LogLevel::kWARNING, "getWorkspaceSize: no max input shape; reporting 0 bytes");
                return 0;
            }
        }
        int32_t const dt = kernelDtype(inputs[0].desc.type);
        if (dt >= 0)
        {
            mState.setDtype(dt);
        }
        return mState.workspaceSize(n, h, w);
    });
}

int32_t SparseConv2dPluginV3::onShapeChange(
    PluginTensorDesc const* in, int32_t nbInputs, PluginTensorDesc const* out, int32_t nbOutputs) noexcept
{
    return guarded<int32_t>("onShapeChange", -1, [&]() -> int32_t {
        if (in == nullptr || out == nullptr || nbInputs != 1 || nbOutputs != 1)
        {
            return -1;
        }
        int64_t n = 0, c = 0, h = 0, w = 0;
        int64_t on = 0, k = 0, p = 0, q = 0, P = 0, Q = 0;
        if (!dims4(in[0].dims, n, c, h, w) || !dims4(out[0].dims, on, k, p, q) || c != mSpec->C || k != mSpec->K
            || on != n || !outputDims(*mSpec, h, w, P, Q) || P != p || Q != q)
        {
            logMessage(LogLevel::kERROR, "onShapeChange: shapes do not match the convolution (layer " + mName + ")");
            return -1;
        }
        int32_t const dt = kernelDtype(in[0].type);
        if (dt < 0 || out[0].type != in[0].type)
        {
            logMessage(LogLevel::kERROR, "onShapeChange: input and output must both be fp32 or both fp16");
            return -1;
        }
        int32_t const layout = ioPairLayout(*mSpec, in[0], out[0]);
        if (layout < 0)
        {
            logMessage(LogLevel::kERROR, "onShapeChange: unsupported tensor format (layer " + mName + ")");
            return -1;
        }
        mState.setDtype(dt);
        mState.setLayout(layout);
        return mState.preparePlan("onShapeChange");
    });
}

int32_t SparseConv2dPluginV3::enqueue(PluginTensorDesc const* inputDesc, PluginTensorDesc const* outputDesc,
    void const* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) noexcept
{
    return guarded<int32_t>("enqueue", -1, [&]() -> int32_t {
        return enqueueConv(mState, mName, inputDesc, outputDesc, inputs, outputs, workspace, stream);
    });
}

IPluginV3* SparseConv2dPluginV3::attachToContext(IPluginResourceContext* /*context*/) noexcept
{
    return clone();
}

PluginFieldCollection const* SparseConv2dPluginV3::getFieldsToSerialize() noexcept
{
    return guarded<PluginFieldCollection const*>("getFieldsToSerialize", nullptr, [&]() -> PluginFieldCollection const* {
        std::vector<FieldView> views = specToFields(*mSpec, mSerialScratch); // views into members of this object
        Tactic const& t = mState.tactic();
        if (t.valid())
        {
            int32_t const v[kTacticLength] = {t.id, t.n, t.h, t.w, t.io()};
            std::copy(v, v + kTacticLength, mSerialTactic);
            FieldView tv;
            tv.name = kTacticField;
            tv.data = mSerialTactic;
            tv.type = static_cast<int32_t>(FieldType::kINT32);
            tv.length = kTacticLength;
            views.push_back(tv);
        }
        mSerialFields = toPluginFields(views);
        mSerialFc.nbFields = static_cast<int32_t>(mSerialFields.size());
        mSerialFc.fields = mSerialFields.data();
        return &mSerialFc;
    });
}

// ------------------------------------------------------------------ creator
SparseConv2dCreatorV3::SparseConv2dCreatorV3()
    : mFields(declaredFields())
{
    mFc.nbFields = static_cast<int32_t>(mFields.size());
    mFc.fields = mFields.data();
}

IPluginV3* SparseConv2dCreatorV3::createPlugin(
    char const* name, PluginFieldCollection const* fc, TensorRTPhase phase) noexcept
{
    return guarded<IPluginV3*>("createPlugin", nullptr, [&]() -> IPluginV3* {
        std::string const layer = name == nullptr ? std::string("?") : std::string(name);
        std::vector<FieldView> const views = toFieldViews(fc);
        auto spec = std::make_shared<ConvSpec>();
        std::string err;
        if (!parseFields(views.data(), static_cast<int32_t>(views.size()), *spec, err))
        {
            logMessage(LogLevel::kERROR,
                std::string(phase == TensorRTPhase::kRUNTIME ? "deserializing" : "creating") + " layer '" + layer
                    + "': " + err);
            return nullptr;
        }
        Tactic tactic;
        if (!parseTactic(views.data(), static_cast<int32_t>(views.size()), tactic, err))
        {
            logMessage(LogLevel::kWARNING, "layer '" + layer + "': " + err + "; ignored (heuristic kernel choice)");
            tactic = Tactic();
        }
        logMessage(LogLevel::kINFO, "created layer '" + layer + "': " + describeSpec(*spec));
        auto* plugin = new SparseConv2dPluginV3(layer, kPluginNamespace, std::move(spec));
        plugin->setTactic(tactic);
        return plugin;
    });
}

PluginFieldCollection const* SparseConv2dCreatorV3::getFieldNames() noexcept
{
    return &mFc;
}

char const* SparseConv2dCreatorV3::getPluginName() const noexcept
{
    return kPluginName;
}

char const* SparseConv2dCreatorV3::getPluginVersion() const noexcept
{
    return kPluginVersion;
}

char const* SparseConv2dCreatorV3::getPluginNamespace() const noexcept
{
    return kPluginNamespace;
}

} // namespace trt_sparse

#endif // NV_TENSORRT_MAJOR >= 10
