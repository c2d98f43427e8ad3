/*
 * trt-sparse: SparseConv2d as IPluginV2DynamicExt and its IPluginCreator, for
 * TensorRT 8.x (JetPack 4.6 / 5.x). C++14. The serialized blob is the core's V2
 * blob (magic, version, dtype, geometry, arrays, checksum; every read bounds-checked).
 */
#ifndef TRT_SPARSE_SPARSE_CONV2D_PLUGIN_V2_H
#define TRT_SPARSE_SPARSE_CONV2D_PLUGIN_V2_H

#include "NvInferRuntime.h"

#if NV_TENSORRT_MAJOR < 10

#include "SparseConv2dCore.h"
#include "SparseConv2dPlan.h"

#include <memory>
#include <string>
#include <vector>

// TensorRT 8.5+ headers mark IPluginV2 deprecated, but IPluginCreator::createPlugin and
// deserializePlugin must return it: silence that one diagnostic for this adapter only.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace trt_sparse
{

class SparseConv2dPluginV2 : public nvinfer1::IPluginV2DynamicExt
{
public:
    SparseConv2dPluginV2(std::string name, std::shared_ptr<ConvSpec const> spec, int32_t dtypeTag);
    SparseConv2dPluginV2(SparseConv2dPluginV2 const& other) = default;
    SparseConv2dPluginV2& operator=(SparseConv2dPluginV2 const&) = delete;
    ~SparseConv2dPluginV2() override = default;

    // IPluginV2
    char const* getPluginType() const noexcept override;
    char const* getPluginVersion() const noexcept override;
    int32_t getNbOutputs() const noexcept override;
    int32_t initialize() noexcept override;
    void terminate() noexcept override;
    size_t getSerializationSize() const noexcept override;
    void serialize(void* buffer) const noexcept override;
    void destroy() noexcept override;
    void setPluginNamespace(char const* pluginNamespace) noexcept override;
    char const* getPluginNamespace() const noexcept override;

    // IPluginV2Ext
    nvinfer1::DataType getOutputDataType(
        int32_t index, nvinfer1::DataType const* inputTypes, int32_t nbInputs) const noexcept override;

    // IPluginV2DynamicExt
    nvinfer1::IPluginV2DynamicExt* clone() const noexcept override;
    nvinfer1::DimsExprs getOutputDimensions(int32_t outputIndex, nvinfer1::DimsExprs const* inputs, int32_t nbInputs,
        nvinfer1::IExprBuilder& exprBuilder) noexcept override;
    bool supportsFormatCombination(
        int32_t pos, nvinfer1::PluginTensorDesc const* inOut, int32_t nbInputs, int32_t nbOutputs) noexcept override;
    void configurePlugin(nvinfer1::DynamicPluginTensorDesc const* in, int32_t nbInputs,
        nvinfer1::DynamicPluginTensorDesc const* out, int32_t nbOutputs) noexcept override;
    size_t getWorkspaceSize(nvinfer1::PluginTensorDesc const* inputs, int32_t nbInputs,
        nvinfer1::PluginTensorDesc const* outputs, int32_t nbOutputs) const noexcept override;
    int32_t enqueue(nvinfer1::PluginTensorDesc const* inputDesc, nvinfer1::PluginTensorDesc const* outputDesc,
        void const* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) noexcept override;

    // Created for an engine build (createPlugin): configurePlugin tunes the kernel choice. Plugins
    // from deserializePlugin never tune; they re-apply the tactic stored in the blob.
    void setBuildPhase(bool build) { mBuildPhase = build; }
    void setTactic(Tactic const& t) { mState.setTactic(t); }

private:
    std::string mName;
    std::string mNamespace;
    std::shared_ptr<ConvSpec const> mSpec;
    mutable SparseConvState mState;
    bool mBuildPhase{false};
};

class SparseConv2dCreatorV2 : public nvinfer1::IPluginCreator
{
public:
    SparseConv2dCreatorV2();
    ~SparseConv2dCreatorV2() override = default;

    char const* getPluginName() const noexcept override;
    char const* getPluginVersion() const noexcept override;
    nvinfer1::PluginFieldCollection const* getFieldNames() noexcept override;
    nvinfer1::IPluginV2* createPlugin(char const* name, nvinfer1::PluginFieldCollection const* fc) noexcept override;
    nvinfer1::IPluginV2* deserializePlugin(
        char const* name, void const* serialData, size_t serialLength) noexcept override;
    void setPluginNamespace(char const* pluginNamespace) noexcept override;
    char const* getPluginNamespace() const noexcept override;

private:
    std::vector<nvinfer1::PluginField> mFields;
    nvinfer1::PluginFieldCollection mFc{};
    std::string mNamespace;
};

} // namespace trt_sparse

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif // NV_TENSORRT_MAJOR < 10
#endif // TRT_SPARSE_SPARSE_CONV2D_PLUGIN_V2_H
