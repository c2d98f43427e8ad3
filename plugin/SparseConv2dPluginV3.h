/*
 * trt-sparse: SparseConv2d as IPluginV3 (IPluginV3OneCore/Build/Runtime) and its
 * IPluginCreatorV3One, for TensorRT >= 10 and TensorRT-RTX. Serialization goes
 * through getFieldsToSerialize (the canonical fields of docs/FORMAT.md); TensorRT
 * hands them back to createPlugin(..., kRUNTIME) when an engine is deserialized.
 */
#ifndef TRT_SPARSE_SPARSE_CONV2D_PLUGIN_V3_H
#define TRT_SPARSE_SPARSE_CONV2D_PLUGIN_V3_H

#include "NvInferRuntime.h"

#if NV_TENSORRT_MAJOR >= 10

#include "SparseConv2dCore.h"
#include "SparseConv2dPlan.h"

#include <memory>
#include <string>
#include <vector>

namespace trt_sparse
{

class SparseConv2dPluginV3 : public nvinfer1::IPluginV3,
                             public nvinfer1::IPluginV3OneCore,
                             public nvinfer1::IPluginV3OneBuild,
                             public nvinfer1::IPluginV3OneRuntime
{
public:
    SparseConv2dPluginV3(std::string name, std::string nameSpace, std::shared_ptr<ConvSpec const> spec);
    SparseConv2dPluginV3(SparseConv2dPluginV3 const& other);
    SparseConv2dPluginV3& operator=(SparseConv2dPluginV3 const&) = delete;
    ~SparseConv2dPluginV3() noexcept override = default;

    // IPluginV3
    nvinfer1::IPluginCapability* getCapabilityInterface(nvinfer1::PluginCapabilityType type) noexcept override;
    nvinfer1::IPluginV3* clone() noexcept override;

    // IPluginV3OneCore
    char const* getPluginName() const noexcept override;
    char const* getPluginVersion() const noexcept override;
    char const* getPluginNamespace() const noexcept override;

    // IPluginV3OneBuild
    int32_t configurePlugin(nvinfer1::DynamicPluginTensorDesc const* in, int32_t nbInputs,
        nvinfer1::DynamicPluginTensorDesc const* out, int32_t nbOutputs) noexcept override;
    int32_t getOutputDataTypes(nvinfer1::DataType* outputTypes, int32_t nbOutputs,
        nvinfer1::DataType const* inputTypes, int32_t nbInputs) const noexcept override;
    int32_t getOutputShapes(nvinfer1::DimsExprs const* inputs, int32_t nbInputs, nvinfer1::DimsExprs const* shapeInputs,
        int32_t nbShapeInputs, nvinfer1::DimsExprs* outputs, int32_t nbOutputs,
        nvinfer1::IExprBuilder& exprBuilder) noexcept override;
    bool supportsFormatCombination(int32_t pos, nvinfer1::DynamicPluginTensorDesc const* inOut, int32_t nbInputs,
        int32_t nbOutputs) noexcept override;
    int32_t getNbOutputs() const noexcept override;
    size_t getWorkspaceSize(nvinfer1::DynamicPluginTensorDesc const* inputs, int32_t nbInputs,
        nvinfer1::DynamicPluginTensorDesc const* outputs, int32_t nbOutputs) const noexcept override;

    // IPluginV3OneRuntime
    int32_t onShapeChange(nvinfer1::PluginTensorDesc const* in, int32_t nbInputs,
        nvinfer1::PluginTensorDesc const* out, int32_t nbOutputs) noexcept override;
    int32_t enqueue(nvinfer1::PluginTensorDesc const* inputDesc, nvinfer1::PluginTensorDesc const* outputDesc,
        void const* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) noexcept override;
    nvinfer1::IPluginV3* attachToContext(nvinfer1::IPluginResourceContext* context) noexcept override;
    nvinfer1::PluginFieldCollection const* getFieldsToSerialize() noexcept override;

    // for tests: whether a kernel plan exists and its tsc_dtype (-1 if none)
    int32_t planDtype() const { return mState.hasPlan() ? mState.dtype() : -1; }

    // tuned kernel choice from a deserialized engine (createPlugin kRUNTIME)
    void setTactic(Tactic const& t) { mState.setTactic(t); }

private:
    std::string mName;
    std::string mNamespace;
    std::shared_ptr<ConvSpec const> mSpec;
    mutable SparseConvState mState; // getWorkspaceSize is const but may create the plan
    FieldScratch mSerialScratch{};
    int32_t mSerialTactic[kTacticLength]{};
    std::vector<nvinfer1::PluginField> mSerialFields;
    nvinfer1::PluginFieldCollection mSerialFc{};
};

class SparseConv2dCreatorV3 : public nvinfer1::IPluginCreatorV3One
{
public:
    SparseConv2dCreatorV3();
    ~SparseConv2dCreatorV3() override = default;

    nvinfer1::IPluginV3* createPlugin(
        char const* name, nvinfer1::PluginFieldCollection const* fc, nvinfer1::TensorRTPhase phase) noexcept override;
    nvinfer1::PluginFieldCollection const* getFieldNames() noexcept override;
    char const* getPluginName() const noexcept override;
    char const* getPluginVersion() const noexcept override;
    char const* getPluginNamespace() const noexcept override;

private:
    std::vector<nvinfer1::PluginField> mFields;
    nvinfer1::PluginFieldCollection mFc{};
};

} // namespace trt_sparse

#endif // NV_TENSORRT_MAJOR >= 10
#endif // TRT_SPARSE_SPARSE_CONV2D_PLUGIN_V3_H
