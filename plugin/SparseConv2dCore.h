/*
 * trt-sparse: version-independent core of the SparseConv2d TensorRT plugin.
 *
 * No TensorRT and no CUDA include: field parsing and validation, the V2 binary
 * blob (serialize / bounds-checked deserialize), shape arithmetic and packed32
 * decoding. Everything here runs on the CPU and can be fuzzed on its own
 * (tests/cpp/fuzz_deserialize.cpp). Plan creation through the kernel C ABI lives
 * in SparseConv2dPlan.{h,cpp}; the TensorRT adapters in SparseConv2dPluginV3/V2.
 *
 * The field set is the SparseConv2d node's attribute set of docs/FORMAT.md.
 * C++14 (the TensorRT 8.x / JetPack 4.6 path is built with gcc 7).
 */
#ifndef TRT_SPARSE_SPARSE_CONV2D_CORE_H
#define TRT_SPARSE_SPARSE_CONV2D_CORE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trt_sparse
{

extern char const* const kPluginName;      // "SparseConv2d"
extern char const* const kPluginVersion;   // "1"
extern char const* const kPluginNamespace; // ""
constexpr int32_t kFormatVersion = 1;      // docs/FORMAT.md
constexpr uint32_t kBlobMagic = 0x31435354U; // "TSC1" little-endian
constexpr uint32_t kBlobVersion = 1U;       // blobs without a tactic (read and written)
constexpr uint32_t kBlobVersionTactic = 2U; // blobs with a tactic after the dtype tag (read and written)
constexpr uint32_t kBlobVersionFlags = 3U;  // blobs with allow_tf32 = 1: a flags word after the dtype tag
constexpr uint32_t kBlobFlagAllowTf32 = 1U; // version 3 flags: allow_tf32 = 1 (always set in version 3)
constexpr uint32_t kBlobFlagTactic = 2U;    // version 3 flags: a tactic (5 int32) follows the flags word
constexpr int64_t kPacked32MaxIndex = 65536;

// Numeric values of nvinfer1::PluginFieldType (identical in TensorRT 8.x .. 11.x).
enum class FieldType : int32_t
{
    kFLOAT16 = 0,
    kFLOAT32 = 1,
    kFLOAT64 = 2,
    kINT8 = 3,
    kINT16 = 4,
    kINT32 = 5,
    kCHAR = 6,
    kDIMS = 7,
    kUNKNOWN = 8,
    kBF16 = 9,
    kINT64 = 10
};

// A TensorRT PluginField without the TensorRT type (adapters convert).
struct FieldView
{
    char const* name;
    void const* data;
    int32_t type; // FieldType value
    int32_t length;
};

// What getFieldNames() declares: every attribute of the node (docs/FORMAT.md).
struct FieldDecl
{
    char const* name;
    FieldType type;
    int32_t length; // fixed length, or 0 for variable
};
std::vector<FieldDecl> const& fieldDecls();

// ---- logging (stderr by default; TensorRT's logger is not reachable portably) ----
enum class LogLevel : int32_t
{
    kERROR = 0,
    kWARNING = 1,
    kINFO = 2
};
using LogSink = void (*)(LogLevel level, char const* message);
void setLogSink(LogSink sink); // nullptr restores the default (stderr, errors + warnings)
void logMessage(LogLevel level, std::string const& message);
// Call inside a catch block: logs the in-flight exception with the method name.
void logCurrentException(char const* where) noexcept;

// ---- the plugin's parameters: geometry + canonical CSR weights ----
struct ConvSpec
{
    int32_t format_version{kFormatVersion};
    int32_t K{0}, C{0}, R{0}, S{0};
    int32_t stride_h{1}, stride_w{1};
    int32_t pad_top{0}, pad_left{0}, pad_bottom{0}, pad_right{0};
    int32_t dilation_h{1}, dilation_w{1};
    int32_t activation{0}; // 0 none, 1 relu, 2 clip
    float clip_min{0.0F}, clip_max{6.0F};
    int32_t weight_format{0}; // 0 exact, 1 packed32
    std::vector<int32_t> row_offsets; // K+1
    std::vector<int32_t> indices;     // exact: nnz
    std::vector<float> values;        // exact: nnz
    std::vector<int32_t> packed;      // packed32: nnz words (uint32 reinterpreted)
    std::vector<float> bias;          // K or empty (zero bias)
    // Math mode (optional field "allow_tf32", default 0): 1 lets fp32 plans also run the kernels' TF32
    // tensor-core variants (tsc_plan_set_math; ~1e-3 relative error); no effect on fp16 plans.
    int32_t allow_tf32{0};

    int64_t nnz() const { return row_offsets.empty() ? 0 : row_offsets.back(); }
    int64_t crs() const { return static_cast<int64_t>(C) * R * S; }
};

// ---- tuned kernel choice persisted with the plugin ----
// Variant id of tsc_plan_get_choice for input n x h x w of kernel dtype `dtype` (tsc_dtype) and I/O
// layout `layout` (tsc_layout: NCHW for TensorRT's kLINEAR, NHWC for kHWC / kHWC8), chosen by
// tsc_plan_tune at engine build time and re-applied with tsc_plan_set_choice.
// Serialized as the optional field "tactic" (kINT32, 5 values: id, n, h, w, io; V3) or inside the V2
// blob (version 2), where io = dtype + 2 * layout (0 / 1 = fp32 / fp16 NCHW, as older builds wrote it;
// 2 / 3 = fp32 / fp16 NHWC). Not part of the ONNX node's attributes.
struct Tactic
{
    int32_t id{-1};
    int32_t n{0}, h{0}, w{0};
    int32_t dtype{-1};
    int32_t layout{0};
    bool valid() const { return id >= 0; }
    int32_t io() const { return dtype + 2 * layout; }
    // dtype and layout from a serialized io value (out-of-range values fail checkTactic)
    void setIo(int32_t io)
    {
        dtype = io >= 0 ? io % 2 : -1;
        layout = io >= 0 ? io / 2 : -1;
    }
};
extern char const* const kTacticField; // "tactic"
constexpr int32_t kTacticLength = 5;
constexpr int32_t kTacticIdLimit = 1 << 21; // ids are below this (plugin/kernels/sparse_conv.cu kVariantIdLimit)
// True if every value is in range (id in [0, kTacticIdLimit), n/h/w >= 1, dtype 0 or 1).
bool checkTactic(Tactic const& t);
// Reads "tactic" from a field collection: absent -> t invalid and true; present and malformed
// -> false with err (callers warn and ignore it: the tactic is only a performance choice).
bool parseTactic(FieldView const* fields, int32_t nbFields, Tactic& t, std::string& err);

// Parse a TensorRT field collection into spec (defaults for absent optional fields)
// and validate it. On failure returns false and err names the field and the reason.
bool parseFields(FieldView const* fields, int32_t nbFields, ConvSpec& spec, std::string& err);

// Check every invariant of docs/FORMAT.md; err names the broken field.
bool validateSpec(ConvSpec const& spec, std::string& err);

// Fixed-length int fields gathered into arrays for specToFields (kept alive by the caller).
struct FieldScratch
{
    int32_t weight_shape[4];
    int32_t strides[2];
    int32_t pads[4];
    int32_t dilations[2];
};

// Field views (pointing into spec and scratch) for IPluginV3OneRuntime::getFieldsToSerialize;
// the same set and types parseFields reads (strings are not included; "allow_tf32" only when it
// is 1, so the fields of a default layer are those of builds before the field existed).
std::vector<FieldView> specToFields(ConvSpec const& spec, FieldScratch& scratch);

// ---- V2 binary blob: magic, version, dtype tag, [version 3: flags word], [tactic: 5 int32, version 2,
// or version 3 with kBlobFlagTactic], geometry, arrays, FNV-1a checksum. allow_tf32 = 0: version 1
// without a valid tactic, version 2 with one (both byte-identical to older builds); allow_tf32 = 1:
// version 3 (flags kBlobFlagAllowTf32 [| kBlobFlagTactic]). All three are read. ----
size_t serializedSize(ConvSpec const& spec);
size_t serializedSize(ConvSpec const& spec, Tactic const& tactic);
// Writes exactly serializedSize(spec[, tactic]) bytes. dtypeTag: -1 unknown, else the configured tsc_dtype.
void serializeSpec(ConvSpec const& spec, int32_t dtypeTag, void* buffer);
void serializeSpec(ConvSpec const& spec, int32_t dtypeTag, Tactic const& tactic, void* buffer);
// Bounds-checked: never reads past data+length; validates the result (the tactic and version 3
// flags too: unknown flag bits, or version 3 without kBlobFlagAllowTf32, are rejected).
bool deserializeSpec(void const* data, size_t length, ConvSpec& spec, int32_t& dtypeTag, std::string& err);
bool deserializeSpec(
    void const* data, size_t length, ConvSpec& spec, int32_t& dtypeTag, Tactic& tactic, std::string& err);
// FNV-1a 64 of the blob body (the last 8 bytes of a blob hold it).
uint64_t blobChecksum(void const* data, size_t length);

// ---- shapes ----
// Constant part of the output-size numerator: pad_a + pad_b - dilation*(k-1) - 1,
// so out = floor((in + offset) / stride) + 1.
int64_t outputOffsetH(ConvSpec const& spec);
int64_t outputOffsetW(ConvSpec const& spec);
int64_t floorDiv(int64_t a, int64_t b);
// Output P, Q for input H, W; false if either would be < 1.
bool outputDims(ConvSpec const& spec, int64_t H, int64_t W, int64_t& P, int64_t& Q);

// ---- weights for the kernels: packed32 words decoded to fp32 on the host ----
float halfBitsToFloat(uint16_t bits);
void decodeWeights(ConvSpec const& spec, std::vector<int32_t>& indices, std::vector<float>& values);

// Short description ("K=64 C=64 3x3 s1 nnz=... packed32 [bias] [tf32]") for log lines.
std::string describeSpec(ConvSpec const& spec);

} // namespace trt_sparse

#endif // TRT_SPARSE_SPARSE_CONV2D_CORE_H
