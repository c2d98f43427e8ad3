// Shared pieces of the plugin drivers (tests/cpp/plugin_driver*.cpp): checks, a small
// IExprBuilder, owned field sets, random sparse weights, the float64 reference.
#ifndef TRT_SPARSE_TESTS_DRIVER_COMMON_H
#define TRT_SPARSE_TESTS_DRIVER_COMMON_H

#include "NvInferRuntime.h"
#include "half_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace nv = nvinfer1;

#if NV_TENSORRT_MAJOR >= 10
using DimInt = int64_t;
#else
using DimInt = int32_t;
#endif

static int gFailures = 0;
static int gChecks = 0;

#define CHECK(cond, ...)                                                                                               \
    do                                                                                                                 \
    {                                                                                                                  \
        ++gChecks;                                                                                                     \
        if (!(cond))                                                                                                   \
        {                                                                                                              \
            ++gFailures;                                                                                               \
            std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                \
            std::printf(__VA_ARGS__);                                                                                  \
            std::printf("\n");                                                                                         \
        }                                                                                                              \
    } while (0)


// ------------------------------------------------------------------ expression builder
// A small IExprBuilder: expressions are trees over the symbols N, H, W that can be
// evaluated later; operations on two constants fold to a constant (as TensorRT does).
class Expr : public nv::IDimensionExpr, public nv::apiv::VDimensionExpr
{
public:
    enum Kind
    {
        kCONST,
        kSYM,
        kOP
    };
    Expr(Kind k, int64_t v, int sym, nv::DimensionOperation op, Expr const* a, Expr const* b)
        : kind(k)
        , value(v)
        , symbol(sym)
        , oper(op)
        , lhs(a)
        , rhs(b)
    {
        mImpl = this;
    }
    ~Expr() noexcept override = default;
    bool isConstant() const override
    {
        return kind == kCONST;
    }
    DimInt getConstantValue() const override
    {
        return static_cast<DimInt>(kind == kCONST ? value : -1);
    }
#if NV_TENSORRT_MAJOR >= 10
    bool isSizeTensor() const override
    {
        return false;
    }
#endif
    int64_t eval(int64_t const* env) const
    {
        if (kind == kCONST)
            return value;
        if (kind == kSYM)
            return env[symbol];
        return apply(oper, lhs->eval(env), rhs->eval(env));
    }
    static int64_t apply(nv::DimensionOperation op, int64_t a, int64_t b)
    {
        using O = nv::DimensionOperation;
        switch (op)
        {
        case O::kSUM: return a + b;
        case O::kPROD: return a * b;
        case O::kMAX: return std::max(a, b);
        case O::kMIN: return std::min(a, b);
        case O::kSUB: return a - b;
        case O::kEQUAL: return a == b;
        case O::kLESS: return a < b;
        case O::kFLOOR_DIV: return (a / b) - ((a % b != 0) && ((a < 0) != (b < 0)));
        case O::kCEIL_DIV: return -((-a) / b - (((-a) % b != 0) && (((-a) < 0) != (b < 0))));
        }
        return 0;
    }
    Kind kind;
    int64_t value;
    int symbol;
    nv::DimensionOperation oper;
    Expr const* lhs;
    Expr const* rhs;
};

class ExprBuilder : public nv::IExprBuilder, public nv::apiv::VExprBuilder
{
public:
    ExprBuilder()
    {
        mImpl = this;
    }
    ~ExprBuilder() noexcept override = default;
    nv::IDimensionExpr const* constant(DimInt v) override
    {
        return make(Expr::kCONST, v, -1, nv::DimensionOperation::kSUM, nullptr, nullptr);
    }
    nv::IDimensionExpr const* operation(
        nv::DimensionOperation op, nv::IDimensionExpr const& a, nv::IDimensionExpr const& b) override
    {
        ++ops;
        Expr const& x = static_cast<Expr const&>(a);
        Expr const& y = static_cast<Expr const&>(b);
        if (x.kind == Expr::kCONST && y.kind == Expr::kCONST)
            return make(Expr::kCONST, Expr::apply(op, x.value, y.value), -1, op, nullptr, nullptr);
        return make(Expr::kOP, 0, -1, op, &x, &y);
    }
#if NV_TENSORRT_MAJOR >= 10
    nv::IDimensionExpr const* declareSizeTensor(int32_t, nv::IDimensionExpr const&, nv::IDimensionExpr const&) override
    {
        return nullptr;
    }
#endif
    nv::IDimensionExpr const* symbol(int id)
    {
        return make(Expr::kSYM, 0, id, nv::DimensionOperation::kSUM, nullptr, nullptr);
    }
    int ops = 0;

private:
    Expr const* make(Expr::Kind k, int64_t v, int s, nv::DimensionOperation op, Expr const* a, Expr const* b)
    {
        mNodes.emplace_back(new Expr(k, v, s, op, a, b));
        return mNodes.back().get();
    }
    std::vector<std::unique_ptr<Expr>> mNodes;
};

// A symbolic N x C x H x W input (symbols 0, 2, 3 for N, H, W).
inline nv::DimsExprs symbolicInput(ExprBuilder& eb, int C)
{
    nv::DimsExprs in{};
    in.nbDims = 4;
    in.d[0] = eb.symbol(0);
    in.d[1] = eb.constant(C);
    in.d[2] = eb.symbol(2);
    in.d[3] = eb.symbol(3);
    return in;
}


// ------------------------------------------------------------------ field sets
inline size_t elemSize(nv::PluginFieldType t)
{
    switch (t)
    {
    case nv::PluginFieldType::kFLOAT16: return 2;
    case nv::PluginFieldType::kFLOAT32: return 4;
    case nv::PluginFieldType::kFLOAT64: return 8;
    case nv::PluginFieldType::kINT8: return 1;
    case nv::PluginFieldType::kINT16: return 2;
    case nv::PluginFieldType::kINT32: return 4;
    case nv::PluginFieldType::kCHAR: return 1;
#if NV_TENSORRT_MAJOR >= 10
    case nv::PluginFieldType::kINT64: return 8;
    case nv::PluginFieldType::kBF16: return 2;
#endif
    default: return 8;
    }
}

// Owns names and data like the ONNX parser's temporary buffers.
struct FieldSet
{
    std::deque<std::string> names;
    std::deque<std::vector<unsigned char>> bufs;
    std::vector<nv::PluginField> fields;
    nv::PluginFieldCollection fc{};

    void add(char const* name, nv::PluginFieldType t, void const* data, int32_t n, bool nullData = false)
    {
        names.emplace_back(name);
        size_t const bytes = static_cast<size_t>(n < 0 ? 0 : n) * elemSize(t);
        bufs.emplace_back(bytes);
        if (bytes && data)
            std::memcpy(bufs.back().data(), data, bytes);
        fields.emplace_back(names.back().c_str(), (nullData || bytes == 0) ? nullptr : bufs.back().data(), t, n);
    }
    void ints(char const* name, std::vector<int32_t> const& v)
    {
        add(name, nv::PluginFieldType::kINT32, v.data(), static_cast<int32_t>(v.size()));
    }
    void floats(char const* name, std::vector<float> const& v)
    {
        add(name, nv::PluginFieldType::kFLOAT32, v.data(), static_cast<int32_t>(v.size()));
    }
    void str(char const* name, std::string const& s, bool withNul)
    {
        add(name, nv::PluginFieldType::kCHAR, s.c_str(), static_cast<int32_t>(s.size() + (withNul ? 1 : 0)));
    }
    void remove(char const* name)
    {
        fields.erase(std::remove_if(fields.begin(), fields.end(),
                         [&](nv::PluginField const& f) { return std::strcmp(f.name, name) == 0; }),
            fields.end());
    }
    nv::PluginField* find(char const* name)
    {
        for (auto& f : fields)
            if (std::strcmp(f.name, name) == 0)
                return &f;
        return nullptr;
    }
    nv::PluginFieldCollection const* collection()
    {
        fc.nbFields = static_cast<int32_t>(fields.size());
        fc.fields = fields.data();
        return &fc;
    }
    void scribble() // what happens to the parser's buffers after createPlugin returns
    {
        for (auto& b : bufs)
            std::fill(b.begin(), b.end(), static_cast<unsigned char>(0xCD));
        for (auto& n : names)
            std::fill(n.begin(), n.end(), '#');
    }
};

// getFieldsToSerialize -> bytes -> fields again (what an engine file does)
inline void copyFields(nv::PluginFieldCollection const* src, FieldSet& dst)
{
    for (int32_t i = 0; i < src->nbFields; ++i)
    {
        nv::PluginField const& f = src->fields[i];
        dst.add(f.name, f.type, f.data, f.length);
    }
}

// ------------------------------------------------------------------ cases
struct Case
{
    char const* name;
    int C, K, R, S, sh, sw, pt, pl, pb, pr, dh, dw, act;
    float cmin, cmax;
    bool bias;
    int mode;       // 0 exact, 1 packed32
    double density; // fraction of nonzeros
    int pattern;    // 0 random, 1 skewed (some channels dense, some empty)
    std::vector<std::vector<int>> shapes; // N, H, W
};

struct Weights
{
    std::vector<double> dense; // K*C*R*S
    std::vector<int32_t> offsets, indices, packed;
    std::vector<float> values, bias;
};

inline Weights makeWeights(Case const& c, std::mt19937& rng)
{
    std::uniform_real_distribution<float> uni(-1.0F, 1.0F);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    int const crs = c.C * c.R * c.S;
    Weights w;
    w.dense.assign(static_cast<size_t>(c.K) * crs, 0.0);
    w.offsets.push_back(0);
    for (int k = 0; k < c.K; ++k)
    {
        double d = c.density;
        if (c.pattern == 1)
            d = (k % 3 == 0) ? 1.0 : ((k % 3 == 1) ? 0.0 : c.density);
        for (int i = 0; i < crs; ++i)
        {
            if (u01(rng) >= d)
                continue;
            float v = uni(rng);
            if (v == 0.0F)
                v = 0.5F;
            if (c.mode == 1)
            {
                v = roundToHalf(v);
                if (v == 0.0F)
                    v = 0.25F;
                uint16_t const h = floatToHalfT(v);
                w.packed.push_back(static_cast<int32_t>((static_cast<uint32_t>(i) << 16) | h));
            }
            else
            {
                w.indices.push_back(i);
                w.values.push_back(v);
            }
            w.dense[static_cast<size_t>(k) * crs + i] = v;
        }
        w.offsets.push_back(static_cast<int32_t>(c.mode == 1 ? w.packed.size() : w.indices.size()));
    }
    if (c.bias)
        for (int k = 0; k < c.K; ++k)
            w.bias.push_back(uni(rng));
    return w;
}

inline void fillFields(Case const& c, Weights const& w, FieldSet& fs, bool nulStrings)
{
    fs.str("plugin_version", "1", nulStrings);
    fs.str("plugin_namespace", "", nulStrings);
    fs.ints("format_version", {1});
    fs.ints("weight_shape", {c.K, c.C, c.R, c.S});
    fs.ints("strides", {c.sh, c.sw});
    fs.ints("pads", {c.pt, c.pl, c.pb, c.pr});
    fs.ints("dilations", {c.dh, c.dw});
    fs.ints("activation", {c.act});
    fs.floats("clip_min", {c.cmin});
    fs.floats("clip_max", {c.cmax});
    fs.ints("weight_format", {c.mode});
    fs.ints("row_offsets", w.offsets);
    if (c.mode == 1)
        fs.ints("packed", w.packed);
    else
    {
        fs.ints("indices", w.indices);
        fs.floats("values", w.values);
    }
    if (c.bias)
        fs.floats("bias", w.bias);
}

// Output tolerances (relative L2 vs float64): fp16 I/O, fp32 I/O, fp32 I/O with TF32 math allowed
// (10-bit mantissa products, fp32 accumulation; tests/test_kernels_gpu.py uses the same 3e-3).
constexpr double kTolFp16 = 2e-3;
constexpr double kTolFp32 = 1e-5;
constexpr double kTolTf32 = 3e-3;
// Variant ids of the CPU stand-in (tests/cpp/tsc_cpu_stub.cpp): what its tuning "picks" without and
// with TF32 allowed (the latter only for fp32 plans whose math was set first).
constexpr int32_t kStubTunedId = 2;
constexpr int32_t kStubTf32Id = 5;

// The serialized value of an int field (e.g. "allow_tf32"): false if absent or not one kINT32.
inline bool findIntField(nv::PluginFieldCollection const* fc, char const* name, int32_t& out)
{
    for (int32_t i = 0; fc != nullptr && i < fc->nbFields; ++i)
        if (fc->fields[i].name != nullptr && std::strcmp(fc->fields[i].name, name) == 0)
        {
            if (fc->fields[i].type != nv::PluginFieldType::kINT32 || fc->fields[i].length != 1)
                return false;
            std::memcpy(&out, fc->fields[i].data, sizeof(out));
            return true;
        }
    return false;
}

// A 4-D nvinfer1::Dims.
inline nv::Dims dims4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    nv::Dims x{};
    x.nbDims = 4;
    x.d[0] = static_cast<DimInt>(a);
    x.d[1] = static_cast<DimInt>(b);
    x.d[2] = static_cast<DimInt>(c);
    x.d[3] = static_cast<DimInt>(d);
    return x;
}

// The smallest and largest N, H, W over a case's shapes (an optimization profile spanning them).
struct ShapeBounds
{
    int minN = 1 << 30, minH = 1 << 30, minW = 1 << 30, maxN = 0, maxH = 0, maxW = 0;
};

inline ShapeBounds shapeBounds(Case const& c)
{
    ShapeBounds b;
    for (auto const& s : c.shapes)
    {
        b.minN = std::min(b.minN, s[0]);
        b.minH = std::min(b.minH, s[1]);
        b.minW = std::min(b.minW, s[2]);
        b.maxN = std::max(b.maxN, s[0]);
        b.maxH = std::max(b.maxH, s[1]);
        b.maxW = std::max(b.maxW, s[2]);
    }
    return b;
}

// Relative L2 error of y against ref (the absolute L2 norm of y when ref is all zero).
inline double relErr(std::vector<double> const& y, std::vector<double> const& ref)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.size(); ++i)
    {
        num += (y[i] - ref[i]) * (y[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline int64_t outDim(int64_t in, int pa, int pb, int d, int k, int s)
{
    int64_t const num = in + pa + pb - static_cast<int64_t>(d) * (k - 1) - 1;
    if (num < 0)
        return 0;
    return num / s + 1;
}

inline std::vector<double> reference(Case const& c, Weights const& w, std::vector<double> const& x, int N, int H, int W)
{
    int64_t const P = outDim(H, c.pt, c.pb, c.dh, c.R, c.sh), Q = outDim(W, c.pl, c.pr, c.dw, c.S, c.sw);
    std::vector<double> y(static_cast<size_t>(N) * c.K * P * Q, 0.0);
    int const crs = c.C * c.R * c.S;
    for (int n = 0; n < N; ++n)
        for (int k = 0; k < c.K; ++k)
            for (int64_t p = 0; p < P; ++p)
                for (int64_t q = 0; q < Q; ++q)
                {
                    double acc = c.bias ? w.bias[k] : 0.0;
                    for (int ci = 0; ci < c.C; ++ci)
                        for (int r = 0; r < c.R; ++r)
                            for (int s = 0; s < c.S; ++s)
                            {
                                double const wv = w.dense[static_cast<size_t>(k) * crs + (ci * c.R + r) * c.S + s];
                                if (wv == 0.0)
                                    continue;
                                int64_t const iy = p * c.sh - c.pt + r * c.dh, ix = q * c.sw - c.pl + s * c.dw;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                    continue;
                                acc += wv * x[((static_cast<size_t>(n) * c.C + ci) * H + iy) * W + ix];
                            }
                    if (c.act == 1)
                        acc = std::max(acc, 0.0);
                    else if (c.act == 2)
                        acc = std::min(std::max(acc, static_cast<double>(c.cmin)), static_cast<double>(c.cmax));
                    y[((static_cast<size_t>(n) * c.K + k) * P + p) * Q + q] = acc;
                }
    return y;
}


// The shapes both drivers run (fp32 and fp16 each).
inline std::vector<Case> defaultCases()
{
    return {
        {"3x3_s1_p1_relu", 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.F, 6.F, true, 0, 0.1, 0,
            {{1, 15, 17}, {2, 8, 8}, {3, 1, 1}}},
        {"1x1_bias", 8, 12, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0.F, 6.F, true, 0, 0.3, 0, {{2, 7, 9}, {1, 1, 1}}},
        {"5x3_s2x1_asym_dil_clip", 5, 7, 5, 3, 2, 1, 2, 1, 0, 1, 1, 2, 2, 0.F, 6.F, false, 0, 0.4, 0,
            {{1, 11, 13}, {2, 6, 5}}},
        {"3x3_s2_packed_relu", 32, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0.F, 6.F, true, 1, 0.1, 0,
            {{1, 28, 28}, {4, 9, 14}}},
        {"7x7_s2_p3_stem_packed", 3, 16, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 0, 0.F, 6.F, false, 1, 0.2, 0,
            {{1, 32, 32}, {2, 17, 23}}},
        {"skewed_empty_dense", 12, 9, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 2, -1.F, 1.F, true, 0, 0.05, 1,
            {{2, 10, 10}, {1, 3, 4}}},
        {"all_zero_weight", 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0.F, 6.F, true, 0, 0.0, 0, {{1, 6, 6}}},
        {"dense_weight", 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0.F, 6.F, false, 1, 1.0, 0, {{1, 8, 8}}},
    };
}

#endif