/*
 * trt-sparse: small TensorRT-facing helpers shared by the V3 (TensorRT >= 10) and
 * V2DynamicExt (TensorRT 8.x) adapters. Compiles against the headers of 8.2 .. 11.x.
 */
#ifndef TRT_SPARSE_SPARSE_CONV2D_TRT_UTILS_H
#define TRT_SPARSE_SPARSE_CONV2D_TRT_UTILS_H

#include "NvInferRuntime.h"
#include "SparseConv2dCore.h"
#include "kernels/sparse_conv.h"

#include <cstdint>
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

inline bool supportedIo(nvinfer1::DataType t, nvinfer1::TensorFormat f)
{
    return f == nvinfer1::TensorFormat::kLINEAR && kernelDtype(t) >= 0;
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

} // namespace trt_sparse

#endif // TRT_SPARSE_SPARSE_CONV2D_TRT_UTILS_H
