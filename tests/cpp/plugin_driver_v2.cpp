/*
 * trt-sparse plugin driver for the TensorRT 8.x path (IPluginV2DynamicExt), CPU only.
 *
 * Built against the 8.2 or 8.5 headers together with the plugin sources and the CPU
 * stand-in of the kernel ABI (tests/cpp/tsc_cpu_stub.cpp). This program provides
 * getPluginRegistry() (normally in libnvinfer) as a small registry, so the plugin's
 * REGISTER_TENSORRT_PLUGIN runs at start-up exactly as when TensorRT loads the library.
 * Then, like TensorRT 8: getPluginCreator -> createPlugin(fields) -> clone ->
 * getOutputDimensions (expression builder) / supportsFormatCombination ->
 * configurePlugin -> getWorkspaceSize -> initialize -> serialize -> deserializePlugin
 * (and corrupt blobs: truncated, bit-flipped, foreign, version 3 with bad flags) -> initialize
 * -> enqueue (host buffers, fp32 + fp16, several shapes) vs float64 -> terminate -> destroy;
 * every case without and with allow_tf32 = 1 (blob version 2 / 3).
 */
#include "SparseConv2dCore.h" // blobChecksum (to forge re-checksummed corrupt blobs)
#include "driver_common.h"

#include <cstdio>

extern "C" int32_t tsc_stub_live_plans(void);
extern "C" void tsc_stub_last_set_choice(int32_t* out4, int32_t reset);

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" // IPluginV2 / IPluginCreator in 8.5 headers
#endif

// ------------------------------------------------------------------ registry (libnvinfer's role)
class Registry : public nv::IPluginRegistry
{
public:
    bool registerCreator(nv::IPluginCreator& creator, char const* const ns) noexcept override
    {
        creator.setPluginNamespace(ns);
        mCreators.push_back(&creator);
        return true;
    }
    nv::IPluginCreator* const* getPluginCreatorList(int32_t* const n) const noexcept override
    {
        *n = static_cast<int32_t>(mCreators.size());
        return mCreators.data();
    }
    nv::IPluginCreator* getPluginCreator(char const* const name, char const* const version, char const* const ns) noexcept override
    {
        for (auto* c : mCreators)
            if (!std::strcmp(c->getPluginName(), name) && !std::strcmp(c->getPluginVersion(), version)
                && !std::strcmp(c->getPluginNamespace(), ns))
                return c;
        return nullptr;
    }
    void setErrorRecorder(nv::IErrorRecorder* const) noexcept override {}
    nv::IErrorRecorder* getErrorRecorder() const noexcept override
    {
        return nullptr;
    }
    bool deregisterCreator(nv::IPluginCreator const&) noexcept override
    {
        return false;
    }
    ~Registry() noexcept override = default;

private:
    std::vector<nv::IPluginCreator*> mCreators;
};

extern "C" nv::IPluginRegistry* getPluginRegistry() noexcept
{
    static Registry registry;
    return &registry;
}

// ------------------------------------------------------------------ helpers
static nv::IPluginV2DynamicExt* dyn(nv::IPluginV2* p)
{
    return dynamic_cast<nv::IPluginV2DynamicExt*>(p);
}

// The blob with a 32-bit word at byte offset `at` replaced and the checksum recomputed.
static std::vector<unsigned char> forged(std::vector<unsigned char> b, size_t at, uint32_t value)
{
    std::memcpy(&b[at], &value, sizeof(value));
    uint64_t const h = trt_sparse::blobChecksum(b.data(), b.size() - 8);
    std::memcpy(&b[b.size() - 8], &h, sizeof(h));
    return b;
}

// tf32: the node carries allow_tf32 = 1 (blob version 3; fp32 plans may run TF32 variants, fp16 ignores it).
static void runCase(
    nv::IPluginCreator* creator, Case const& c, nv::DataType dt, bool nul, bool tf32, std::mt19937& rng)
{
    bool const half = dt == nv::DataType::kHALF;
    int const plansBefore = tsc_stub_live_plans();
    Weights const w = makeWeights(c, rng);
    FieldSet fs;
    fillFields(c, w, fs, nul);
    if (tf32 || nul)
        fs.ints("allow_tf32", {tf32 ? 1 : 0}); // an explicit 0 must behave like no field
    nv::IPluginV2DynamicExt* p1 = dyn(creator->createPlugin(c.name, fs.collection()));
    CHECK(p1 != nullptr, "%s: createPlugin", c.name);
    if (!p1)
        return;
    fs.scribble();
    CHECK(!std::strcmp(p1->getPluginType(), "SparseConv2d") && !std::strcmp(p1->getPluginVersion(), "1"), "type");
    CHECK(p1->getNbOutputs() == 1, "outputs");
    CHECK(p1->getOutputDataType(0, &dt, 1) == dt, "output type");
    {
        ExprBuilder eb;
        nv::DimsExprs in = symbolicInput(eb, c.C);
        nv::DimsExprs out = p1->getOutputDimensions(0, &in, 1, eb);
        CHECK(out.nbDims == 4 && out.d[1]->isConstant() && out.d[1]->getConstantValue() == c.K, "%s: K", c.name);
        for (int h = 1; out.nbDims == 4 && h <= 40; h += 3)
        {
            int64_t env[4] = {2, c.C, h, h + 1};
            int64_t const P = outDim(h, c.pt, c.pb, c.dh, c.R, c.sh), Q = outDim(h + 1, c.pl, c.pr, c.dw, c.S, c.sw);
            if (P < 1 || Q < 1)
                continue;
            CHECK(static_cast<Expr const*>(out.d[2])->eval(env) == P && static_cast<Expr const*>(out.d[3])->eval(env) == Q,
                "%s: output expr at %d", c.name, h);
        }
        in.d[1] = eb.constant(c.C + 2);
        CHECK(p1->getOutputDimensions(0, &in, 1, eb).nbDims != 4, "%s: wrong C must be refused", c.name);
    }
    {
        nv::PluginTensorDesc io[2]{};
        io[0].type = io[1].type = dt;
        io[0].format = io[1].format = nv::TensorFormat::kLINEAR;
        CHECK(p1->supportsFormatCombination(0, io, 1, 1) && p1->supportsFormatCombination(1, io, 1, 1), "linear");
        io[1].type = half ? nv::DataType::kFLOAT : nv::DataType::kHALF;
        CHECK(!p1->supportsFormatCombination(1, io, 1, 1), "mixed types");
        io[0].type = nv::DataType::kINT8;
        CHECK(!p1->supportsFormatCombination(0, io, 1, 1), "int8");
        // channel-last (TensorRT 8.x formats): kHWC for fp32, kHWC8 for fp16 when C and K are multiples of 8
        io[0].type = io[1].type = dt;
        io[0].format = io[1].format = nv::TensorFormat::kHWC;
        CHECK(p1->supportsFormatCombination(0, io, 1, 1) == !half && p1->supportsFormatCombination(1, io, 1, 1) == !half,
            "%s: kHWC offered exactly for fp32", c.name);
        io[0].format = io[1].format = nv::TensorFormat::kHWC8;
        bool const hwc8 = half && c.C % 8 == 0 && c.K % 8 == 0;
        CHECK(p1->supportsFormatCombination(0, io, 1, 1) == hwc8 && p1->supportsFormatCombination(1, io, 1, 1) == hwc8,
            "%s: kHWC8 offered exactly for fp16 with C, K multiples of 8", c.name);
        io[0].format = nv::TensorFormat::kLINEAR;
        CHECK(!p1->supportsFormatCombination(1, io, 1, 1), "%s: linear input, channel-last output refused", c.name);
    }
    nv::IPluginV2DynamicExt* p2 = p1->clone();
    p1->destroy();
    CHECK(p2 != nullptr, "clone");
    if (!p2)
        return;
    ShapeBounds const sb = shapeBounds(c);
    int const maxN = sb.maxN, maxH = sb.maxH, maxW = sb.maxW;
    nv::DynamicPluginTensorDesc din{}, dout{};
    din.desc.type = dout.desc.type = dt;
    din.desc.format = dout.desc.format = nv::TensorFormat::kLINEAR;
    din.desc.dims = dims4(-1, c.C, -1, -1);
    dout.desc.dims = dims4(-1, c.K, -1, -1);
    din.min = dims4(1, c.C, 1, 1);
    din.max = dims4(maxN, c.C, maxH, maxW);
    p2->configurePlugin(&din, 1, &dout, 1);
    nv::PluginTensorDesc wsIn{}, wsOut{};
    wsIn.dims = din.max;
    wsIn.type = wsOut.type = dt;
    size_t const ws = p2->getWorkspaceSize(&wsIn, 1, &wsOut, 1);
    CHECK(p2->initialize() == 0, "initialize");
    std::vector<unsigned char> blob(p2->getSerializationSize());
    p2->serialize(blob.data());
    // build-time tuning (the stub "picks" variant 2, or its TF32 variant 5 for fp32 with allow_tf32): the tactic
    // for the profile's max shape and this dtype right after the dtype tag (blob version 2), or after the
    // flags word (version 3 with allow_tf32: flags 0x1 allow_tf32 | 0x2 tactic)
    int32_t const stubId = (tf32 && !half) ? kStubTf32Id : kStubTunedId;
    {
        int32_t hdr[9] = {0};
        if (blob.size() >= sizeof(hdr))
            std::memcpy(hdr, blob.data(), sizeof(hdr));
        int32_t const* t = tf32 ? hdr + 4 : hdr + 3;
        CHECK(hdr[1] == (tf32 ? 3 : 2) && (!tf32 || hdr[3] == 3) && t[0] == stubId && t[1] == maxN && t[2] == maxH
                && t[3] == maxW && t[4] == (half ? 1 : 0),
            "%s: blob version %d [flags %d] tactic {%d, %d, %d, %d, %d}", c.name, hdr[1], tf32 ? hdr[3] : -1, t[0],
            t[1], t[2], t[3], t[4]);
    }
    std::vector<unsigned char> const blobCopy = blob;
    {
        int32_t reset[4];
        tsc_stub_last_set_choice(reset, 1);
    }
    // corrupt blobs are refused (no crash, nullptr)
    {
        std::vector<unsigned char> t(blob.begin(), blob.begin() + static_cast<long>(blob.size() / 2));
        CHECK(creator->deserializePlugin("x", t.data(), t.size()) == nullptr, "truncated blob accepted");
        std::vector<unsigned char> f = blob;
        f[f.size() / 3] ^= 0x10;
        CHECK(creator->deserializePlugin("x", f.data(), f.size()) == nullptr, "flipped blob accepted");
        char const foreign[] = "definitely not a SparseConv2d blob";
        CHECK(creator->deserializePlugin("x", foreign, sizeof(foreign)) == nullptr, "foreign blob accepted");
        CHECK(creator->deserializePlugin("x", nullptr, 0) == nullptr, "null blob accepted");
        // re-checksummed: the version 3 flags word (clear allow_tf32, unknown bit) and the version itself
        std::vector<std::vector<unsigned char>> bad;
        if (tf32)
        {
            bad.push_back(forged(blob, 12, 2U)); // tactic flag without allow_tf32
            bad.push_back(forged(blob, 12, 3U | 8U));
            bad.push_back(forged(blob, 12, 1U)); // tactic present but not flagged: misparses
            bad.push_back(forged(blob, 4, 2U));  // version 2 reading a flags word as the tactic id
        }
        else
        {
            bad.push_back(forged(blob, 4, 3U)); // version 3 reading the tactic id as flags
        }
        bad.push_back(forged(blob, 4, 4U));
        for (auto const& b : bad)
            CHECK(creator->deserializePlugin("x", b.data(), b.size()) == nullptr, "%s: forged blob accepted", c.name);
    }
    nv::IPluginV2DynamicExt* p3 = dyn(creator->deserializePlugin(c.name, blob.data(), blob.size()));
    CHECK(p3 != nullptr, "%s: deserializePlugin", c.name);
    p2->terminate();
    p2->destroy();
    if (!p3)
        return;
    std::fill(blob.begin(), blob.end(), 0xEE); // the plugin must not keep pointers into the blob
    CHECK(p3->initialize() == 0, "initialize after deserialize");
    {
        // the runtime plan got the stored choice, and the plugin re-serializes the same blob
        int32_t set[4];
        tsc_stub_last_set_choice(set, 0);
        CHECK(set[0] == stubId && set[1] == maxN && set[2] == maxH && set[3] == maxW,
            "%s: runtime plan choice {%d, %d, %d, %d}", c.name, set[0], set[1], set[2], set[3]);
        std::vector<unsigned char> again(p3->getSerializationSize());
        p3->serialize(again.data());
        CHECK(again == blobCopy, "%s: re-serialized blob differs (tactic not round-tripped)", c.name);
    }
    std::vector<unsigned char> wsBuf(ws + 1);
    std::normal_distribution<float> gauss(0.F, 1.F);
    for (auto const& s : c.shapes)
    {
        int const N = s[0], H = s[1], W = s[2];
        int const P = static_cast<int>(outDim(H, c.pt, c.pb, c.dh, c.R, c.sh));
        int const Q = static_cast<int>(outDim(W, c.pl, c.pr, c.dw, c.S, c.sw));
        size_t const nin = static_cast<size_t>(N) * c.C * H * W, nout = static_cast<size_t>(N) * c.K * P * Q;
        std::vector<double> x(nin);
        std::vector<float> in32(nin), out32(nout, NAN);
        std::vector<uint16_t> in16(nin), out16(nout, 0x7E00U);
        for (size_t i = 0; i < nin; ++i)
        {
            float v = gauss(rng);
            in16[i] = floatToHalfT(v);
            if (half)
                v = halfToFloatT(in16[i]);
            in32[i] = v;
            x[i] = v;
        }
        nv::PluginTensorDesc id{}, od{};
        id.dims = dims4(N, c.C, H, W);
        od.dims = dims4(N, c.K, P, Q);
        id.type = od.type = dt;
        id.format = od.format = nv::TensorFormat::kLINEAR;
        void const* ins[1] = {half ? static_cast<void const*>(in16.data()) : in32.data()};
        void* outs[1] = {half ? static_cast<void*>(out16.data()) : out32.data()};
        int32_t const rc = p3->enqueue(&id, &od, ins, outs, wsBuf.data(), nullptr);
        CHECK(rc == 0, "%s: enqueue", c.name);
        std::vector<double> const ref = reference(c, w, x, N, H, W);
        std::vector<double> y(nout);
        for (size_t i = 0; i < nout; ++i)
            y[i] = half ? halfToFloatT(out16[i]) : out32[i];
        double const rel = relErr(y, ref);
        double const tol = half ? kTolFp16 : (tf32 ? kTolTf32 : kTolFp32);
        std::printf("CASE-V2 %-22s %s math=%s N=%d H=%d W=%d rel_err=%.3g %s\n", c.name, half ? "fp16" : "fp32",
            tf32 ? "tf32" : "fp32", N, H, W, rel, (rc == 0 && rel < tol) ? "OK" : "FAIL");
        CHECK(rel < tol, "%s: rel err %.3g", c.name, rel);
    }
    p3->terminate();
    p3->destroy();
    if (!half || (c.C % 8 == 0 && c.K % 8 == 0))
    {
        // a channel-last build (kHWC fp32 / kHWC8 fp16): the tactic carries the layout (io = dtype + 2), and the
        // deserialized plugin's first plan (initialize, before the runtime configures formats) is the channel-last
        // one that takes the stored choice -- not an NCHW plan recreated at the first enqueue
        FieldSet hfs; // fresh fields: the first set was scribbled over to prove the plugin copies them
        fillFields(c, w, hfs, nul);
        if (tf32 || nul)
            hfs.ints("allow_tf32", {tf32 ? 1 : 0});
        nv::IPluginV2DynamicExt* h1 = dyn(creator->createPlugin(c.name, hfs.collection()));
        CHECK(h1 != nullptr, "%s: createPlugin (channel-last build)", c.name);
        if (h1)
        {
            nv::DynamicPluginTensorDesc hin = din, hout = dout;
            hin.desc.format = hout.desc.format = half ? nv::TensorFormat::kHWC8 : nv::TensorFormat::kHWC;
            h1->configurePlugin(&hin, 1, &hout, 1);
            std::vector<unsigned char> hb(h1->getSerializationSize());
            h1->serialize(hb.data());
            h1->destroy();
            int32_t hdr[9] = {0};
            if (hb.size() >= sizeof(hdr))
                std::memcpy(hdr, hb.data(), sizeof(hdr));
            int32_t const* t = tf32 ? hdr + 4 : hdr + 3;
            CHECK(t[4] == (half ? 1 : 0) + 2, "%s: channel-last tactic io %d, expected %d", c.name, t[4],
                (half ? 1 : 0) + 2);
            int32_t reset[4];
            tsc_stub_last_set_choice(reset, 1);
            nv::IPluginV2DynamicExt* h2 = dyn(creator->deserializePlugin(c.name, hb.data(), hb.size()));
            CHECK(h2 != nullptr && h2->initialize() == 0, "%s: channel-last deserialize + initialize", c.name);
            int32_t set[4] = {-1, 0, 0, 0};
            tsc_stub_last_set_choice(set, 0);
            CHECK(set[0] == t[0] && set[1] == maxN && set[2] == maxH && set[3] == maxW,
                "%s: channel-last plan at initialize got choice {%d, %d, %d, %d}, stored {%d, %d, %d, %d}", c.name,
                set[0], set[1], set[2], set[3], t[0], t[1], t[2], t[3]);
            if (h2)
            {
                h2->terminate();
                h2->destroy();
            }
        }
    }
    CHECK(tsc_stub_live_plans() == plansBefore, "%s: plans alive %d (expected %d)", c.name, tsc_stub_live_plans(),
        plansBefore);
}

int main()
{
    int32_t n = 0;
    nv::IPluginCreator* const* list = getPluginRegistry()->getPluginCreatorList(&n);
    CHECK(n == 1 && list != nullptr, "REGISTER_TENSORRT_PLUGIN registered %d creators", n);
    nv::IPluginCreator* creator = getPluginRegistry()->getPluginCreator("SparseConv2d", "1", "");
    CHECK(creator != nullptr, "creator lookup by name/version/namespace");
    if (!creator)
        return 1;
    CHECK(creator->getFieldNames()->nbFields == 17, "declared fields");
    std::mt19937 rng(99);
    int idx = 0;
    for (bool tf32 : {false, true})
        for (auto const& c : defaultCases())
            for (nv::DataType dt : {nv::DataType::kFLOAT, nv::DataType::kHALF})
                runCase(creator, c, dt, (idx++ % 2) == 0, tf32, rng);
    CHECK(tsc_stub_live_plans() == 0, "plans leaked");
    std::printf("SUMMARY-V2 checks=%d failures=%d (TensorRT %d.%d headers)\n", gChecks, gFailures, NV_TENSORRT_MAJOR,
        NV_TENSORRT_MINOR);
    return gFailures == 0 ? 0 : 1;
}
