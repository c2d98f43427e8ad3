/*
 * trt-sparse: version-independent core of the SparseConv2d plugin (see the header):
 * logging, validation, shape arithmetic, packed32 decoding. Field parsing lives in
 * SparseConv2dFields.cpp, the V2 blob in SparseConv2dBlob.cpp.
 * Pure C++14, no TensorRT / CUDA: safe to run under AddressSanitizer on the CPU.
 */
#include "SparseConv2dCore.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

} // namespace

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
        err = "field 'format_version' = " + std::to_string(s.format_version)
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
    if (s.allow_tf32 != 0 && s.allow_tf32 != 1)
    {
        err = "field 'allow_tf32' = " + std::to_string(s.allow_tf32) + " is not 0 (exact fp32) or 1 (TF32 allowed)";
        return false;
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
      << (s.weight_format == 1 ? " packed32" : " exact") << (s.bias.empty() ? "" : " bias")
      << (s.allow_tf32 == 1 ? " tf32" : "");
    return o.str();
}

} // namespace trt_sparse
