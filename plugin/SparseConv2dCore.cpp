/*
 * trt-sparse: version-independent core of the SparseConv2d plugin (see the header).
 * Pure C++14, no TensorRT / CUDA: safe to run under AddressSanitizer on the CPU.
 */
#include "SparseConv2dCore.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <sstream>

namespace trt_sparse
{

char const* const kPluginName = "SparseConv2d";
char const* const kPluginVersion = "1";
char const* const kPluginNamespace = "";

namespace
{

// ------------------------------------------------------------------ logging
std::atomic<LogSink> gSink{nullptr};

int32_t defaultLogThreshold()
{
    static int32_t const threshold = []() {
        char const* env = std::getenv("TRT_SPARSE_PLUGIN_LOG");
        if (env == nullptr)
        {
            return static_cast<int32_t>(LogLevel::kWARNING);
        }
        std::string const v(env);
        if (v == "none")
        {
            return -1;
        }
        if (v == "error")
        {
            return static_cast<int32_t>(LogLevel::kERROR);
        }
        if (v == "info" || v == "verbose")
        {
            return static_cast<int32_t>(LogLevel::kINFO);
        }
        return static_cast<int32_t>(LogLevel::kWARNING);
    }();
    return threshold;
}

char const* levelName(LogLevel level)
{
    switch (level)
    {
    case LogLevel::kERROR: return "ERROR";
    case LogLevel::kWARNING: return "WARNING";
    case LogLevel::kINFO: return "INFO";
    }
    return "?";
}

// ------------------------------------------------------------------ field names
char const* const kFVersion = "plugin_version";
char const* const kFNamespace = "plugin_namespace";
char const* const kFFormatVersion = "format_version";
char const* const kFWeightShape = "weight_shape";
char const* const kFStrides = "strides";
char const* const kFPads = "pads";
char const* const kFDilations = "dilations";
char const* const kFActivation = "activation";
char const* const kFClipMin = "clip_min";
char const* const kFClipMax = "clip_max";
char const* const kFWeightFormat = "weight_format";
char const* const kFRowOffsets = "row_offsets";
char const* const kFIndices = "indices";
char const* const kFValues = "values";
char const* const kFPacked = "packed";
char const* const kFBias = "bias";

char const* typeName(int32_t type)
{
    switch (static_cast<FieldType>(type))
    {
    case FieldType::kFLOAT16: return "kFLOAT16";
    case FieldType::kFLOAT32: return "kFLOAT32";
    case FieldType::kFLOAT64: return "kFLOAT64";
    case FieldType::kINT8: return "kINT8";
    case FieldType::kINT16: return "kINT16";
    case FieldType::kINT32: return "kINT32";
    case FieldType::kCHAR: return "kCHAR";
    case FieldType::kDIMS: return "kDIMS";
    case FieldType::kUNKNOWN: return "kUNKNOWN";
    case FieldType::kBF16: return "kBF16";
    case FieldType::kINT64: return "kINT64";
    }
    return "unknown type";
}

std::string quoted(char const* name)
{
    return std::string("field '") + name + "'";
}

template <typename T>
T loadAt(void const* data, int64_t i)
{
    T v;
    std::memcpy(&v, static_cast<unsigned char const*>(data) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return v;
}

// Any integer field type -> int64.
bool readInts(FieldView const& f, std::vector<int64_t>& out, std::string& err)
{
    FieldType const t = static_cast<FieldType>(f.type);
    if (t != FieldType::kINT8 && t != FieldType::kINT16 && t != FieldType::kINT32 && t != FieldType::kINT64)
    {
        err = quoted(f.name) + " has type " + typeName(f.type) + ", expected an integer (kINT32)";
        return false;
    }
    out.assign(static_cast<size_t>(f.length), 0);
    for (int64_t i = 0; i < f.length; ++i)
    {
        int64_t v = 0;
        switch (t)
        {
        case FieldType::kINT8: v = loadAt<int8_t>(f.data, i); break;
        case FieldType::kINT16: v = loadAt<int16_t>(f.data, i); break;
        case FieldType::kINT32: v = loadAt<int32_t>(f.data, i); break;
        default: v = loadAt<int64_t>(f.data, i); break;
        }
        out[static_cast<size_t>(i)] = v;
    }
    return true;
}

float bf16BitsToFloat(uint16_t bits)
{
    uint32_t const u = static_cast<uint32_t>(bits) << 16;
    float v;
    std::memcpy(&v, &u, sizeof(v));
    return v;
}

// Any floating field type -> double.
bool readFloats(FieldView const& f, std::vector<double>& out, std::string& err)
{
    FieldType const t = static_cast<FieldType>(f.type);
    if (t != FieldType::kFLOAT16 && t != FieldType::kFLOAT32 && t != FieldType::kFLOAT64 && t != FieldType::kBF16)
    {
        err = quoted(f.name) + " has type " + typeName(f.type) + ", expected a float (kFLOAT32)";
        return false;
    }
    out.assign(static_cast<size_t>(f.length), 0.0);
    for (int64_t i = 0; i < f.length; ++i)
    {
        double v = 0.0;
        switch (t)
        {
        case FieldType::kFLOAT16: v = halfBitsToFloat(loadAt<uint16_t>(f.data, i)); break;
        case FieldType::kBF16: v = bf16BitsToFloat(loadAt<uint16_t>(f.data, i)); break;
        case FieldType::kFLOAT32: v = loadAt<float>(f.data, i); break;
        default: v = loadAt<double>(f.data, i); break;
        }
        out[static_cast<size_t>(i)] = v;
    }
    return true;
}

bool lengthIs(FieldView const& f, int64_t expected, std::string& err)
{
    if (f.length != expected)
    {
        err = quoted(f.name) + " has " + std::to_string(f.length) + " entries, expected " + std::to_string(expected);
        return false;
    }
    return true;
}

bool intsInRange(FieldView const& f, std::vector<int64_t> const& v, int64_t lo, int64_t hi, std::string& err)
{
    for (size_t i = 0; i < v.size(); ++i)
    {
        if (v[i] < lo || v[i] > hi)
        {
            err = quoted(f.name) + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) + " is out of range ["
                + std::to_string(lo) + ", " + std::to_string(hi) + "]";
            return false;
        }
    }
    return true;
}

bool fixedInts(FieldView const& f, int64_t n, int64_t lo, int64_t hi, int32_t* dst, std::string& err)
{
    std::vector<int64_t> v;
    if (!readInts(f, v, err) || !lengthIs(f, n, err) || !intsInRange(f, v, lo, hi, err))
    {
        return false;
    }
    for (int64_t i = 0; i < n; ++i)
    {
        dst[i] = static_cast<int32_t>(v[static_cast<size_t>(i)]);
    }
    return true;
}

bool intArray(FieldView const& f, std::vector<int32_t>& dst, int64_t lo, int64_t hi, std::string& err)
{
    std::vector<int64_t> v;
    if (!readInts(f, v, err) || !intsInRange(f, v, lo, hi, err))
    {
        return false;
    }
    dst.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
    {
        // the range may include [2^31, 2^32) for packed words: keep the bit pattern
        dst[i] = static_cast<int32_t>(static_cast<uint32_t>(v[i] & 0xFFFFFFFFLL));
    }
    return true;
}

bool floatArray(FieldView const& f, std::vector<float>& dst, std::string& err)
{
    std::vector<double> v;
    if (!readFloats(f, v, err))
    {
        return false;
    }
    dst.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
    {
        float const x = static_cast<float>(v[i]);
        if (!std::isfinite(v[i]) || !std::isfinite(x))
        {
            err = quoted(f.name) + "[" + std::to_string(i) + "] is not a finite fp32 value";
            return false;
        }
        dst[i] = x;
    }
    return true;
}

bool readString(FieldView const& f, std::string& dst, std::string& err)
{
    if (static_cast<FieldType>(f.type) != FieldType::kCHAR)
    {
        err = quoted(f.name) + " has type " + typeName(f.type) + ", expected a string (kCHAR)";
        return false;
    }
    char const* p = static_cast<char const*>(f.data);
    int64_t n = f.length;
    while (n > 0 && p[n - 1] == '\0') // TensorRT 10 appends (and counts) a NUL, 8.2 does not
    {
        --n;
    }
    dst.assign(p == nullptr ? "" : p, p == nullptr ? 0 : static_cast<size_t>(n));
    if (dst.find('\0') != std::string::npos)
    {
        err = quoted(f.name) + " contains an embedded NUL";
        return false;
    }
    return true;
}

// ------------------------------------------------------------------ blob I/O
class Writer
{
public:
    explicit Writer(unsigned char* p)
        : mP(p)
    {
    }
    template <typename T>
    void put(T v)
    {
        std::memcpy(mP, &v, sizeof(T));
        mP += sizeof(T);
    }
    template <typename T>
    void putArray(std::vector<T> const& v)
    {
        put<uint32_t>(static_cast<uint32_t>(v.size()));
        if (!v.empty())
        {
            std::memcpy(mP, v.data(), v.size() * sizeof(T));
            mP += v.size() * sizeof(T);
        }
    }
    unsigned char* pos() const { return mP; }

private:
    unsigned char* mP;
};

class Reader
{
public:
    Reader(unsigned char const* p, size_t n)
        : mP(p)
        , mLeft(n)
    {
    }
    template <typename T>
    bool get(T& v)
    {
        if (mLeft < sizeof(T))
        {
            return false;
        }
        std::memcpy(&v, mP, sizeof(T));
        mP += sizeof(T);
        mLeft -= sizeof(T);
        return true;
    }
    template <typename T>
    bool getArray(std::vector<T>& v)
    {
        uint32_t n = 0;
        if (!get(n) || static_cast<size_t>(n) > mLeft / sizeof(T)) // check before allocating
        {
            return false;
        }
        v.resize(n);
        if (n != 0)
        {
            std::memcpy(v.data(), mP, static_cast<size_t>(n) * sizeof(T));
            mP += static_cast<size_t>(n) * sizeof(T);
            mLeft -= static_cast<size_t>(n) * sizeof(T);
        }
        return true;
    }
    size_t left() const { return mLeft; }

private:
    unsigned char const* mP;
    size_t mLeft;
};

constexpr size_t kHeaderScalars = 15; // int32 scalars after magic/version/dtype
constexpr size_t kChecksumBytes = sizeof(uint64_t);

} // namespace

uint64_t blobChecksum(void const* data, size_t length)
{
    uint64_t h = 1469598103934665603ULL; // FNV-1a 64
    unsigned char const* p = static_cast<unsigned char const*>(data);
    for (size_t i = 0; i < length; ++i)
    {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void setLogSink(LogSink sink)
{
    gSink.store(sink);
}

void logMessage(LogLevel level, std::string const& message)
{
    LogSink const sink = gSink.load();
    if (sink != nullptr)
    {
        sink(level, message.c_str());
        return;
    }
    if (static_cast<int32_t>(level) <= defaultLogThreshold())
    {
        std::fprintf(stderr, "[trt-sparse] %s: SparseConv2d: %s\n", levelName(level), message.c_str());
    }
}

void logCurrentException(char const* where) noexcept
{
    try
    {
        try
        {
            throw;
        }
        catch (std::exception const& e)
        {
            logMessage(LogLevel::kERROR, std::string(where) + ": exception: " + e.what());
        }
        catch (...)
        {
            logMessage(LogLevel::kERROR, std::string(where) + ": unknown exception");
        }
    }
    catch (...) // logging itself failed (out of memory): nothing more to do
    {
    }
}

std::vector<FieldDecl> const& fieldDecls()
{
    static std::vector<FieldDecl> const decls = {
        {kFVersion, FieldType::kCHAR, 0},
        {kFNamespace, FieldType::kCHAR, 0},
        {kFFormatVersion, FieldType::kINT32, 1},
        {kFWeightShape, FieldType::kINT32, 4},
        {kFStrides, FieldType::kINT32, 2},
        {kFPads, FieldType::kINT32, 4},
        {kFDilations, FieldType::kINT32, 2},
        {kFActivation, FieldType::kINT32, 1},
        {kFClipMin, FieldType::kFLOAT32, 1},
        {kFClipMax, FieldType::kFLOAT32, 1},
        {kFWeightFormat, FieldType::kINT32, 1},
        {kFRowOffsets, FieldType::kINT32, 0},
        {kFIndices, FieldType::kINT32, 0},
        {kFValues, FieldType::kFLOAT32, 0},
        {kFPacked, FieldType::kINT32, 0},
        {kFBias, FieldType::kFLOAT32, 0},
    };
    return decls;
}

float halfBitsToFloat(uint16_t bits)
{
    uint32_t const sign = static_cast<uint32_t>(bits & 0x8000U) << 16;
    uint32_t const exp = (bits >> 10) & 0x1FU;
    uint32_t const man = bits & 0x3FFU;
    float mag;
    if (exp == 0)
    {
        mag = std::ldexp(static_cast<float>(man), -24); // zero or subnormal
    }
    else if (exp == 31)
    {
        mag = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    }
    else
    {
        mag = std::ldexp(static_cast<float>(man | 0x400U), static_cast<int>(exp) - 25);
    }
    return sign != 0 ? -mag : mag;
}

int64_t floorDiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
    {
        --q;
    }
    return q;
}

int64_t outputOffsetH(ConvSpec const& s)
{
    return static_cast<int64_t>(s.pad_top) + s.pad_bottom - static_cast<int64_t>(s.dilation_h) * (s.R - 1) - 1;
}

int64_t outputOffsetW(ConvSpec const& s)
{
    return static_cast<int64_t>(s.pad_left) + s.pad_right - static_cast<int64_t>(s.dilation_w) * (s.S - 1) - 1;
}

bool outputDims(ConvSpec const& s, int64_t H, int64_t W, int64_t& P, int64_t& Q)
{
    if (s.stride_h < 1 || s.stride_w < 1)
    {
        return false;
    }
    P = floorDiv(H + outputOffsetH(s), s.stride_h) + 1;
    Q = floorDiv(W + outputOffsetW(s), s.stride_w) + 1;
    return P >= 1 && Q >= 1;
}

bool validateSpec(ConvSpec const& s, std::string& err)
{
    int64_t const i32max = std::numeric_limits<int32_t>::max();
    if (s.format_version != kFormatVersion)
    {
        err = std::string("field '") + kFFormatVersion + "' = " + std::to_string(s.format_version)
            + " is not supported (this plugin reads format version " + std::to_string(kFormatVersion) + ")";
        return false;
    }
    if (s.K < 1 || s.C < 1 || s.R < 1 || s.S < 1)
    {
        err = "field 'weight_shape' must be 4 positive ints (K, C, R, S)";
        return false;
    }
    int64_t const crs = s.crs();
    if (crs > i32max)
    {
        err = "field 'weight_shape': C*R*S = " + std::to_string(crs) + " does not fit an int32 index";
        return false;
    }
    if (s.stride_h < 1 || s.stride_w < 1)
    {
        err = "field 'strides' must be >= 1";
        return false;
    }
    if (s.dilation_h < 1 || s.dilation_w < 1)
    {
        err = "field 'dilations' must be >= 1";
        return false;
    }
    if (static_cast<int64_t>(s.dilation_h) * (s.R - 1) + 1 > i32max
        || static_cast<int64_t>(s.dilation_w) * (s.S - 1) + 1 > i32max)
    {
        err = "field 'dilations': the dilated kernel extent overflows int32";
        return false;
    }
    if (s.pad_top < 0 || s.pad_left < 0 || s.pad_bottom < 0 || s.pad_right < 0)
    {
        err = "field 'pads' must be >= 0";
        return false;
    }
    if (s.activation < 0 || s.activation > 2)
    {
        err = "field 'activation' = " + std::to_string(s.activation) + " is not 0 (none), 1 (relu) or 2 (clip)";
        return false;
    }
    if (!std::isfinite(s.clip_min) || !std::isfinite(s.clip_max))
    {
        err = "fields 'clip_min'/'clip_max' must be finite";
        return false;
    }
    if (s.activation == 2 && !(s.clip_min <= s.clip_max))
    {
        err = "field 'clip_min' must be <= 'clip_max' for activation 2 (clip)";
        return false;
    }
    if (s.weight_format != 0 && s.weight_format != 1)
    {
        err = "field 'weight_format' = " + std::to_string(s.weight_format) + " is not 0 (exact) or 1 (packed32)";
        return false;
    }
    // CSR offsets
    if (static_cast<int64_t>(s.row_offsets.size()) != static_cast<int64_t>(s.K) + 1)
    {
        err = "field 'row_offsets' has " + std::to_string(s.row_offsets.size()) + " entries, expected K+1 = "
            + std::to_string(static_cast<int64_t>(s.K) + 1);
        return false;
    }
    if (s.row_offsets[0] != 0)
    {
        err = "field 'row_offsets'[0] must be 0, got " + std::to_string(s.row_offsets[0]);
        return false;
    }
    for (int64_t k = 0; k < s.K; ++k)
    {
        int64_t const d = static_cast<int64_t>(s.row_offsets[static_cast<size_t>(k + 1)]) - s.row_offsets[static_cast<size_t>(k)];
        if (d < 0)
        {
            err = "field 'row_offsets' is not non-decreasing at output channel " + std::to_string(k);
            return false;
        }
        if (d > crs)
        {
            err = "field 'row_offsets': output channel " + std::to_string(k) + " has " + std::to_string(d)
                + " nonzeros > C*R*S = " + std::to_string(crs);
            return false;
        }
    }
    int64_t const nnz = s.nnz();
    // payload
    std::vector<int32_t> decodedIdx;
    std::vector<int32_t> const* idx = &s.indices;
    if (s.weight_format == 0)
    {
        if (!s.packed.empty())
        {
            err = "field 'packed' given but 'weight_format' is 0 (exact)";
            return false;
        }
        if (static_cast<int64_t>(s.indices.size()) != nnz)
        {
            err = "field 'indices' has " + std::to_string(s.indices.size()) + " entries, 'row_offsets' says nnz = "
                + std::to_string(nnz);
            return false;
        }
        if (static_cast<int64_t>(s.values.size()) != nnz)
        {
            err = "field 'values' has " + std::to_string(s.values.size()) + " entries, 'row_offsets' says nnz = "
                + std::to_string(nnz);
            return false;
        }
        for (size_t i = 0; i < s.values.size(); ++i)
        {
            if (!std::isfinite(s.values[i]))
            {
                err = "field 'values'[" + std::to_string(i) + "] is not finite";
                return false;
            }
        }
    }
    else
    {
        if (!s.indices.empty() || !s.values.empty())
        {
            err = "fields 'indices'/'values' given but 'weight_format' is 1 (packed32: use 'packed')";
            return false;
        }
        if (crs > kPacked32MaxIndex)
        {
            err = "field 'weight_format' is 1 (packed32) but C*R*S = " + std::to_string(crs)
                + " does not fit its 16-bit index (max 65536)";
            return false;
        }
        if (static_cast<int64_t>(s.packed.size()) != nnz)
        {
            err = "field 'packed' has " + std::to_string(s.packed.size()) + " entries, 'row_offsets' says nnz = "
                + std::to_string(nnz);
            return false;
        }
        decodedIdx.resize(s.packed.size());
        for (size_t i = 0; i < s.packed.size(); ++i)
        {
            uint32_t const w = static_cast<uint32_t>(s.packed[i]);
            decodedIdx[i] = static_cast<int32_t>(w >> 16);
            if (((w >> 10) & 0x1FU) == 0x1FU)
            {
                err = "field 'packed'[" + std::to_string(i) + "] holds an fp16 Inf or NaN";
                return false;
            }
        }
        idx = &decodedIdx;
    }
    for (int64_t k = 0; k < s.K; ++k)
    {
        int64_t const b = s.row_offsets[static_cast<size_t>(k)];
        int64_t const e = s.row_offsets[static_cast<size_t>(k + 1)];
        for (int64_t i = b; i < e; ++i)
        {
            int64_t const v = (*idx)[static_cast<size_t>(i)];
            if (v < 0 || v >= crs)
            {
                err = std::string("field '") + (s.weight_format == 0 ? "indices" : "packed") + "'["
                    + std::to_string(i) + "]: index " + std::to_string(v) + " out of range [0, C*R*S = "
                    + std::to_string(crs) + ")";
                return false;
            }
            if (i > b && v <= (*idx)[static_cast<size_t>(i - 1)])
            {
                err = std::string("field '") + (s.weight_format == 0 ? "indices" : "packed")
                    + "': indices of output channel " + std::to_string(k) + " are not strictly increasing";
                return false;
            }
        }
    }
    if (!s.bias.empty())
    {
        if (static_cast<int64_t>(s.bias.size()) != s.K)
        {
            err = "field 'bias' has " + std::to_string(s.bias.size()) + " entries, expected K = " + std::to_string(s.K);
            return false;
        }
        for (size_t i = 0; i < s.bias.size(); ++i)
        {
            if (!std::isfinite(s.bias[i]))
            {
                err = "field 'bias'[" + std::to_string(i) + "] is not finite";
                return false;
            }
        }
    }
    return true;
}

bool parseFields(FieldView const* fields, int32_t nbFields, ConvSpec& out, std::string& err)
{
    if (nbFields < 0 || (nbFields > 0 && fields == nullptr))
    {
        err = "invalid field collection";
        return false;
    }
    ConvSpec s;
    std::vector<std::string> seen;
    bool haveShape = false;
    bool haveOffsets = false;
    bool haveIndices = false;
    bool haveValues = false;
    bool havePacked = false;
    bool haveBias = false;
    int64_t const i32max = std::numeric_limits<int32_t>::max();
    for (int32_t i = 0; i < nbFields; ++i)
    {
        FieldView const& f = fields[i];
        if (f.name == nullptr)
        {
            logMessage(LogLevel::kWARNING, "field #" + std::to_string(i) + " has no name; ignored");
            continue;
        }
        std::string const name(f.name);
        if (f.length < 0)
        {
            err = quoted(f.name) + " has a negative length";
            return false;
        }
        if (f.length > 0 && f.data == nullptr)
        {
            err = quoted(f.name) + " has " + std::to_string(f.length) + " entries but no data";
            return false;
        }
        bool known = false;
        for (FieldDecl const& d : fieldDecls())
        {
            known = known || name == d.name;
        }
        if (!known)
        {
            logMessage(LogLevel::kWARNING, "unknown " + quoted(f.name) + " ignored");
            continue;
        }
        for (std::string const& prev : seen)
        {
            if (prev == name)
            {
                err = quoted(f.name) + " given twice";
                return false;
            }
        }
        seen.push_back(name);
        bool ok = true;
        if (name == kFVersion)
        {
            std::string v;
            ok = readString(f, v, err);
            if (ok && v != kPluginVersion)
            {
                err = quoted(f.name) + " = '" + v + "', this library provides version '" + kPluginVersion + "'";
                ok = false;
            }
        }
        else if (name == kFNamespace)
        {
            std::string v;
            ok = readString(f, v, err);
            if (ok && v != kPluginNamespace)
            {
                err = quoted(f.name) + " = '" + v + "', this library registers the empty namespace";
                ok = false;
            }
        }
        else if (name == kFFormatVersion)
        {
            ok = fixedInts(f, 1, 0, i32max, &s.format_version, err);
        }
        else if (name == kFWeightShape)
        {
            int32_t v[4] = {0, 0, 0, 0};
            ok = fixedInts(f, 4, 1, i32max, v, err);
            s.K = v[0];
            s.C = v[1];
            s.R = v[2];
            s.S = v[3];
            haveShape = ok;
        }
        else if (name == kFStrides)
        {
            int32_t v[2] = {1, 1};
            ok = fixedInts(f, 2, 1, i32max, v, err);
            s.stride_h = v[0];
            s.stride_w = v[1];
        }
        else if (name == kFPads)
        {
            int32_t v[4] = {0, 0, 0, 0};
            ok = fixedInts(f, 4, 0, i32max, v, err);
            s.pad_top = v[0];
            s.pad_left = v[1];
            s.pad_bottom = v[2];
            s.pad_right = v[3];
        }
        else if (name == kFDilations)
        {
            int32_t v[2] = {1, 1};
            ok = fixedInts(f, 2, 1, i32max, v, err);
            s.dilation_h = v[0];
            s.dilation_w = v[1];
        }
        else if (name == kFActivation)
        {
            ok = fixedInts(f, 1, 0, 2, &s.activation, err);
        }
        else if (name == kFWeightFormat)
        {
            ok = fixedInts(f, 1, 0, 1, &s.weight_format, err);
        }
        else if (name == kFClipMin || name == kFClipMax)
        {
            std::vector<float> v;
            ok = floatArray(f, v, err) && lengthIs(f, 1, err);
            if (ok)
            {
                (name == kFClipMin ? s.clip_min : s.clip_max) = v[0];
            }
        }
        else if (name == kFRowOffsets)
        {
            ok = intArray(f, s.row_offsets, 0, i32max, err);
            haveOffsets = ok;
        }
        else if (name == kFIndices)
        {
            ok = intArray(f, s.indices, 0, i32max, err);
            haveIndices = ok;
        }
        else if (name == kFPacked)
        {
            // uint32 words reinterpreted as int32; accept either reading
            ok = intArray(f, s.packed, std::numeric_limits<int32_t>::min(), 0xFFFFFFFFLL, err);
            havePacked = ok;
        }
        else if (name == kFValues)
        {
            ok = floatArray(f, s.values, err);
            haveValues = ok;
        }
        else if (name == kFBias)
        {
            ok = floatArray(f, s.bias, err);
            haveBias = ok;
            if (ok && s.bias.empty())
            {
                err = "field 'bias' is empty (omit it for zero bias)";
                ok = false;
            }
        }
        if (!ok)
        {
            return false;
        }
    }
    if (!haveShape)
    {
        err = "required field 'weight_shape' is missing";
        return false;
    }
    if (!haveOffsets)
    {
        err = "required field 'row_offsets' is missing";
        return false;
    }
    if (s.weight_format == 0 && (!haveIndices || !haveValues))
    {
        if (havePacked)
        {
            err = "field 'packed' given but 'weight_format' is 0 (exact; set weight_format = 1 for packed32)";
        }
        else
        {
            err = std::string("required field '") + (haveIndices ? "values" : "indices")
                + "' is missing (weight_format 0, exact)";
        }
        return false;
    }
    if (s.weight_format == 1 && !havePacked)
    {
        err = "required field 'packed' is missing (weight_format 1, packed32)";
        return false;
    }
    (void) haveBias;
    if (!validateSpec(s, err))
    {
        return false;
    }
    out = std::move(s);
    return true;
}

std::vector<FieldView> specToFields(ConvSpec const& s, FieldScratch& x)
{
    int32_t const shape[4] = {s.K, s.C, s.R, s.S};
    int32_t const pads[4] = {s.pad_top, s.pad_left, s.pad_bottom, s.pad_right};
    for (int i = 0; i < 4; ++i)
    {
        x.weight_shape[i] = shape[i];
        x.pads[i] = pads[i];
    }
    x.strides[0] = s.stride_h;
    x.strides[1] = s.stride_w;
    x.dilations[0] = s.dilation_h;
    x.dilations[1] = s.dilation_w;
    // Pointers into s (scalars are members; arrays are vectors). A zero-length array
    // points at a static dummy so that no field has a null data pointer.
    static int32_t const kEmpty[1] = {0};
    auto arr = [](char const* name, void const* data, size_t n, FieldType t) {
        return FieldView{name, n == 0 ? static_cast<void const*>(kEmpty) : data, static_cast<int32_t>(t),
            static_cast<int32_t>(n)};
    };
    std::vector<FieldView> f;
    f.push_back(FieldView{kFFormatVersion, &s.format_version, static_cast<int32_t>(FieldType::kINT32), 1});
    f.push_back(FieldView{kFWeightShape, x.weight_shape, static_cast<int32_t>(FieldType::kINT32), 4});
    f.push_back(FieldView{kFStrides, x.strides, static_cast<int32_t>(FieldType::kINT32), 2});
    f.push_back(FieldView{kFPads, x.pads, static_cast<int32_t>(FieldType::kINT32), 4});
    f.push_back(FieldView{kFDilations, x.dilations, static_cast<int32_t>(FieldType::kINT32), 2});
    f.push_back(FieldView{kFActivation, &s.activation, static_cast<int32_t>(FieldType::kINT32), 1});
    f.push_back(FieldView{kFClipMin, &s.clip_min, static_cast<int32_t>(FieldType::kFLOAT32), 1});
    f.push_back(FieldView{kFClipMax, &s.clip_max, static_cast<int32_t>(FieldType::kFLOAT32), 1});
    f.push_back(FieldView{kFWeightFormat, &s.weight_format, static_cast<int32_t>(FieldType::kINT32), 1});
    f.push_back(arr(kFRowOffsets, s.row_offsets.data(), s.row_offsets.size(), FieldType::kINT32));
    if (s.weight_format == 0)
    {
        f.push_back(arr(kFIndices, s.indices.data(), s.indices.size(), FieldType::kINT32));
        f.push_back(arr(kFValues, s.values.data(), s.values.size(), FieldType::kFLOAT32));
    }
    else
    {
        f.push_back(arr(kFPacked, s.packed.data(), s.packed.size(), FieldType::kINT32));
    }
    if (!s.bias.empty())
    {
        f.push_back(arr(kFBias, s.bias.data(), s.bias.size(), FieldType::kFLOAT32));
    }
    return f;
}

size_t serializedSize(ConvSpec const& s)
{
    return 3 * sizeof(uint32_t) + kHeaderScalars * sizeof(int32_t) + 2 * sizeof(float) + 5 * sizeof(uint32_t)
        + s.row_offsets.size() * sizeof(int32_t) + s.indices.size() * sizeof(int32_t)
        + s.values.size() * sizeof(float) + s.packed.size() * sizeof(int32_t) + s.bias.size() * sizeof(float)
        + kChecksumBytes;
}

void serializeSpec(ConvSpec const& s, int32_t dtypeTag, void* buffer)
{
    unsigned char* const begin = static_cast<unsigned char*>(buffer);
    Writer w(begin);
    w.put<uint32_t>(kBlobMagic);
    w.put<uint32_t>(kBlobVersion);
    w.put<int32_t>(dtypeTag);
    int32_t const scalars[kHeaderScalars] = {s.format_version, s.K, s.C, s.R, s.S, s.stride_h, s.stride_w, s.pad_top,
        s.pad_left, s.pad_bottom, s.pad_right, s.dilation_h, s.dilation_w, s.activation, s.weight_format};
    for (int32_t v : scalars)
    {
        w.put<int32_t>(v);
    }
    w.put<float>(s.clip_min);
    w.put<float>(s.clip_max);
    w.putArray(s.row_offsets);
    w.putArray(s.indices);
    w.putArray(s.values);
    w.putArray(s.packed);
    w.putArray(s.bias);
    w.put<uint64_t>(blobChecksum(begin, static_cast<size_t>(w.pos() - begin)));
}

bool deserializeSpec(void const* data, size_t length, ConvSpec& out, int32_t& dtypeTag, std::string& err)
{
    if (data == nullptr)
    {
        err = "serialized data is null";
        return false;
    }
    unsigned char const* const p = static_cast<unsigned char const*>(data);
    if (length < 3 * sizeof(uint32_t) + kChecksumBytes)
    {
        err = "serialized data too short (" + std::to_string(length) + " bytes)";
        return false;
    }
    uint32_t magic = 0;
    uint32_t version = 0;
    std::memcpy(&magic, p, sizeof(magic));
    std::memcpy(&version, p + sizeof(magic), sizeof(version));
    if (magic != kBlobMagic)
    {
        err = "serialized data does not start with the SparseConv2d magic number (not this plugin's data)";
        return false;
    }
    if (version != kBlobVersion)
    {
        err = "serialized data has blob version " + std::to_string(version) + ", this library reads version "
            + std::to_string(kBlobVersion);
        return false;
    }
    size_t const body = length - kChecksumBytes;
    uint64_t stored = 0;
    std::memcpy(&stored, p + body, sizeof(stored));
    if (stored != blobChecksum(p, body))
    {
        err = "serialized data checksum mismatch (corrupt or truncated)";
        return false;
    }
    Reader r(p + 2 * sizeof(uint32_t), body - 2 * sizeof(uint32_t));
    ConvSpec s;
    int32_t tag = -1;
    int32_t scalars[kHeaderScalars];
    bool ok = r.get(tag);
    for (size_t i = 0; ok && i < kHeaderScalars; ++i)
    {
        ok = r.get(scalars[i]);
    }
    ok = ok && r.get(s.clip_min) && r.get(s.clip_max);
    ok = ok && r.getArray(s.row_offsets) && r.getArray(s.indices) && r.getArray(s.values) && r.getArray(s.packed)
        && r.getArray(s.bias);
    if (!ok)
    {
        err = "serialized data truncated (a length runs past the end)";
        return false;
    }
    if (r.left() != 0)
    {
        err = "serialized data has " + std::to_string(r.left()) + " unexpected trailing bytes";
        return false;
    }
    if (tag < -1 || tag > 1)
    {
        err = "serialized data has an unknown data type tag " + std::to_string(tag);
        return false;
    }
    s.format_version = scalars[0];
    s.K = scalars[1];
    s.C = scalars[2];
    s.R = scalars[3];
    s.S = scalars[4];
    s.stride_h = scalars[5];
    s.stride_w = scalars[6];
    s.pad_top = scalars[7];
    s.pad_left = scalars[8];
    s.pad_bottom = scalars[9];
    s.pad_right = scalars[10];
    s.dilation_h = scalars[11];
    s.dilation_w = scalars[12];
    s.activation = scalars[13];
    s.weight_format = scalars[14];
    if (!validateSpec(s, err))
    {
        err = "serialized data invalid: " + err;
        return false;
    }
    out = std::move(s);
    dtypeTag = tag;
    return true;
}

void decodeWeights(ConvSpec const& s, std::vector<int32_t>& indices, std::vector<float>& values)
{
    if (s.weight_format == 0)
    {
        indices = s.indices;
        values = s.values;
        return;
    }
    indices.resize(s.packed.size());
    values.resize(s.packed.size());
    for (size_t i = 0; i < s.packed.size(); ++i)
    {
        uint32_t const w = static_cast<uint32_t>(s.packed[i]);
        indices[i] = static_cast<int32_t>(w >> 16);
        values[i] = halfBitsToFloat(static_cast<uint16_t>(w & 0xFFFFU));
    }
}

std::string describeSpec(ConvSpec const& s)
{
    std::ostringstream o;
    o << "K=" << s.K << " C=" << s.C << " " << s.R << "x" << s.S << " stride=" << s.stride_h << "x" << s.stride_w
      << " pads=" << s.pad_top << "," << s.pad_left << "," << s.pad_bottom << "," << s.pad_right
      << " dil=" << s.dilation_h << "x" << s.dilation_w << " act=" << s.activation << " nnz=" << s.nnz()
      << (s.weight_format == 1 ? " packed32" : " exact") << (s.bias.empty() ? "" : " bias");
    return o.str();
}

} // namespace trt_sparse
