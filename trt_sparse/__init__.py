"""trt-sparse: unstructured-sparse convolutions for TensorRT.

Modules: format (packed weight format), reference (float64 reference conv),
convert (ONNX rewrite), cuda (ctypes binding of the kernel library),
engine/runtime (TensorRT build and timing helpers), cli (the ``trt-sparse`` command).
"""
__version__ = "0.1.0"

#: Name, version and namespace of the TensorRT plugin (must match plugin/).
PLUGIN_NAME = "SparseConv2d"
PLUGIN_VERSION = "1"
PLUGIN_NAMESPACE = ""
