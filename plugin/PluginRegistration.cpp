/*
 * trt-sparse: how TensorRT finds the SparseConv2d creator.
 *
 * TensorRT >= 10 and TensorRT-RTX: the library exports getCreators and
 * setLoggerFinder, the pair that trtexec --dynamicPlugins and
 * IPluginRegistry::loadLibrary look up. The library does not link libnvinfer, so
 * one build serves TensorRT and TensorRT-RTX (it links only the CUDA runtime).
 *
 * TensorRT 8.x: REGISTER_TENSORRT_PLUGIN registers the creator with
 * getPluginRegistry() when the library is loaded (trtexec --plugins, ctypes);
 * libnvinfer is linked on the target.
 */
#include "NvInferRuntime.h"
#include "SparseConv2dTrtUtils.h"

#if NV_TENSORRT_MAJOR >= 10

#include "SparseConv2dPluginV3.h"

namespace
{
// Kept, never called: the ILoggerFinder layout differs between TensorRT 10.x and 11.x
// headers, and this one library must serve both. Messages go to stderr (see the core).
nvinfer1::ILoggerFinder* gLoggerFinder = nullptr;
} // namespace

extern "C" TRT_SPARSE_EXPORT nvinfer1::IPluginCreatorInterface* const* getCreators(int32_t& nbCreators)
{
    try
    {
        static trt_sparse::SparseConv2dCreatorV3 creator;
        static nvinfer1::IPluginCreatorInterface* const creators[] = {&creator};
        nbCreators = 1;
        return creators;
    }
    catch (...)
    {
        trt_sparse::logCurrentException("getCreators");
        nbCreators = 0;
        return nullptr;
    }
}

extern "C" TRT_SPARSE_EXPORT void setLoggerFinder(nvinfer1::ILoggerFinder* finder)
{
    gLoggerFinder = finder;
}

#else // TensorRT 8.x

#include "SparseConv2dPluginV2.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

using trt_sparse::SparseConv2dCreatorV2;
REGISTER_TENSORRT_PLUGIN(SparseConv2dCreatorV2);

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
