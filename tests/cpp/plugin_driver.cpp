/*
 * trt-sparse plugin driver: exercises libtrt_sparse_plugin.so (TensorRT >= 10 build,
 * IPluginV3) exactly as TensorRT would, without a TensorRT runtime:
 *
 *   dlopen -> setLoggerFinder + getCreators -> creator->createPlugin(fields, kBUILD)
 *   (field buffers scribbled over right after: the plugin must deep-copy) -> clone ->
 *   getOutputDataTypes / getOutputShapes (with the expression builder below, symbolic
 *   and constant dims) / supportsFormatCombination -> configurePlugin(min/opt/max) ->
 *   getWorkspaceSize -> getFieldsToSerialize (bytes copied like an engine file) ->
 *   createPlugin(kRUNTIME) -> attachToContext -> onShapeChange -> enqueue (several
 *   shapes, output poisoned with NaN first) vs a float64 reference computed here ->
 *   delete everything; then the live-plan count (CPU stub) must be back to zero.
 * Also: bad field collections must be refused (nullptr, reason logged on stderr).
 *
 * Build: with -DDRIVER_GPU the buffers are CUDA device memory (real kernels in the
 * plugin); without it they are host memory (plugin linked with tests/cpp/tsc_cpu_stub.cpp).
 * usage: plugin_driver PLUGIN.so [--seed N]      exit code 0 = all checks passed
 */
#include "NvInferRuntime.h"
#include "driver_common.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#ifdef DRIVER_GPU
#include <cuda_runtime_api.h>
#endif


// ------------------------------------------------------------------ memory
#ifdef DRIVER_GPU
#define CUDA_OK(x)                                                                                                     \
    do                                                                                                                 \
    {                                                                                                                  \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess)                                                                                         \
        {                                                                                                              \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);                       \
            std::exit(3);                                                                                              \
        }                                                                                                              \
    } while (0)
static void* devAlloc(size_t n)
{
    void* p = nullptr;
    if (n)
        CUDA_OK(cudaMalloc(&p, n));
    return p;
}
static void devFree(void* p)
{
    if (p)
        CUDA_OK(cudaFree(p));
}
static void toDev(void* d, void const* h, size_t n)
{
    CUDA_OK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
}
static void toHost(void* h, void const* d, size_t n)
{
    CUDA_OK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
}
#else
static void* devAlloc(size_t n)
{
    return n ? std::malloc(n) : nullptr;
}
static void devFree(void* p)
{
    std::free(p);
}
static void toDev(void* d, void const* h, size_t n)
{
    std::memcpy(d, h, n);
}
static void toHost(void* h, void const* d, size_t n)
{
    std::memcpy(h, d, n);
}
#endif

// ------------------------------------------------------------------ plugin helpers
struct Lib
{
    void* handle = nullptr;
    nv::IPluginCreatorV3One* creator = nullptr;
    int32_t (*livePlans)() = nullptr;
    void (*lastSetChoice)(int32_t*, int32_t) = nullptr; // CPU stub only
};

// The serialized "tactic" field (id, N, H, W, dtype), if present with the right type and length.
static bool findTactic(nv::PluginFieldCollection const* fc, int32_t out[5])
{
    for (int32_t i = 0; fc != nullptr && i < fc->nbFields; ++i)
        if (fc->fields[i].name != nullptr && std::strcmp(fc->fields[i].name, "tactic") == 0)
        {
            if (fc->fields[i].type != nv::PluginFieldType::kINT32 || fc->fields[i].length != 5)
                return false;
            std::memcpy(out, fc->fields[i].data, 5 * sizeof(int32_t));
            return true;
        }
    return false;
}

static bool noDeviceMode()
{
    char const* v = std::getenv("TSC_STUB_NO_DEVICE");
    char const* t = std::getenv("TRT_SPARSE_NO_TUNE"); // build-time tuning switched off
    return (v != nullptr && v[0] == '1') || (t != nullptr && t[0] == '1');
}

static nv::IPluginV3OneBuild* buildOf(nv::IPluginV3* p)
{
    return static_cast<nv::IPluginV3OneBuild*>(p->getCapabilityInterface(nv::PluginCapabilityType::kBUILD));
}
static nv::IPluginV3OneRuntime* runtimeOf(nv::IPluginV3* p)
{
    return static_cast<nv::IPluginV3OneRuntime*>(p->getCapabilityInterface(nv::PluginCapabilityType::kRUNTIME));
}
static nv::IPluginV3OneCore* coreOf(nv::IPluginV3* p)
{
    return static_cast<nv::IPluginV3OneCore*>(p->getCapabilityInterface(nv::PluginCapabilityType::kCORE));
}

static int livePlans(Lib const& lib)
{
    return lib.livePlans ? lib.livePlans() : -1;
}

// ------------------------------------------------------------------ one case
// tf32: the node carries allow_tf32 = 1 (fp32 plans may run TF32 variants; fp16 ignores it). Without it,
// half the runs carry an explicit allow_tf32 = 0, which must behave (and serialize) like no field.
static void runCase(Lib const& lib, Case const& c, nv::DataType dt, bool nulStrings, bool tf32, std::mt19937& rng)
{
    bool const half = dt == nv::DataType::kHALF;
    char const* dtn = half ? "fp16" : "fp32";
    Weights const w = makeWeights(c, rng);
    int const plansBefore = livePlans(lib);

    FieldSet fs;
    fillFields(c, w, fs, nulStrings);
    if (tf32 || nulStrings)
        fs.ints("allow_tf32", {tf32 ? 1 : 0});
    nv::IPluginV3* p1 = lib.creator->createPlugin(c.name, fs.collection(), nv::TensorRTPhase::kBUILD);
    CHECK(p1 != nullptr, "%s: createPlugin(kBUILD) failed", c.name);
    if (!p1)
        return;
    fs.scribble(); // the plugin must have deep-copied everything
    CHECK(std::strcmp(coreOf(p1)->getPluginName(), "SparseConv2d") == 0, "plugin name");
    CHECK(std::strcmp(coreOf(p1)->getPluginVersion(), "1") == 0, "plugin version");
    nv::IPluginV3OneBuild* b1 = buildOf(p1);
    CHECK(b1->getNbOutputs() == 1, "nb outputs");

    // output types
    nv::DataType outT = nv::DataType::kINT32;
    CHECK(b1->getOutputDataTypes(&outT, 1, &dt, 1) == 0 && outT == dt, "%s: getOutputDataTypes", c.name);
    nv::DataType const i8 = nv::DataType::kINT8;
    CHECK(b1->getOutputDataTypes(&outT, 1, &i8, 1) != 0, "%s: int8 input must be refused", c.name);

    // output shapes: symbolic N, H, W
    {
        ExprBuilder eb;
        nv::DimsExprs in = symbolicInput(eb, c.C);
        nv::DimsExprs out{};
        CHECK(b1->getOutputShapes(&in, 1, nullptr, 0, &out, 1, eb) == 0, "%s: getOutputShapes(symbolic)", c.name);
        CHECK(out.nbDims == 4 && out.d[1]->isConstant() && out.d[1]->getConstantValue() == c.K, "%s: K", c.name);
        for (int h = 1; h <= 40; h += 3)
            for (int n = 1; n <= 3; ++n)
            {
                int64_t env[4] = {n, c.C, h, h + 2};
                int64_t const P = outDim(h, c.pt, c.pb, c.dh, c.R, c.sh), Q = outDim(h + 2, c.pl, c.pr, c.dw, c.S, c.sw);
                if (P < 1 || Q < 1)
                    continue;
                CHECK(static_cast<Expr const*>(out.d[0])->eval(env) == n, "%s: N expr", c.name);
                CHECK(static_cast<Expr const*>(out.d[2])->eval(env) == P, "%s: P expr at H=%d", c.name, h);
                CHECK(static_cast<Expr const*>(out.d[3])->eval(env) == Q, "%s: Q expr at W=%d", c.name, h + 2);
            }
        // constant dims fold to constants; a wrong channel count is refused
        nv::DimsExprs cin{};
        cin.nbDims = 4;
        cin.d[0] = eb.constant(2);
        cin.d[1] = eb.constant(c.C);
        cin.d[2] = eb.constant(c.shapes[0][1]);
        cin.d[3] = eb.constant(c.shapes[0][2]);
        nv::DimsExprs cout{};
        CHECK(b1->getOutputShapes(&cin, 1, nullptr, 0, &cout, 1, eb) == 0 && cout.d[2]->isConstant()
                && cout.d[2]->getConstantValue() == outDim(c.shapes[0][1], c.pt, c.pb, c.dh, c.R, c.sh),
            "%s: constant shapes", c.name);
        cin.d[1] = eb.constant(c.C + 1);
        CHECK(b1->getOutputShapes(&cin, 1, nullptr, 0, &cout, 1, eb) != 0, "%s: wrong C must be refused", c.name);
    }

    // formats
    {
        nv::DynamicPluginTensorDesc io[2]{};
        auto set = [&](int i, nv::DataType t, nv::TensorFormat f) {
            io[i].desc.type = t;
            io[i].desc.format = f;
        };
        set(0, dt, nv::TensorFormat::kLINEAR);
        set(1, dt, nv::TensorFormat::kLINEAR);
        CHECK(b1->supportsFormatCombination(0, io, 1, 1) && b1->supportsFormatCombination(1, io, 1, 1),
            "%s: %s linear supported", c.name, dtn);
        set(1, half ? nv::DataType::kFLOAT : nv::DataType::kHALF, nv::TensorFormat::kLINEAR);
        CHECK(!b1->supportsFormatCombination(1, io, 1, 1), "%s: mixed types refused", c.name);
        set(0, nv::DataType::kINT8, nv::TensorFormat::kLINEAR);
        CHECK(!b1->supportsFormatCombination(0, io, 1, 1), "%s: int8 refused", c.name);
        set(0, dt, nv::TensorFormat::kCHW32);
        CHECK(!b1->supportsFormatCombination(0, io, 1, 1), "%s: CHW32 refused", c.name);
        // channel-last: kHWC for fp32, kHWC8 for fp16 when C and K are multiples of 8; never mixed with linear
        bool const hwc8ok = c.C % 8 == 0 && c.K % 8 == 0;
        set(0, dt, nv::TensorFormat::kHWC);
        set(1, dt, nv::TensorFormat::kHWC);
        CHECK(b1->supportsFormatCombination(0, io, 1, 1) == !half, "%s %s: kHWC input", c.name, dtn);
        CHECK(b1->supportsFormatCombination(1, io, 1, 1) == !half, "%s %s: kHWC output", c.name, dtn);
        set(0, dt, nv::TensorFormat::kHWC8);
        set(1, dt, nv::TensorFormat::kHWC8);
        CHECK(b1->supportsFormatCombination(0, io, 1, 1) == (half && hwc8ok), "%s %s: kHWC8 input", c.name, dtn);
        CHECK(b1->supportsFormatCombination(1, io, 1, 1) == (half && hwc8ok), "%s %s: kHWC8 output", c.name, dtn);
        set(0, dt, nv::TensorFormat::kLINEAR);
        set(1, dt, half ? nv::TensorFormat::kHWC8 : nv::TensorFormat::kHWC);
        CHECK(!b1->supportsFormatCombination(1, io, 1, 1), "%s: linear input with a channel-last output refused",
            c.name);
    }

    // clone, destroy the original (the clone must stay valid)
    nv::IPluginV3* p2 = p1->clone();
    CHECK(p2 != nullptr, "clone");
    delete p1;
    if (!p2)
        return;
    nv::IPluginV3OneBuild* b2 = buildOf(p2);

    // configure with a profile spanning the case's shapes
    ShapeBounds const sb = shapeBounds(c);
    nv::DynamicPluginTensorDesc in{}, out{};
    in.desc.type = dt;
    in.desc.format = nv::TensorFormat::kLINEAR;
    in.desc.dims = dims4(-1, c.C, -1, -1);
    in.min = dims4(sb.minN, c.C, sb.minH, sb.minW);
    in.max = dims4(sb.maxN, c.C, sb.maxH, sb.maxW);
    in.opt = dims4(c.shapes[0][0], c.C, c.shapes[0][1], c.shapes[0][2]);
    out.desc.type = dt;
    out.desc.format = nv::TensorFormat::kLINEAR;
    out.desc.dims = dims4(-1, c.K, -1, -1);
    CHECK(b2->configurePlugin(&in, 1, &out, 1) == 0, "%s: configurePlugin", c.name);
    size_t const ws = b2->getWorkspaceSize(&in, 1, &out, 1);

    // serialize through fields, rebuild for the runtime, attach
    FieldSet serial;
    nv::PluginFieldCollection const* sf = runtimeOf(p2)->getFieldsToSerialize();
    CHECK(sf != nullptr && sf->nbFields > 0, "%s: getFieldsToSerialize", c.name);
    if (!sf)
    {
        delete p2;
        return;
    }
    copyFields(sf, serial);
    int32_t const nbSerial = sf->nbFields;
    // build-time tuning: the tactic is serialized for the profile's opt shape and this dtype when a
    // device (or the CPU stub) is present; absent without one
    int32_t tactic[5] = {-1, 0, 0, 0, -1};
    bool const hasTactic = findTactic(sf, tactic);
    int32_t const tdt = half ? 1 : 0;
    // allow_tf32 is serialized exactly when it is 1 (a default layer's fields are those of earlier builds)
    int32_t allow = -1;
    bool const hasAllow = findIntField(sf, "allow_tf32", allow);
    CHECK(hasAllow == tf32 && (!tf32 || allow == 1), "%s %s: serialized allow_tf32 %s (%d), expected %s", c.name,
        dtn, hasAllow ? "present" : "absent", allow, tf32 ? "1" : "absent");
    // the CPU stand-in's tuning picks its TF32 variant exactly for fp32 plans whose math allows TF32
    int32_t const stubId = (tf32 && !half) ? kStubTf32Id : kStubTunedId;
    if (noDeviceMode())
        CHECK(!hasTactic, "%s: no device (or TRT_SPARSE_NO_TUNE=1), yet a tactic was serialized", c.name);
    else
        CHECK(hasTactic && tactic[0] >= 0 && tactic[1] == c.shapes[0][0] && tactic[2] == c.shapes[0][1]
                && tactic[3] == c.shapes[0][2] && tactic[4] == tdt
                && (lib.lastSetChoice == nullptr || tactic[0] == stubId),
            "%s: serialized tactic {%d, %d, %d, %d, %d} (expected the opt shape %dx%dx%d, dtype %d)", c.name,
            tactic[0], tactic[1], tactic[2], tactic[3], tactic[4], c.shapes[0][0], c.shapes[0][1], c.shapes[0][2],
            tdt);
    if (lib.lastSetChoice)
    {
        int32_t reset[4];
        lib.lastSetChoice(reset, 1);
    }
    nv::IPluginV3* p3 = lib.creator->createPlugin(c.name, serial.collection(), nv::TensorRTPhase::kRUNTIME);
    CHECK(p3 != nullptr, "%s: createPlugin(kRUNTIME) from serialized fields", c.name);
    delete p2;
    if (!p3)
        return;
    serial.scribble();
    nv::IPluginV3* p4 = runtimeOf(p3)->attachToContext(nullptr);
    CHECK(p4 != nullptr, "%s: attachToContext", c.name);
    delete p3;
    if (!p4)
        return;
    nv::IPluginV3OneRuntime* r4 = runtimeOf(p4);
    {
        // the deserialized plugin keeps the tactic (re-serializes it unchanged)
        int32_t again[5] = {-1, 0, 0, 0, -1};
        nv::PluginFieldCollection const* sf2 = r4->getFieldsToSerialize();
        bool const has2 = findTactic(sf2, again);
        CHECK(has2 == hasTactic && (!hasTactic || std::memcmp(again, tactic, sizeof(tactic)) == 0),
            "%s: tactic not round-tripped through serialization", c.name);
        int32_t allow2 = -1;
        bool const hasAllow2 = findIntField(sf2, "allow_tf32", allow2);
        CHECK(hasAllow2 == hasAllow && allow2 == allow, "%s: allow_tf32 not round-tripped through serialization",
            c.name);
        CHECK(sf2 != nullptr && sf2->nbFields == nbSerial, "%s: the runtime plugin serializes %d fields, the "
            "build plugin %d", c.name, sf2 ? sf2->nbFields : -1, nbSerial);
    }

    void* dws = devAlloc(ws);
#ifdef DRIVER_GPU
    cudaStream_t stream = nullptr;
    CUDA_OK(cudaStreamCreate(&stream));
#else
    void* stream = nullptr;
#endif
    std::normal_distribution<float> gauss(0.0F, 1.0F);
    // every shape in linear NCHW, then in the dtype's channel-last format where the plugin offers it (the
    // plan is recreated for the other layout; the stored tactic applies only to the layout it was tuned for)
    bool const chLastOk = !half || (c.C % 8 == 0 && c.K % 8 == 0);
    for (int pass = 0; pass < (chLastOk ? 2 : 1); ++pass)
    for (auto const& s : c.shapes)
    {
        bool const nhwc = pass == 1;
        nv::TensorFormat const fmt = !nhwc ? nv::TensorFormat::kLINEAR
                                           : (half ? nv::TensorFormat::kHWC8 : nv::TensorFormat::kHWC);
        int const N = s[0], H = s[1], W = s[2];
        int64_t const P = outDim(H, c.pt, c.pb, c.dh, c.R, c.sh), Q = outDim(W, c.pl, c.pr, c.dw, c.S, c.sw);
        size_t const nin = static_cast<size_t>(N) * c.C * H * W, nout = static_cast<size_t>(N) * c.K * P * Q;
        size_t const esz = half ? 2 : 4;
        std::vector<double> x(nin);
        std::vector<unsigned char> hin(nin * esz), hout(nout * esz);
        // element i of the NCHW tensor sits at nhwcOf(i, C, H * W) in an NHWC buffer
        auto at = [&](size_t i, int64_t ch, int64_t hw) -> size_t {
            if (!nhwc)
                return i;
            int64_t const n = static_cast<int64_t>(i) / (ch * hw), rem = static_cast<int64_t>(i) % (ch * hw);
            return static_cast<size_t>((n * hw + rem % hw) * ch + rem / hw);
        };
        for (size_t i = 0; i < nin; ++i)
        {
            float v = gauss(rng);
            size_t const j = at(i, c.C, static_cast<int64_t>(H) * W);
            if (half)
            {
                uint16_t const hb = floatToHalfT(v);
                std::memcpy(&hin[j * 2], &hb, 2);
                v = halfToFloatT(hb);
            }
            else
                std::memcpy(&hin[j * 4], &v, 4);
            x[i] = v;
        }
        void* din = devAlloc(nin * esz);
        void* dout = devAlloc(nout * esz);
        toDev(din, hin.data(), hin.size());
        std::vector<unsigned char> poison(nout * esz);
        for (size_t i = 0; i < nout; ++i)
        {
            if (half)
            {
                uint16_t const nan16 = 0x7E00U;
                std::memcpy(&poison[i * 2], &nan16, 2);
            }
            else
            {
                float const nan32 = NAN;
                std::memcpy(&poison[i * 4], &nan32, 4);
            }
        }
        toDev(dout, poison.data(), poison.size());
        nv::PluginTensorDesc id{}, od{};
        id.dims = dims4(N, c.C, H, W);
        id.type = dt;
        id.format = fmt;
        od.dims = dims4(N, c.K, P, Q);
        od.type = dt;
        od.format = fmt;
        CHECK(r4->onShapeChange(&id, 1, &od, 1) == 0, "%s: onShapeChange", c.name);
        void const* ins[1] = {din};
        void* outs[1] = {dout};
        int32_t const rc = r4->enqueue(&id, &od, ins, outs, dws, reinterpret_cast<cudaStream_t>(stream));
        CHECK(rc == 0, "%s: enqueue returned %d", c.name, rc);
#ifdef DRIVER_GPU
        CUDA_OK(cudaStreamSynchronize(stream));
#endif
        toHost(hout.data(), dout, hout.size());
        std::vector<double> const ref = reference(c, w, x, N, H, W);
        std::vector<double> y(nout);
        size_t nonfinite = 0;
        for (size_t i = 0; i < nout; ++i)
        {
            size_t const j = at(i, c.K, P * Q);
            if (half)
            {
                uint16_t hb;
                std::memcpy(&hb, &hout[j * 2], 2);
                y[i] = halfToFloatT(hb);
            }
            else
            {
                float f;
                std::memcpy(&f, &hout[j * 4], 4);
                y[i] = f;
            }
            if (!std::isfinite(y[i]))
                ++nonfinite;
        }
        double const rel = relErr(y, ref);
        double const tol = half ? kTolFp16 : (tf32 ? kTolTf32 : kTolFp32);
        bool const ok = rc == 0 && nonfinite == 0 && rel < tol;
        std::printf("CASE %-22s %s %s %s strings%s math=%s N=%d C=%d H=%d W=%d -> K=%d P=%lld Q=%lld nnz=%d ws=%zu "
                    "rel_err=%.3g %s\n",
            c.name, dtn, nhwc ? (half ? "HWC8" : "HWC ") : "NCHW", c.mode == 1 ? "packed32" : "exact   ",
            nulStrings ? "+NUL" : "-NUL", tf32 ? "tf32" : "fp32",
            N, c.C, H, W, c.K, static_cast<long long>(P), static_cast<long long>(Q), w.offsets.back(), ws, rel,
            ok ? "OK" : "FAIL");
        CHECK(nonfinite == 0, "%s: %zu non-finite outputs (unwritten?)", c.name, nonfinite);
        CHECK(rel < tol, "%s %s: rel err %.3g >= %.1g", c.name, dtn, rel, tol);
        if (lib.lastSetChoice && hasTactic && tf32 && !half && !nhwc && N == tactic[1] && H == tactic[2]
            && W == tactic[3] && w.offsets.back() > 0)
            // the stand-in's TF32 variant rounds the products' factors: proof that it ran for the tuned shape
            CHECK(rel > 1e-6, "%s: rel err %.3g at the tuned shape: the TF32 variant did not run", c.name, rel);
        devFree(din);
        devFree(dout);
    }
    devFree(dws);
#ifdef DRIVER_GPU
    CUDA_OK(cudaStreamDestroy(stream));
#endif
    if (lib.lastSetChoice && hasTactic)
    {
        // the plan recreated at runtime got the stored choice through tsc_plan_set_choice
        int32_t set[4];
        lib.lastSetChoice(set, 0);
        CHECK(set[0] == tactic[0] && set[1] == tactic[1] && set[2] == tactic[2] && set[3] == tactic[3],
            "%s: runtime plan choice {%d, %d, %d, %d}, stored tactic {%d, %d, %d, %d}", c.name, set[0], set[1],
            set[2], set[3], tactic[0], tactic[1], tactic[2], tactic[3]);
    }
    delete p4;
    if (plansBefore >= 0)
        CHECK(livePlans(lib) == plansBefore, "%s: %d plans alive after destroy (expected %d)", c.name,
            livePlans(lib), plansBefore);
}

// ------------------------------------------------------------------ refusals
static void runRefusals(Lib const& lib)
{
    Case base{"refusal", 4, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0.F, 6.F, true, 0, 0.5, 0, {{1, 5, 5}}};
    std::mt19937 rng(7);
    Weights const w = makeWeights(base, rng);
    Case pk = base;
    pk.mode = 1;
    Weights const wp = makeWeights(pk, rng);
    struct Mut
    {
        char const* what;
        bool packed;
        std::function<void(FieldSet&)> f;
    };
    int32_t const bad3[3] = {6, 4, 3};
    int32_t const two1[2] = {1, 1};
    float const one = 1.0F;
    float const nanv = NAN;
    std::vector<Mut> muts = {
        {"weight_shape missing", false, [](FieldSet& f) { f.remove("weight_shape"); }},
        {"row_offsets missing", false, [](FieldSet& f) { f.remove("row_offsets"); }},
        {"indices missing", false, [](FieldSet& f) { f.remove("indices"); }},
        {"weight_shape length 3", false,
            [&](FieldSet& f) {
                f.remove("weight_shape");
                f.add("weight_shape", nv::PluginFieldType::kINT32, bad3, 3);
            }},
        {"weight_shape as float", false,
            [](FieldSet& f) { f.find("weight_shape")->type = nv::PluginFieldType::kFLOAT32; }},
        {"strides 0", false, [](FieldSet& f) {
             f.remove("strides");
             f.ints("strides", {0, 1});
         }},
        {"pads negative", false, [](FieldSet& f) {
             f.remove("pads");
             f.ints("pads", {0, -1, 0, 0});
         }},
        {"activation 3", false, [](FieldSet& f) {
             f.remove("activation");
             f.ints("activation", {3});
         }},
        {"weight_format 2", false, [](FieldSet& f) {
             f.remove("weight_format");
             f.ints("weight_format", {2});
         }},
        {"format_version 2", false, [](FieldSet& f) {
             f.remove("format_version");
             f.ints("format_version", {2});
         }},
        {"plugin_version 2", false, [](FieldSet& f) {
             f.remove("plugin_version");
             f.str("plugin_version", "2", true);
         }},
        {"plugin_namespace foo", false, [](FieldSet& f) {
             f.remove("plugin_namespace");
             f.str("plugin_namespace", "foo", false);
         }},
        {"row_offsets length K", false,
            [&](FieldSet& f) {
                f.remove("row_offsets");
                f.ints("row_offsets", std::vector<int32_t>(w.offsets.begin(), w.offsets.end() - 1));
            }},
        {"row_offsets decreasing", false,
            [&](FieldSet& f) {
                std::vector<int32_t> o = w.offsets;
                std::swap(o[1], o[2]);
                if (o[1] == o[2])
                    o[1] = o[2] + 1;
                f.remove("row_offsets");
                f.ints("row_offsets", o);
            }},
        {"indices out of range", false,
            [&](FieldSet& f) {
                std::vector<int32_t> i = w.indices;
                i.back() = 4 * 9;
                f.remove("indices");
                f.ints("indices", i);
            }},
        {"indices not increasing", false,
            [&](FieldSet& f) {
                std::vector<int32_t> i = w.indices;
                std::swap(i[0], i[1]);
                f.remove("indices");
                f.ints("indices", i);
            }},
        {"values NaN", false,
            [&](FieldSet& f) {
                std::vector<float> v = w.values;
                v[0] = nanv;
                f.remove("values");
                f.floats("values", v);
            }},
        {"values short", false,
            [&](FieldSet& f) {
                f.remove("values");
                f.floats("values", std::vector<float>(w.values.begin(), w.values.end() - 1));
            }},
        {"packed in exact mode", false, [&](FieldSet& f) { f.ints("packed", wp.packed); }},
        {"bias wrong length", false, [](FieldSet& f) {
             f.remove("bias");
             f.floats("bias", {1.F, 2.F});
         }},
        {"duplicate field", false, [](FieldSet& f) { f.ints("strides", {1, 1}); }},
        {"negative length", false, [](FieldSet& f) { f.find("strides")->length = -2; }},
        {"null data", false, [](FieldSet& f) { f.find("row_offsets")->data = nullptr; }},
        {"allow_tf32 2", false, [](FieldSet& f) { f.ints("allow_tf32", {2}); }},
        {"allow_tf32 -1", false, [](FieldSet& f) { f.ints("allow_tf32", {-1}); }},
        {"allow_tf32 length 2", false,
            [&](FieldSet& f) { f.add("allow_tf32", nv::PluginFieldType::kINT32, two1, 2); }},
        {"allow_tf32 as float", false,
            [&](FieldSet& f) { f.add("allow_tf32", nv::PluginFieldType::kFLOAT32, &one, 1); }},
        {"allow_tf32 given twice", false, [](FieldSet& f) {
             f.ints("allow_tf32", {1});
             f.ints("allow_tf32", {1});
         }},
        {"packed missing", true, [](FieldSet& f) { f.remove("packed"); }},
        {"packed index out of range", true,
            [&](FieldSet& f) {
                std::vector<int32_t> p = wp.packed;
                p.back() = static_cast<int32_t>((36U << 16) | (p.back() & 0xFFFF));
                f.remove("packed");
                f.ints("packed", p);
            }},
        {"packed fp16 inf", true,
            [&](FieldSet& f) {
                std::vector<int32_t> p = wp.packed;
                p[0] = static_cast<int32_t>((static_cast<uint32_t>(p[0]) & 0xFFFF0000U) | 0x7C00U);
                f.remove("packed");
                f.ints("packed", p);
            }},
    };
    // the unmodified sets must be accepted (so each refusal is due to its mutation)
    for (int packed = 0; packed < 2; ++packed)
    {
        FieldSet fs;
        fillFields(packed ? pk : base, packed ? wp : w, fs, packed == 0);
        nv::IPluginV3* p = lib.creator->createPlugin("ok", fs.collection(), nv::TensorRTPhase::kBUILD);
        CHECK(p != nullptr, "unmodified %s field set refused", packed ? "packed32" : "exact");
        delete p;
    }
    // unknown fields are ignored (TensorRT only passes declared ones anyway)
    {
        FieldSet fs;
        fillFields(base, w, fs, true);
        fs.ints("some_future_field", {1});
        nv::IPluginV3* p = lib.creator->createPlugin("unknown", fs.collection(), nv::TensorRTPhase::kBUILD);
        CHECK(p != nullptr, "unknown field must be ignored");
        delete p;
    }
    int refused = 0;
    for (auto const& m : muts)
    {
        FieldSet fs;
        fillFields(m.packed ? pk : base, m.packed ? wp : w, fs, true);
        m.f(fs);
        std::fprintf(stderr, "EXPECT-REFUSAL %s\n", m.what);
        std::fflush(stderr);
        nv::IPluginV3* p = lib.creator->createPlugin("bad", fs.collection(), nv::TensorRTPhase::kBUILD);
        CHECK(p == nullptr, "mutation '%s' was accepted", m.what);
        refused += p == nullptr;
        delete p;
    }
    std::printf("REFUSALS %d/%zu bad field sets refused\n", refused, muts.size());
    // the getFieldNames declaration: every attribute of docs/FORMAT.md
    nv::PluginFieldCollection const* names = lib.creator->getFieldNames();
    std::vector<std::string> declared;
    for (int32_t i = 0; names && i < names->nbFields; ++i)
        declared.emplace_back(names->fields[i].name);
    char const* expected[] = {"plugin_version", "plugin_namespace", "format_version", "weight_shape", "strides", "pads",
        "dilations", "activation", "clip_min", "clip_max", "weight_format", "row_offsets", "indices", "values",
        "packed", "bias", "allow_tf32"};
    for (char const* e : expected)
        CHECK(std::find(declared.begin(), declared.end(), e) != declared.end(), "getFieldNames lacks %s", e);
}

// ------------------------------------------------------------------ main
int main(int argc, char** argv)
{
    if (argc < 2)
    {
        std::fprintf(stderr, "usage: %s PLUGIN.so [--seed N]\n", argv[0]);
        return 2;
    }
    unsigned seed = 12345;
    for (int i = 2; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--seed")
            seed = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    Lib lib;
    lib.handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle)
    {
        std::printf("dlopen failed: %s\n", dlerror());
        return 2;
    }
    using GetCreators = nv::IPluginCreatorInterface* const* (*) (int32_t&);
    using SetLoggerFinder = void (*)(nv::ILoggerFinder*);
    auto getCreators = reinterpret_cast<GetCreators>(dlsym(lib.handle, "getCreators"));
    auto setLoggerFinder = reinterpret_cast<SetLoggerFinder>(dlsym(lib.handle, "setLoggerFinder"));
    CHECK(getCreators != nullptr && setLoggerFinder != nullptr, "library must export getCreators and setLoggerFinder");
    if (!getCreators || !setLoggerFinder)
        return 1;
    setLoggerFinder(nullptr);
    int32_t n = 0;
    nv::IPluginCreatorInterface* const* creators = getCreators(n);
    CHECK(n == 1 && creators != nullptr, "one creator expected, got %d", n);
    if (n < 1)
        return 1;
    nv::InterfaceInfo const info = creators[0]->getInterfaceInfo();
    CHECK(std::string(info.kind) == "PLUGIN CREATOR_V3ONE", "creator kind %s", info.kind);
    lib.creator = static_cast<nv::IPluginCreatorV3One*>(creators[0]);
    CHECK(std::strcmp(lib.creator->getPluginName(), "SparseConv2d") == 0 && std::strcmp(lib.creator->getPluginVersion(), "1") == 0
            && std::strcmp(lib.creator->getPluginNamespace(), "") == 0,
        "creator name/version/namespace");
    lib.livePlans = reinterpret_cast<int32_t (*)()>(dlsym(lib.handle, "tsc_stub_live_plans"));
    lib.lastSetChoice = reinterpret_cast<void (*)(int32_t*, int32_t)>(dlsym(lib.handle, "tsc_stub_last_set_choice"));

#ifdef DRIVER_GPU
    size_t free0 = 0, total = 0;
    CUDA_OK(cudaFree(nullptr));
    CUDA_OK(cudaMemGetInfo(&free0, &total));
#endif
    runRefusals(lib);
    std::vector<Case> const cases = defaultCases();
    std::mt19937 rng(seed);
    int idx = 0;
    for (bool tf32 : {false, true})
        for (auto const& c : cases)
            for (nv::DataType dt : {nv::DataType::kFLOAT, nv::DataType::kHALF})
                runCase(lib, c, dt, (idx++ % 2) == 0, tf32, rng);
#ifdef DRIVER_GPU
    CUDA_OK(cudaDeviceSynchronize());
    size_t free1 = 0;
    CUDA_OK(cudaMemGetInfo(&free1, &total));
    std::printf("GPU free memory before %zu after %zu (delta %lld bytes)\n", free0, free1,
        static_cast<long long>(free0) - static_cast<long long>(free1));
#endif
    if (lib.livePlans)
    {
        CHECK(lib.livePlans() == 0, "%d kernel plans leaked", lib.livePlans());
        std::printf("live plans at exit: %d\n", lib.livePlans());
    }
    std::printf("SUMMARY checks=%d failures=%d\n", gChecks, gFailures);
    dlclose(lib.handle);
    return gFailures == 0 ? 0 : 1;
}
