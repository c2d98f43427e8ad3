/*
 * Golden blobs of the V2 (TensorRT 8.x) serialization of the SparseConv2d plugin core (CPU only,
 * no CUDA, no TensorRT). Engines already on disk hold such blobs, so:
 *
 *   v1, v2  bytes written by the plugin at commit 0d3a3b1 (before allow_tf32 existed): they must
 *           still deserialize to the same spec, and a spec without allow_tf32 must still serialize
 *           to exactly these bytes (the format of layers without TF32 is unchanged);
 *   v3      allow_tf32 = 1 (flags word after the dtype tag): pinned so that the layout cannot
 *           change unnoticed; version 3 blobs with a bad flags word, version or tactic are
 *           refused with a reason (checked below);
 *   fields  the V3 (TensorRT >= 10) fields of a layer without TF32 are the 13 of earlier builds;
 *           "allow_tf32" is parsed (0 / 1 / absent) and refused naming the field otherwise.
 *
 * Prints one line per check ("GOLDEN ok|FAIL ...", "GOLDEN-REFUSED <what>: <reason>") and
 * "GOLDEN-SUMMARY checks=N failures=M"; exit code 0 when all pass.
 */
#include "SparseConv2dCore.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace trt_sparse;

namespace
{
int gChecks = 0;
int gFailures = 0;

void check(bool ok, std::string const& what)
{
    ++gChecks;
    gFailures += ok ? 0 : 1;
    std::printf("GOLDEN %s %s\n", ok ? "ok  " : "FAIL", what.c_str());
}

std::vector<unsigned char> fromHex(char const* hex)
{
    std::vector<unsigned char> out;
    for (size_t i = 0; hex[i] != '\0' && hex[i + 1] != '\0'; i += 2)
    {
        unsigned v = 0;
        std::sscanf(hex + i, "%2x", &v);
        out.push_back(static_cast<unsigned char>(v));
    }
    return out;
}

// ---- written by commit 0d3a3b1 (tools: serializeSpec of the specs below) ----
// version 1: exact, bias, relu, K=2 C=2 3x3 s1 p1, dtype tag 0 (fp32), no tactic
char const* const kV1Exact = "545343310100000000000000010000000200000002000000030000000300000001000000010000000100000001000000"
                             "010000000100000001000000010000000100000000000000000000000000c04003000000000000000200000003000000"
                             "03000000000000000d00000011000000030000000000003f0000a0bf0000004000000000020000000000003e000000bf"
                             "986e6ebf2b6955a7";
// version 2: packed32, clip(0, 6), K=3 C=4 1x1 s2, dtype tag 1 (fp16), tactic {4113, 4, 28, 30, 0}
char const* const kV2PackedTactic = "54534331020000000100000011100000040000001c0000001e0000000000000001000000030000000400000001000000"
                                    "010000000200000002000000000000000000000000000000000000000100000001000000020000000100000000000000"
                                    "0000c0400400000000000000010000000100000003000000000000000000000003000000003c010000b8000000400300"
                                    "000000004dd1f3601b6e8465";
// ---- version 3 (allow_tf32 = 1), pinned: magic, 3, dtype tag, flags (0x1 allow_tf32 | 0x2 tactic), [tactic],
// then exactly the version 1/2 body ----
// the exact spec of kV1Exact with allow_tf32 = 1, no tactic (flags 0x1)
char const* const kV3Exact = "545343310300000000000000010000000100000002000000020000000300000003000000010000000100000001000000"
                             "01000000010000000100000001000000010000000100000000000000000000000000c040030000000000000002000000"
                             "0300000003000000000000000d00000011000000030000000000003f0000a0bf0000004000000000020000000000003e"
                             "000000bfabfc3d85857508ad";
// the same with tactic {4117, 8, 56, 56, 0} (flags 0x3)
char const* const kV3ExactTactic = "545343310300000000000000030000001510000008000000380000003800000000000000010000000200000002000000"
                                   "030000000300000001000000010000000100000001000000010000000100000001000000010000000100000000000000"
                                   "000000000000c0400300000000000000020000000300000003000000000000000d00000011000000030000000000003f"
                                   "0000a0bf0000004000000000020000000000003e000000bfe4ff8dc3fbb43b41";

ConvSpec exactSpec(int32_t allowTf32)
{
    ConvSpec e;
    e.K = 2;
    e.C = 2;
    e.R = 3;
    e.S = 3;
    e.pad_top = e.pad_left = e.pad_bottom = e.pad_right = 1;
    e.activation = 1;
    e.row_offsets = {0, 2, 3};
    e.indices = {0, 13, 17};
    e.values = {0.5F, -1.25F, 2.0F};
    e.bias = {0.125F, -0.5F};
    e.allow_tf32 = allowTf32;
    return e;
}

ConvSpec packedSpec()
{
    ConvSpec p;
    p.K = 3;
    p.C = 4;
    p.R = 1;
    p.S = 1;
    p.stride_h = p.stride_w = 2;
    p.activation = 2;
    p.clip_min = 0.F;
    p.clip_max = 6.F;
    p.weight_format = 1;
    p.row_offsets = {0, 1, 1, 3};
    p.packed = {static_cast<int32_t>((1U << 16) | 0x3C00U), static_cast<int32_t>(0xB800U),
        static_cast<int32_t>((3U << 16) | 0x4000U)};
    return p;
}

Tactic tactic(int32_t id, int32_t n, int32_t h, int32_t w, int32_t dtype, int32_t layout = 0)
{
    Tactic t;
    t.id = id;
    t.n = n;
    t.h = h;
    t.w = w;
    t.dtype = dtype;
    t.layout = layout;
    return t;
}

std::vector<unsigned char> blobOf(ConvSpec const& s, int32_t tag, Tactic const& t)
{
    std::vector<unsigned char> b(serializedSize(s, t));
    serializeSpec(s, tag, t, b.data());
    return b;
}

bool sameTactic(Tactic const& a, Tactic const& b)
{
    return a.id == b.id && a.n == b.n && a.h == b.h && a.w == b.w && a.dtype == b.dtype && a.layout == b.layout;
}

bool sameSpec(ConvSpec const& a, ConvSpec const& b)
{
    return a.format_version == b.format_version && a.K == b.K && a.C == b.C && a.R == b.R && a.S == b.S
        && a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.pad_top == b.pad_top && a.pad_left == b.pad_left
        && a.pad_bottom == b.pad_bottom && a.pad_right == b.pad_right && a.dilation_h == b.dilation_h
        && a.dilation_w == b.dilation_w && a.activation == b.activation && a.clip_min == b.clip_min
        && a.clip_max == b.clip_max && a.weight_format == b.weight_format && a.row_offsets == b.row_offsets
        && a.indices == b.indices && a.values == b.values && a.packed == b.packed && a.bias == b.bias
        && a.allow_tf32 == b.allow_tf32;
}

// A golden blob: deserializes to (spec, tag, tactic); that state serializes to the same bytes.
void golden(char const* name, char const* hex, ConvSpec const& spec, int32_t tag, Tactic const& t, uint32_t version)
{
    std::vector<unsigned char> const b = fromHex(hex);
    uint32_t v = 0;
    std::memcpy(&v, b.data() + 4, sizeof(v));
    check(v == version, std::string(name) + ": blob version " + std::to_string(v));
    ConvSpec out;
    int32_t outTag = -2;
    Tactic outT;
    std::string err;
    bool const ok = deserializeSpec(b.data(), b.size(), out, outTag, outT, err);
    check(ok, std::string(name) + ": deserializes" + (ok ? "" : " (" + err + ")"));
    check(ok && sameSpec(out, spec) && outTag == tag && sameTactic(outT, t) && outT.valid() == t.valid(),
        std::string(name) + ": spec, dtype tag, tactic and allow_tf32 = " + std::to_string(out.allow_tf32) + " as written");
    check(blobOf(spec, tag, t) == b, std::string(name) + ": this build serializes the same state to the same bytes");
}

// Re-checksum after a mutation (so that the structural checks are reached).
std::vector<unsigned char> resum(std::vector<unsigned char> b)
{
    uint64_t const h = blobChecksum(b.data(), b.size() - 8);
    std::memcpy(b.data() + b.size() - 8, &h, sizeof(h));
    return b;
}

std::vector<unsigned char> withWord(std::vector<unsigned char> b, size_t at, uint32_t value)
{
    std::memcpy(b.data() + at, &value, sizeof(value));
    return resum(b);
}

void refused(char const* what, std::vector<unsigned char> const& b, char const* reason)
{
    ConvSpec out;
    int32_t tag = -2;
    Tactic t;
    std::string err;
    bool const ok = deserializeSpec(b.data(), b.size(), out, tag, t, err);
    std::printf("GOLDEN-REFUSED %s: %s\n", what, ok ? "(accepted)" : err.c_str());
    check(!ok && err.find(reason) != std::string::npos, std::string(what) + ": refused with '" + reason + "'");
}

bool parseWith(ConvSpec const& base, FieldView const* extra, ConvSpec& out, std::string& err)
{
    FieldScratch scratch;
    std::vector<FieldView> v = specToFields(base, scratch);
    if (extra != nullptr)
        v.push_back(*extra);
    return parseFields(v.data(), static_cast<int32_t>(v.size()), out, err);
}
} // namespace

int main()
{
    Tactic const none;
    // ---- old blobs still load, and the writer still produces them ----
    golden("v1 exact (0d3a3b1)", kV1Exact, exactSpec(0), 0, none, kBlobVersion);
    golden("v2 packed32 + tactic (0d3a3b1)", kV2PackedTactic, packedSpec(), 1, tactic(4113, 4, 28, 30, 0),
        kBlobVersionTactic);
    // ---- version 3 ----
    golden("v3 exact allow_tf32", kV3Exact, exactSpec(1), 0, none, kBlobVersionFlags);
    golden("v3 exact allow_tf32 + tactic", kV3ExactTactic, exactSpec(1), 0, tactic(4117, 8, 56, 56, 0),
        kBlobVersionFlags);
    {
        // version 3 = version 1/2 body after a flags word (only the header and checksum differ)
        std::vector<unsigned char> const v1 = fromHex(kV1Exact), v3 = fromHex(kV3Exact);
        check(v3.size() == v1.size() + 4 && std::equal(v1.begin() + 12, v1.end() - 8, v3.begin() + 16),
            "v3 body = v1 body after the flags word");
    }

    // ---- corrupt version 3 blobs are refused with a reason ----
    std::vector<unsigned char> const v3 = fromHex(kV3Exact);
    std::vector<unsigned char> const v3t = fromHex(kV3ExactTactic);
    refused("v3 flags 0", withWord(v3, 12, 0U), "lacks the allow_tf32 flag");
    refused("v3 flags 0x2 (tactic without allow_tf32)", withWord(v3t, 12, 2U), "lacks the allow_tf32 flag");
    refused("v3 flags 0x5 (unknown bit)", withWord(v3, 12, 5U), "has flags 0x00000005 with unknown bits");
    refused("v3 flags 0x80000003", withWord(v3t, 12, 0x80000003U), "with unknown bits");
    refused("v3 tactic flag without a tactic", withWord(v3, 12, 3U), "serialized data");
    refused("v3 with a tactic but no tactic flag", withWord(v3t, 12, 1U), "serialized data");
    refused("v3 invalid tactic id", withWord(v3t, 16, 0xFFFFFFFFU), "invalid tactic");
    refused("v3 tactic of io 4 (no such dtype / layout)", withWord(v3t, 32, 4U), "invalid tactic");
    refused("v3 tactic of io -1", withWord(v3t, 32, 0xFFFFFFFFU), "invalid tactic");
    {
        // io 2 / 3: tactics of NHWC (kHWC / kHWC8) plans -- the same bytes as an NCHW tactic but the last word
        for (int32_t io = 0; io < 4; ++io)
        {
            Tactic const t = tactic(4117, 8, 56, 56, io % 2, io / 2);
            std::vector<unsigned char> const b = blobOf(exactSpec(1), 0, t);
            check(b == withWord(v3t, 32, static_cast<uint32_t>(io)),
                "v3 tactic io " + std::to_string(io) + " = dtype + 2 * layout in the tactic's last word");
            ConvSpec out;
            int32_t outTag = -2;
            Tactic outT;
            std::string err;
            check(deserializeSpec(b.data(), b.size(), out, outTag, outT, err) && sameTactic(outT, t),
                "v3 tactic io " + std::to_string(io) + " reads back as dtype " + std::to_string(outT.dtype)
                    + ", layout " + std::to_string(outT.layout));
        }
    }
    refused("v3 blob read as version 2", withWord(v3t, 4, 2U), "serialized data");
    refused("v1 blob read as version 3", withWord(fromHex(kV1Exact), 4, 3U), "serialized data");
    refused("v2 blob read as version 3 (tactic id as flags)", withWord(fromHex(kV2PackedTactic), 4, 3U),
        "has flags 0x00001011 with unknown bits");
    refused("version 4", withWord(v3, 4, 4U), "has blob version 4, this library reads versions 1 to 3");
    {
        std::vector<unsigned char> t(v3.begin(), v3.begin() + 14); // ends inside the flags word
        t.resize(t.size() + 8);
        refused("v3 truncated in the flags word", resum(t), "truncated");
        std::vector<unsigned char> f = v3;
        f[12] ^= 0x04U; // flipped flag bit, checksum not repaired
        refused("v3 flipped flag bit", f, "checksum mismatch");
        std::vector<unsigned char> x = v3;
        x.insert(x.end() - 8, 4, 0);
        refused("v3 trailing bytes", resum(x), "unexpected trailing bytes");
    }

    // ---- V3 fields: unchanged for a default layer, allow_tf32 parsed and validated ----
    {
        char const* const old13[] = {"format_version", "weight_shape", "strides", "pads", "dilations", "activation",
            "clip_min", "clip_max", "weight_format", "row_offsets", "indices", "values", "bias"};
        FieldScratch scratch;
        ConvSpec const s0 = exactSpec(0);
        std::vector<FieldView> const f0 = specToFields(s0, scratch);
        bool same = f0.size() == 13;
        for (size_t i = 0; same && i < 13; ++i)
            same = std::strcmp(f0[i].name, old13[i]) == 0;
        check(same, "fields of a layer without allow_tf32 = the 13 fields of builds before it");
        ConvSpec const s1 = exactSpec(1);
        std::vector<FieldView> const f1 = specToFields(s1, scratch);
        check(f1.size() == 14 && std::strcmp(f1.back().name, "allow_tf32") == 0
                && f1.back().type == static_cast<int32_t>(FieldType::kINT32) && f1.back().length == 1
                && *static_cast<int32_t const*>(f1.back().data) == 1,
            "allow_tf32 = 1 adds one kINT32 field 'allow_tf32' = 1 after the others");
        ConvSpec out;
        std::string err;
        check(parseFields(f1.data(), static_cast<int32_t>(f1.size()), out, err) && out.allow_tf32 == 1,
            "fields with allow_tf32 = 1 parse to allow_tf32 = 1");
        check(parseFields(f0.data(), static_cast<int32_t>(f0.size()), out, err) && out.allow_tf32 == 0,
            "fields without allow_tf32 parse to allow_tf32 = 0");
        int32_t const zeroValue = 0;
        FieldView zero{"allow_tf32", &zeroValue, static_cast<int32_t>(FieldType::kINT32), 1};
        check(parseWith(s0, &zero, out, err) && out.allow_tf32 == 0, "an explicit allow_tf32 = 0 parses to 0");
        int64_t const one64 = 1;
        FieldView i64{"allow_tf32", &one64, static_cast<int32_t>(FieldType::kINT64), 1};
        check(parseWith(s0, &i64, out, err) && out.allow_tf32 == 1, "allow_tf32 as kINT64 1 parses to 1");
        struct Bad
        {
            char const* what;
            FieldView f;
            char const* reason;
        };
        int32_t const two = 2, minus = -1;
        int32_t const pair[2] = {1, 1};
        float const onef = 1.F;
        Bad const bad[] = {
            {"allow_tf32 = 2", {"allow_tf32", &two, static_cast<int32_t>(FieldType::kINT32), 1},
                "field 'allow_tf32' = 2 is not 0 (exact fp32) or 1 (TF32 allowed)"},
            {"allow_tf32 = -1", {"allow_tf32", &minus, static_cast<int32_t>(FieldType::kINT32), 1},
                "field 'allow_tf32' = -1 is not 0"},
            {"allow_tf32 as kFLOAT32", {"allow_tf32", &onef, static_cast<int32_t>(FieldType::kFLOAT32), 1},
                "field 'allow_tf32' has type kFLOAT32"},
            {"allow_tf32 with 2 entries", {"allow_tf32", pair, static_cast<int32_t>(FieldType::kINT32), 2},
                "field 'allow_tf32' has 2 entries, expected 1"},
            {"allow_tf32 with 0 entries", {"allow_tf32", nullptr, static_cast<int32_t>(FieldType::kINT32), 0},
                "field 'allow_tf32' has 0 entries, expected 1"},
        };
        for (Bad const& b : bad)
        {
            bool const ok = parseWith(s0, &b.f, out, err);
            std::printf("GOLDEN-REFUSED %s: %s\n", b.what, ok ? "(accepted)" : err.c_str());
            check(!ok && err.find(b.reason) != std::string::npos, std::string(b.what) + ": refused naming the field");
        }
        ConvSpec bad2 = exactSpec(0);
        bad2.allow_tf32 = 3;
        check(!validateSpec(bad2, err) && err.find("field 'allow_tf32'") != std::string::npos,
            "validateSpec refuses allow_tf32 = 3");
        check(describeSpec(s1).size() > 5 && describeSpec(s1).substr(describeSpec(s1).size() - 5) == " tf32"
                && describeSpec(s0).find("tf32") == std::string::npos,
            "describeSpec ends in ' tf32' only with allow_tf32");
    }
    std::printf("GOLDEN-SUMMARY checks=%d failures=%d\n", gChecks, gFailures);
    return gFailures == 0 ? 0 : 1;
}
