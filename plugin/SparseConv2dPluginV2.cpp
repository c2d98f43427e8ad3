/*
 * trt-sparse: SparseConv2d IPluginV2DynamicExt adapter (TensorRT 8.x). C++14.
 */
#include "SparseConv2dPluginV2.h"

#if NV_TENSORRT_MAJOR < 10

#include "SparseConv2dTrtUtils.h"

// TensorRT 8.5+ headers mark IPluginV2 deprecated, but IPluginCreator::createPlugin and
// deserializePlugin must return it: silence that one diagnostic for this adapter only.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace trt_sparse
{

using namespace nvinfer1;

namespace
{
DimsExprs failedDims()
{
    DimsExprs out{};
    out.nbDims = 0;
    return out;
}
} // namespace

// ------------------------------------------------------------------ plugin
SparseConv2dPluginV2::SparseConv2dPluginV2(std::string name, std::shared_ptr<ConvSpec const> spec, int32_t dtypeTag)
    : mName(std::move(name))
    , mSpec(spec)
    , mState(spec)
{
    mState.setDtype(dtypeTag);
}

char const* SparseConv2dPluginV2::getPluginType() const noexcept
{
    return kPluginName;
}

char const* SparseConv2dPluginV2::getPluginVersion() const noexcept
{
    return kPluginVersion;
}

int32_t SparseConv2dPluginV2::getNbOutputs() const noexcept
{
    return 1;
}

int32_t SparseConv2dPluginV2::initialize() noexcept
{
    return guarded<int32_t>("initialize", -1, [&]() -> int32_t {
        if (mState.dtype() < 0)
        {
            return 0; // not configured yet: the plan is built in configurePlugin or enqueue
        }
        return mState.preparePlan("initialize");
    });
}

void SparseConv2dPluginV2::terminate() noexcept
{
    guardedVoid("terminate", [&]() { mState.releasePlan(); });
}

size_t SparseConv2dPluginV2::getSerializationSize() const noexcept
{
    return guarded<size_t>(
        "getSerializationSize", 0, [&]() -> size_t { return serializedSize(*mSpec, mState.tactic()); });
}

void SparseConv2dPluginV2::serialize(void* buffer) const noexcept
{
    guardedVoid("serialize", [&]() {
        if (buffer != nullptr)
        {
            serializeSpec(*mSpec, mState.dtype(), mState.tactic(), buffer);
        }
    });
}

void SparseConv2dPluginV2::destroy() noexcept
{
    delete this;
}

void SparseConv2dPluginV2::setPluginNamespace(char const* pluginNamespace) noexcept
{
    guardedVoid("setPluginNamespace", [&]() { mNamespace = pluginNamespace == nullptr ? "" : pluginNamespace; });
}

char const* SparseConv2dPluginV2::getPluginNamespace() const noexcept
{
    return mNamespace.c_str();
}

DataType SparseConv2dPluginV2::getOutputDataType(
    int32_t /*index*/, DataType const* inputTypes, int32_t nbInputs) const noexcept
{
    if (inputTypes == nullptr || nbInputs < 1)
    {
        return DataType::kFLOAT;
    }
    return inputTypes[0];
}

IPluginV2DynamicExt* SparseConv2dPluginV2::clone() const noexcept
{
    return guarded<IPluginV2DynamicExt*>(
        "clone", nullptr, [&]() -> IPluginV2DynamicExt* { return new SparseConv2dPluginV2(*this); });
}

DimsExprs SparseConv2dPluginV2::getOutputDimensions(
    int32_t outputIndex, DimsExprs const* inputs, int32_t nbInputs, IExprBuilder& exprBuilder) noexcept
{
    return guarded<DimsExprs>("getOutputDimensions", failedDims(), [&]() -> DimsExprs {
        if (outputIndex != 0 || nbInputs != 1 || inputs == nullptr || inputs[0].nbDims != 4)
        {
            logMessage(LogLevel::kERROR, "getOutputDimensions: expects one 4-D NCHW input (layer " + mName + ")");
            return failedDims();
        }
        if (!inputChannelsMatch(*mSpec, mName, "getOutputDimensions", inputs[0]))
        {
            return failedDims();
        }
        DimsExprs out{};
        if (!convOutputDims(*mSpec, inputs[0], exprBuilder, out))
        {
            return failedDims();
        }
        return out;
    });
}

bool SparseConv2dPluginV2::supportsFormatCombination(
    int32_t pos, PluginTensorDesc const* inOut, int32_t nbInputs, int32_t nbOutputs) noexcept
{
    return guarded<bool>("supportsFormatCombination", false, [&]() -> bool {
        if (inOut == nullptr || nbInputs != 1 || nbOutputs != 1 || pos < 0 || pos > 1)
        {
            return false;
        }
        return supportedCombination(*mSpec, pos, inOut);
    });
}

void SparseConv2dPluginV2::configurePlugin(
    DynamicPluginTensorDesc const* in, int32_t nbInputs, DynamicPluginTensorDesc const* out, int32_t nbOutputs) noexcept
{
    guardedVoid("configurePlugin", [&]() {
        int64_t n = 0, h = 0, w = 0;
        int32_t layout = -1;
        int32_t const dt = configuredDtype(*mSpec, mName, in, nbInputs, out, nbOutputs, n, h, w, layout);
        if (dt < 0)
        {
            return;
        }
        mState.setDtype(dt);
        mState.setLayout(layout);
        // void method: failures resurface (logged) in enqueue
        if (mState.preparePlan("configurePlugin") == 0 && mBuildPhase)
        {
            // engine build: time the kernel variants for the input shape (the profile's max when
            // dynamic) and keep the winner as the tactic serialized in the blob (no-op without a device)
            int64_t tn = n, tc = 0, th = h, tw = w;
            if (tn < 1 || th < 1 || tw < 1)
            {
                (void) dims4(in[0].max, tn, tc, th, tw);
            }
            mState.tune(tn, th, tw, "configurePlugin");
        }
    });
}

size_t SparseConv2dPluginV2::getWorkspaceSize(
    PluginTensorDesc const* inputs, int32_t nbInputs, PluginTensorDesc const* /*outputs*/, int32_t /*nbOutputs*/) const noexcept
{
    return guarded<size_t>("getWorkspaceSize", 0, [&]() -> size_t {
        int64_t n = 0, c = 0, h = 0, w = 0;
        if (inputs == nullptr || nbInputs != 1 || !dims4(inputs[0].dims, n, c, h, w) || n < 0 || h < 0 || w < 0)
        {
            return 0;
        }
        int32_t const dt = kernelDtype(inputs[0].type);
        if (dt >= 0)
        {
            mState.setDtype(dt);
        }
        return mState.workspaceSize(n, h, w);
    });
}

int32_t SparseConv2dPluginV2::enqueue(PluginTensorDesc const* inputDesc, PluginTensorDesc const* outputDesc,
    void const* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) noexcept
{
    return guarded<int32_t>("enqueue", -1, [&]() -> int32_t {
        return enqueueConv(mState, mName, inputDesc, outputDesc, inputs, outputs, workspace, stream);
    });
}

// ------------------------------------------------------------------ creator
SparseConv2dCreatorV2::SparseConv2dCreatorV2()
    : mFields(declaredFields())
{
    mFc.nbFields = static_cast<int32_t>(mFields.size());
    mFc.fields = mFields.data();
}

char const* SparseConv2dCreatorV2::getPluginName() const noexcept
{
    return kPluginName;
}

char const* SparseConv2dCreatorV2::getPluginVersion() const noexcept
{
    return kPluginVersion;
}

PluginFieldCollection const* SparseConv2dCreatorV2::getFieldNames() noexcept
{
    return &mFc;
}

IPluginV2* SparseConv2dCreatorV2::createPlugin(char const* name, PluginFieldCollection const* fc) noexcept
{
    return guarded<IPluginV2*>("createPlugin", nullptr, [&]() -> IPluginV2* {
        std::string const layer = name == nullptr ? std::string("?") : std::string(name);
        std::vector<FieldView> const views = toFieldViews(fc);
        auto spec = std::make_shared<ConvSpec>();
        std::string err;
        if (!parseFields(views.data(), static_cast<int32_t>(views.size()), *spec, err))
        {
            logMessage(LogLevel::kERROR, "creating layer '" + layer + "': " + err);
            return nullptr;
        }
        auto* plugin = new SparseConv2dPluginV2(layer, std::move(spec), -1);
        plugin->setPluginNamespace(mNamespace.c_str());
        plugin->setBuildPhase(true);
        return plugin;
    });
}

IPluginV2* SparseConv2dCreatorV2::deserializePlugin(
    char const* name, void const* serialData, size_t serialLength) noexcept
{
    return guarded<IPluginV2*>("deserializePlugin", nullptr, [&]() -> IPluginV2* {
        std::string const layer = name == nullptr ? std::string("?") : std::string(name);
        auto spec = std::make_shared<ConvSpec>();
        int32_t dtypeTag = -1;
        Tactic tactic;
        std::string err;
        if (!deserializeSpec(serialData, serialLength, *spec, dtypeTag, tactic, err))
        {
            logMessage(LogLevel::kERROR, "deserializing layer '" + layer + "': " + err);
            return nullptr;
        }
        auto* plugin = new SparseConv2dPluginV2(layer, std::move(spec), dtypeTag);
        plugin->setPluginNamespace(mNamespace.c_str());
        plugin->setTactic(tactic);
        return plugin;
    });
}

void SparseConv2dCreatorV2::setPluginNamespace(char const* pluginNamespace) noexcept
{
    guardedVoid("setPluginNamespace", [&]() { mNamespace = pluginNamespace == nullptr ? "" : pluginNamespace; });
}

char const* SparseConv2dCreatorV2::getPluginNamespace() const noexcept
{
    return mNamespace.c_str();
}

} // namespace trt_sparse

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif // NV_TENSORRT_MAJOR < 10
