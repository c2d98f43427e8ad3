/*
 * trt-sparse: small TensorRT-facing helpers shared by the V3 (TensorRT >= 10) and
 * V2DynamicExt (TensorRT 8.x) adapters. Compiles against the headers of 8.2 .. 11.x.
 */
#ifndef TRT_SPARSE_SPARSE_CONV2D_TRT_UTILS_H
#define TRT_SPARSE_SPARSE_CONV2D_TRT_UTILS_H

#include "NvInferRuntime.h"
#include "SparseConv2dCore.h"
#include "SparseConv2dPlan.h"
#include "kernels/sparse_conv.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#if defined(_WIN32)
#define TRT_SPARSE_EXPORT __declspec(dllexport)
#else
#define TRT_SPARSE_EXPORT __attribute__((visibility("default")))
#endif

namespace trt_sparse
{

// Integer type of IExprBuilder::constant (int32 in 8.x, int64 in 10.x+).
#if NV_TENSORRT_MAJOR >= 10
using ExprInt = int64_t;
#else
using ExprInt = int32_t;
#endif

// Run f(); on an exception log it (naming `where`) and return `fallback`.
template <typename T, typename F>
T guarded(char const* where, T fallback, F&& f) noexcept
{
    try
    {
        return f();
    }
    catch (...)
    {
        logCurrentException(where);
        return fallback;
    }
}

template <typename F>
void guardedVoid(char const* where, F&& f) noexcept
{
    try
    {
        f();
    }
    catch (...)
    {
        logCurrentException(where);
    }
}

// TensorRT field collection -> core field views.
inline std::vector<FieldView> toFieldViews(nvinfer1::PluginFieldCollection const* fc)
{
    std::vector<FieldView> v;
    if (fc == nullptr || fc->nbFields <= 0 || fc->fields == nullptr)
    {
        return v;
    }
    v.reserve(static_cast<size_t>(fc->nbFields));
    for (int32_t i = 0; i < fc->nbFields; ++i)
    {
        nvinfer1::PluginField const& f = fc->fields[i];
        v.push_back(FieldView{f.name, f.data, static_cast<int32_t>(f.type), f.length});
    }
    return v;
}

// Core field views -> TensorRT fields (the views must outlive the result).
inline std::vector<nvinfer1::PluginField> toPluginFields(std::vector<FieldView> const& views)
{
    std::vector<nvinfer1::PluginField> v;
    v.reserve(views.size());
    for (FieldView const& f : views)
    {
        v.emplace_back(f.name, f.data, static_cast<nvinfer1::PluginFieldType>(f.type), f.length);
    }
    return v;
}

// What getFieldNames() returns: every attribute of docs/FORMAT.md, no data.
inline std::vector<nvinfer1::PluginField> declaredFields()
{
    std::vector<nvinfer1::PluginField> v;
    for (FieldDecl const& d : fieldDecls())
    {
        v.emplace_back(d.name, nullptr, static_cast<nvinfer1::PluginFieldType>(d.type), d.length);
    }
    return v;
}

// tsc_dtype of a TensorRT type, or -1 when the kernels do not support it.
inline int32_t kernelDtype(nvinfer1::DataType t)
{
    if (t == nvinfer1::DataType::kFLOAT)
    {
        return TSC_FLOAT32;
    }
    if (t == nvinfer1::DataType::kHALF)
    {
        return TSC_FLOAT16;
    }
    return -1;
}

// tsc_layout the kernels run a tensor of type t in format f as, or -1 when they cannot: kLINEAR (fp32 / fp16)
// -> NCHW; channel-last -> NHWC: kHWC (fp32, unpadded) and kHWC8 (fp16; only when C and K are multiples of 8,
// so that the padded channel stride equals the channel count and no padding channel is read or written).
inline int32_t ioLayout(ConvSpec const& spec, nvinfer1::DataType t, nvinfer1::TensorFormat f)
{
    if (kernelDtype(t) < 0)
    {
        return -1;
    }
    if (f == nvinfer1::TensorFormat::kLINEAR)
    {
        return TSC_NCHW;
    }
    if (f == nvinfer1::TensorFormat::kHWC && t == nvinfer1::DataType::kFLOAT)
    {
        return TSC_NHWC;
    }
    if (f == nvinfer1::TensorFormat::kHWC8 && t == nvinfer1::DataType::kHALF && spec.C % 8 == 0 && spec.K % 8 == 0)
    {
        return TSC_NHWC;
    }
    return -1;
}

// tsc_layout of a configured input / output pair, or -1 when its format is not supported or the two formats differ.
inline int32_t ioPairLayout(
    ConvSpec const& spec, nvinfer1::PluginTensorDesc const& in, nvinfer1::PluginTensorDesc const& out)
{
    return out.format == in.format ? ioLayout(spec, in.type, in.format) : -1;
}

// supportsFormatCombination of both adapters: position 0 (input) any supported type / format, position 1
// (output) the input's type and format (a plan has one layout for both). Env TRT_SPARSE_LINEAR_IO=1 offers
// kLINEAR only (read here, at engine build: configure / enqueue run whatever format the engine has).
inline bool supportedCombination(ConvSpec const& spec, int32_t pos, nvinfer1::PluginTensorDesc const* inOut)
{
    if (pos < 0 || pos > 1)
    {
        return false;
    }
    int32_t const layout = ioLayout(spec, inOut[pos].type, inOut[pos].format);
    char const* linearOnly = std::getenv("TRT_SPARSE_LINEAR_IO");
    if (layout < 0 || (layout != TSC_NCHW && linearOnly != nullptr && linearOnly[0] == '1'))
    {
        return false;
    }
    return pos == 0 || (inOut[1].type == inOut[0].type && inOut[1].format == inOut[0].format);
}

// Dims of an input/output: N, C/K, H, W as int64 (false unless 4-D).
inline bool dims4(nvinfer1::Dims const& d, int64_t& n, int64_t& c, int64_t& h, int64_t& w)
{
    if (d.nbDims != 4)
    {
        return false;
    }
    n = d.d[0];
    c = d.d[1];
    h = d.d[2];
    w = d.d[3];
    return true;
}

// configurePlugin's checks shared by both adapters: one 4-D NCHW input with spec.C
// channels and one output of the same fp32/fp16 type. Sets n, h, w (of in[0].desc) and
// returns the tsc dtype, or -1 (logged).
inline int32_t configuredDtype(ConvSpec const& spec, std::string const& name,
    nvinfer1::DynamicPluginTensorDesc const* in, int32_t nbInputs, nvinfer1::DynamicPluginTensorDesc const* out,
    int32_t nbOutputs, int64_t& n, int64_t& h, int64_t& w, int32_t& layout)
{
    if (in == nullptr || out == nullptr || nbInputs != 1 || nbOutputs != 1)
    {
        logMessage(LogLevel::kERROR, "configurePlugin: expects 1 input and 1 output");
        return -1;
    }
    int64_t c = 0;
    if (!dims4(in[0].desc.dims, n, c, h, w) || (c >= 0 && c != spec.C))
    {
        logMessage(LogLevel::kERROR, "configurePlugin: input must be N x " + std::to_string(spec.C)
                + " x H x W (layer " + name + ")");
        return -1;
    }
    int32_t const dt = kernelDtype(in[0].desc.type);
    if (dt < 0 || out[0].desc.type != in[0].desc.type)
    {
        logMessage(LogLevel::kERROR, "configurePlugin: input and output must both be fp32 or both fp16");
        return -1;
    }
    layout = ioPairLayout(spec, in[0].desc, out[0].desc);
    if (layout < 0)
    {
        logMessage(LogLevel::kERROR, "configurePlugin: unsupported tensor format (linear, or channel-last for both "
                "input and output; layer " + name + ")");
        return -1;
    }
    return dt;
}

// The enqueue body shared by both adapters: check the NCHW descriptors and the I/O
// dtype, then run the kernels of `state` (layer `name` names the layer in errors).
inline int32_t enqueueConv(SparseConvState& state, std::string const& name,
    nvinfer1::PluginTensorDesc const* inputDesc, nvinfer1::PluginTensorDesc const* outputDesc,
    void const* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream)
{
    if (inputDesc == nullptr || outputDesc == nullptr || inputs == nullptr || outputs == nullptr)
    {
        return -1;
    }
    int64_t n = 0, c = 0, h = 0, w = 0;
    int64_t on = 0, k = 0, p = 0, q = 0;
    if (!dims4(inputDesc[0].dims, n, c, h, w) || !dims4(outputDesc[0].dims, on, k, p, q) || on != n)
    {
        logMessage(LogLevel::kERROR, "enqueue: expects 4-D input and output (layer " + name + ")");
        return -1;
    }
    int32_t const dt = kernelDtype(inputDesc[0].type);
    if (dt < 0 || outputDesc[0].type != inputDesc[0].type)
    {
        logMessage(LogLevel::kERROR, "enqueue: input and output must both be fp32 or both fp16");
        return -1;
    }
    int32_t const layout = ioPairLayout(state.spec(), inputDesc[0], outputDesc[0]);
    if (layout < 0)
    {
        logMessage(LogLevel::kERROR, "enqueue: unsupported tensor format (layer " + name + ")");
        return -1;
    }
    state.setDtype(dt);
    state.setLayout(layout);
    return state.enqueue(n, c, h, w, k, p, q, inputs[0], outputs[0], workspace, static_cast<void*>(stream));
}

// out = floor((in + offset) / stride) + 1 as a TensorRT dimension expression; nullptr
// (logged) when a constant input gives an output < 1.
inline nvinfer1::IDimensionExpr const* convOutputExpr(nvinfer1::IExprBuilder& eb,
    nvinfer1::IDimensionExpr const* in, int64_t offset, int64_t stride, char const* axis)
{
    if (in == nullptr)
    {
        return nullptr;
    }
    if (in->isConstant())
    {
        int64_t const out = floorDiv(static_cast<int64_t>(in->getConstantValue()) + offset, stride) + 1;
        if (out < 1)
        {
            logMessage(LogLevel::kERROR,
                std::string("getOutputShapes: input ") + axis + " = " + std::to_string(in->getConstantValue())
                    + " is too small for the kernel/padding (output would be " + std::to_string(out) + ")");
            return nullptr;
        }
        return eb.constant(static_cast<ExprInt>(out));
    }
    if (offset + 1 > std::numeric_limits<ExprInt>::max() || -offset > std::numeric_limits<ExprInt>::max()
        || stride > std::numeric_limits<ExprInt>::max())
    {
        logMessage(LogLevel::kERROR, std::string("getOutputShapes: padding/kernel extent of ") + axis
                + " does not fit TensorRT's dimension type");
        return nullptr;
    }
    using nvinfer1::DimensionOperation;
    if (stride == 1) // in + offset + 1
    {
        int64_t const add = offset + 1;
        if (add == 0)
        {
            return in;
        }
        return add > 0 ? eb.operation(DimensionOperation::kSUM, *in, *eb.constant(static_cast<ExprInt>(add)))
                       : eb.operation(DimensionOperation::kSUB, *in, *eb.constant(static_cast<ExprInt>(-add)));
    }
    nvinfer1::IDimensionExpr const* num = in;
    if (offset > 0)
    {
        num = eb.operation(DimensionOperation::kSUM, *in, *eb.constant(static_cast<ExprInt>(offset)));
    }
    else if (offset < 0)
    {
        num = eb.operation(DimensionOperation::kSUB, *in, *eb.constant(static_cast<ExprInt>(-offset)));
    }
    if (num == nullptr)
    {
        return nullptr;
    }
    nvinfer1::IDimensionExpr const* q
        = eb.operation(DimensionOperation::kFLOOR_DIV, *num, *eb.constant(static_cast<ExprInt>(stride)));
    if (q == nullptr)
    {
        return nullptr;
    }
    return eb.operation(DimensionOperation::kSUM, *q, *eb.constant(1));
}

// getOutputDimensions / getOutputShapes: false (logged, naming `where`) when the input's
// channel count is a constant other than spec.C.
inline bool inputChannelsMatch(
    ConvSpec const& spec, std::string const& name, char const* where, nvinfer1::DimsExprs const& in)
{
    if (in.d[1] != nullptr && in.d[1]->isConstant() && in.d[1]->getConstantValue() != spec.C)
    {
        logMessage(LogLevel::kERROR, std::string(where) + ": input has " + std::to_string(in.d[1]->getConstantValue())
                + " channels, the weight expects C = " + std::to_string(spec.C) + " (layer " + name + ")");
        return false;
    }
    return true;
}

// The output N, K, P, Q expressions of the convolution for a 4-D NCHW input `in` into
// `out`; false when one of them cannot be formed.
inline bool convOutputDims(
    ConvSpec const& spec, nvinfer1::DimsExprs const& in, nvinfer1::IExprBuilder& eb, nvinfer1::DimsExprs& out)
{
    out.nbDims = 4;
    out.d[0] = in.d[0];
    out.d[1] = eb.constant(static_cast<ExprInt>(spec.K));
    out.d[2] = convOutputExpr(eb, in.d[2], outputOffsetH(spec), spec.stride_h, "H");
    out.d[3] = convOutputExpr(eb, in.d[3], outputOffsetW(spec), spec.stride_w, "W");
    return out.d[0] != nullptr && out.d[1] != nullptr && out.d[2] != nullptr && out.d[3] != nullptr;
}

} // namespace trt_sparse

#endif // TRT_SPARSE_SPARSE_CONV2D_TRT_UTILS_H
