/*
 * trt-sparse kernel library: C ABI of the sparse direct convolution.
 *
 * Pure CUDA, no TensorRT include. Host code is C++14 (JetPack 4.6: gcc 7, CUDA 10.2).
 * Weights come in the canonical CSR form of docs/FORMAT.md (host memory, fp32
 * values); tsc_plan_create validates them, keeps a host copy and uploads the
 * layouts of the variants its heuristic can pick (not every variant: plan memory,
 * docs/PERFORMANCE.md). Enqueue never allocates and keeps no per-call state, so a
 * plan may be used from several streams at once, also inside CUDA graph capture.
 * tsc_plan_tune and tsc_plan_set_choice are build-time calls: they build and free
 * device layouts and must not run concurrently with enqueue on the same plan.
 */
#ifndef TRT_SPARSE_SPARSE_CONV_H
#define TRT_SPARSE_SPARSE_CONV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TSC_API __declspec(dllexport)
#else
#define TSC_API __attribute__((visibility("default")))
#endif

#define TSC_ABI_VERSION 1

typedef enum {
    TSC_OK = 0,
    TSC_ERR_INVALID_ARGUMENT = 1, /* bad descriptor, weights or shape (message says which) */
    TSC_ERR_UNSUPPORTED = 2,      /* valid conv the kernels do not support */
    TSC_ERR_OVERFLOW = 3,         /* an index or size overflows the kernel's integer types */
    TSC_ERR_OUT_OF_MEMORY = 4,
    TSC_ERR_CUDA = 5              /* a CUDA call failed (message has cudaGetErrorString) */
} tsc_status;

typedef enum { TSC_FLOAT32 = 0, TSC_FLOAT16 = 1 } tsc_dtype;
typedef enum { TSC_NCHW = 0, TSC_NHWC = 1 } tsc_layout;
typedef enum { TSC_ACT_NONE = 0, TSC_ACT_RELU = 1, TSC_ACT_CLIP = 2 } tsc_activation;

/* Convolution geometry; same fields as the SparseConv2d node (docs/FORMAT.md). */
typedef struct {
    int32_t K, C, R, S;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right;
    int32_t dilation_h, dilation_w;
    int32_t activation; /* tsc_activation */
    float clip_min, clip_max;
} tsc_conv_desc;

/* Canonical CSR weights in host memory (copied by tsc_plan_create). */
typedef struct {
    const int32_t* row_offsets; /* K+1 */
    const int32_t* indices;     /* nnz = row_offsets[K]; flat c*R*S + r*S + s; may be NULL if nnz == 0 */
    const float* values;        /* nnz; may be NULL if nnz == 0 */
    const float* bias;          /* K, or NULL for zero bias */
} tsc_weights;

typedef struct tsc_plan tsc_plan;

/* Library ABI version (TSC_ABI_VERSION of the build). */
TSC_API int32_t tsc_abi_version(void);

/* Short name of a status code. */
TSC_API const char* tsc_status_string(tsc_status status);

/* Detail of the last failed call on this thread ("" if none). */
TSC_API const char* tsc_last_error(void);

/* Output spatial size for input H x W; TSC_ERR_INVALID_ARGUMENT if it would be < 1. */
TSC_API tsc_status tsc_output_dims(const tsc_conv_desc* desc, int32_t H, int32_t W, int32_t* P, int32_t* Q);

/* Validate weights, re-layout for the kernels, upload to the current device. */
TSC_API tsc_status tsc_plan_create(const tsc_conv_desc* desc, const tsc_weights* weights,
                                   tsc_dtype dtype, tsc_layout layout, tsc_plan** plan);

/* Free the plan's device and host memory; NULL is a no-op. */
TSC_API void tsc_plan_destroy(tsc_plan* plan);

/* Optional: time the kernel variants for this input shape on `stream` and remember
 * the fastest (like TensorRT tactics). Without it enqueue uses a heuristic choice.
 * Buffers are scratch device buffers of the enqueue sizes (contents overwritten).
 * Builds each candidate's layout while timing it, keeps the winner's and frees the
 * others before returning. Synchronizes `stream`; not concurrently with enqueue. */
TSC_API tsc_status tsc_plan_tune(tsc_plan* plan, int32_t N, int32_t H, int32_t W,
                                 const void* input, void* output, void* workspace, void* stream);

/* Device workspace bytes enqueue needs for this input shape (0 allowed). */
TSC_API size_t tsc_workspace_size(const tsc_plan* plan, int32_t N, int32_t H, int32_t W);

/* y = act(conv(x, w) + bias) for input N x C x H x W (layout of the plan) on a
 * cudaStream_t (passed as void* so this header needs no CUDA include). Asynchronous. */
TSC_API tsc_status tsc_enqueue(const tsc_plan* plan, int32_t N, int32_t H, int32_t W,
                               const void* input, void* output, void* workspace, void* stream);

/* Describe the plan (dtype, nnz, device_bytes, tuned variants) into buf; returns needed length. */
TSC_API size_t tsc_plan_describe(const tsc_plan* plan, char* buf, size_t buf_len);

/* ---- added in the same ABI version 1 (backward compatible additions) ---- */

/* Variant enqueue uses for input N x H x W (tuned or heuristic) as a variant id.
 * Ids are stable across processes for the same library build and the same weights
 * (they encode the kernel kind and its configuration, not a list position), so a
 * tuned choice can be stored (e.g. in a serialized TensorRT plugin) and re-applied. */
TSC_API tsc_status tsc_plan_get_choice(const tsc_plan* plan, int32_t N, int32_t H, int32_t W, int32_t* variant_id);

/* Make variant_id the choice for input N x H x W (as if tuned) and build its layout.
 * TSC_ERR_INVALID_ARGUMENT for an unknown id or one that cannot run this shape with
 * this plan. Build-time call: allocates; not concurrently with enqueue. */
TSC_API tsc_status tsc_plan_set_choice(tsc_plan* plan, int32_t N, int32_t H, int32_t W, int32_t variant_id);

/* Device bytes the plan holds now (weights in every built layout + bias). */
TSC_API size_t tsc_plan_device_bytes(const tsc_plan* plan);

/* tsc_plan_tune for input N x H x W on scratch input/output buffers (and workspace) that
 * the library allocates, zero-fills and frees itself, on a private stream that it
 * synchronizes and destroys: for callers without CUDA runtime calls (the TensorRT
 * plugin at engine build time). Not inside graph capture; not concurrently with enqueue. */
TSC_API tsc_status tsc_plan_tune_scratch(tsc_plan* plan, int32_t N, int32_t H, int32_t W);

/* Math mode of a plan. TSC_MATH_ALLOW_TF32 lets fp32 plans also run TF32 tensor-core variants (10-bit
 * mantissa products with fp32 accumulation: results change at the ~1e-3 relative level, as with
 * TensorRT's TF32 builder flag); the default keeps fp32 plans exact fp32. No effect on fp16 plans.
 * Build-time call (before tsc_plan_tune / tsc_plan_set_choice; switching TF32 off forgets tuned TF32
 * choices); not concurrently with enqueue. */
typedef enum { TSC_MATH_DEFAULT = 0, TSC_MATH_ALLOW_TF32 = 1 } tsc_math;
TSC_API tsc_status tsc_plan_set_math(tsc_plan* plan, int32_t math);

#ifdef __cplusplus
}
#endif
#endif /* TRT_SPARSE_SPARSE_CONV_H */
