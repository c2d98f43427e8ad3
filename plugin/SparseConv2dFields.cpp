/*
 * trt-sparse: SparseConv2d plugin fields: what getFieldNames() declares, parsing of a
 * TensorRT field collection (any integer / float type the parsers produce, strings with
 * or without a trailing NUL, zero-length tensors; everything deep-copied and validated),
 * and the fields getFieldsToSerialize() returns. C++14, no TensorRT / CUDA.
 */
#include "SparseConv2dCore.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace trt_sparse
{

namespace
{

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
char const* const kFAllowTf32 = "allow_tf32";

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

} // namespace

char const* const kTacticField = "tactic";

bool checkTactic(Tactic const& t)
{
    return t.id >= 0 && t.id < kTacticIdLimit && t.n >= 1 && t.h >= 1 && t.w >= 1
        && (t.dtype == 0 || t.dtype == 1) && (t.layout == 0 || t.layout == 1);
}

bool parseTactic(FieldView const* fields, int32_t nbFields, Tactic& out, std::string& err)
{
    out = Tactic();
    if (nbFields < 0 || (nbFields > 0 && fields == nullptr))
    {
        err = "invalid field collection";
        return false;
    }
    for (int32_t i = 0; i < nbFields; ++i)
    {
        FieldView const& f = fields[i];
        if (f.name == nullptr || std::strcmp(f.name, kTacticField) != 0)
        {
            continue;
        }
        if (f.type != static_cast<int32_t>(FieldType::kINT32) || f.length != kTacticLength || f.data == nullptr)
        {
            err = quoted(kTacticField) + " must be kINT32 with " + std::to_string(kTacticLength) + " values";
            return false;
        }
        int32_t v[kTacticLength];
        std::memcpy(v, f.data, sizeof(v));
        Tactic t;
        t.id = v[0];
        t.n = v[1];
        t.h = v[2];
        t.w = v[3];
        t.setIo(v[4]);
        if (!checkTactic(t))
        {
            err = quoted(kTacticField) + " has out-of-range values (id " + std::to_string(t.id) + ")";
            return false;
        }
        out = t;
        return true;
    }
    return true;
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
        {kFAllowTf32, FieldType::kINT32, 1},
    };
    return decls;
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
        if (name == kTacticField)
        {
            continue; // the plugin's tuned kernel choice (parseTactic), not a node attribute
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
        else if (name == kFAllowTf32)
        {
            std::vector<int64_t> v;
            ok = readInts(f, v, err) && lengthIs(f, 1, err);
            if (ok && v[0] != 0 && v[0] != 1)
            {
                err = quoted(f.name) + " = " + std::to_string(v[0]) + " is not 0 (exact fp32) or 1 (TF32 allowed)";
                ok = false;
            }
            if (ok)
            {
                s.allow_tf32 = static_cast<int32_t>(v[0]);
            }
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
    if (s.allow_tf32 != 0) // only when set: a default layer serializes the fields of earlier builds
    {
        f.push_back(FieldView{kFAllowTf32, &s.allow_tf32, static_cast<int32_t>(FieldType::kINT32), 1});
    }
    return f;
}

} // namespace trt_sparse
