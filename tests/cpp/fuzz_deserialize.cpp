/*
 * Deserialization fuzz of the SparseConv2d plugin core (CPU only, no CUDA, no TensorRT).
 * Build with -fsanitize=address,undefined -fno-sanitize-recover=all so that any
 * out-of-bounds read or UB aborts the run.
 *
 * Inputs (per iteration, counted separately):
 *   valid       random valid specs (a third with allow_tf32 = 1: blob version 3): serialize -> deserialize
 *               must succeed and re-serialize identically; the same spec without allow_tf32 must give a
 *               version 1 / 2 blob that round-trips too
 *   truncated   every kind of prefix of a valid blob: must be rejected
 *   bitflip     1..8 flipped bits: must be rejected (checksum) unless the bytes are unchanged
 *   fixedsum    byte/bit mutations with the checksum recomputed (reaches the structural parser):
 *               rejected, or accepted only if the result is valid and re-serializes to the same bytes
 *   lengths     array-count fields set to huge / off-by-one values (checksum recomputed): rejected
 *   flags       version 3 blobs with a bad flags word (no allow_tf32 bit, unknown bits) or a version
 *               word changed between 1, 2 and 3 (checksum recomputed): rejected, or accepted only as
 *               a valid blob that re-serializes to the same bytes
 *   random      random bytes (half of them with a correct magic/version/checksum frame)
 *   fields      random TensorRT-like field collections (names, types, lengths, contents)
 *   fieldmut    valid field collections with one field's type/length/contents mutated
 * usage: fuzz_deserialize [--iterations N] [--seed S]   (N scales every category)
 */
#include "SparseConv2dCore.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace trt_sparse;

namespace
{
std::mt19937_64 rng;
int gErrors = 0;

uint64_t rnd(uint64_t n)
{
    return n == 0 ? 0 : rng() % n;
}

void fail(char const* what, std::string const& detail)
{
    ++gErrors;
    if (gErrors < 20)
        std::printf("FAIL %s: %s\n", what, detail.c_str());
}

uint16_t randomHalfFinite()
{
    for (;;)
    {
        uint16_t const h = static_cast<uint16_t>(rnd(65536));
        if (((h >> 10) & 0x1F) != 0x1F && (h & 0x7FFF) != 0)
            return h;
    }
}

ConvSpec randomSpec()
{
    ConvSpec s;
    s.K = 1 + static_cast<int32_t>(rnd(8));
    s.C = 1 + static_cast<int32_t>(rnd(6));
    s.R = 1 + static_cast<int32_t>(rnd(4));
    s.S = 1 + static_cast<int32_t>(rnd(4));
    s.stride_h = 1 + static_cast<int32_t>(rnd(3));
    s.stride_w = 1 + static_cast<int32_t>(rnd(3));
    s.pad_top = static_cast<int32_t>(rnd(3));
    s.pad_left = static_cast<int32_t>(rnd(3));
    s.pad_bottom = static_cast<int32_t>(rnd(3));
    s.pad_right = static_cast<int32_t>(rnd(3));
    s.dilation_h = 1 + static_cast<int32_t>(rnd(2));
    s.dilation_w = 1 + static_cast<int32_t>(rnd(2));
    s.activation = static_cast<int32_t>(rnd(3));
    s.clip_min = -static_cast<float>(rnd(4));
    s.clip_max = static_cast<float>(rnd(7));
    s.weight_format = static_cast<int32_t>(rnd(2));
    double const density = static_cast<double>(rnd(101)) / 100.0;
    int32_t const crs = s.C * s.R * s.S;
    s.row_offsets.push_back(0);
    std::uniform_real_distribution<float> uni(-2.F, 2.F);
    for (int32_t k = 0; k < s.K; ++k)
    {
        for (int32_t i = 0; i < crs; ++i)
        {
            if (static_cast<double>(rnd(1000)) / 1000.0 >= density)
                continue;
            if (s.weight_format == 0)
            {
                s.indices.push_back(i);
                s.values.push_back(uni(rng));
            }
            else
                s.packed.push_back(static_cast<int32_t>((static_cast<uint32_t>(i) << 16) | randomHalfFinite()));
        }
        s.row_offsets.push_back(static_cast<int32_t>(s.weight_format == 0 ? s.indices.size() : s.packed.size()));
    }
    if (rnd(2))
        for (int32_t k = 0; k < s.K; ++k)
            s.bias.push_back(uni(rng));
    s.allow_tf32 = rnd(3) == 0 ? 1 : 0;
    return s;
}

// Blob version 1 without a (valid) tactic, version 2 with one; version 3 when allow_tf32 = 1.
std::vector<unsigned char> blobOf(ConvSpec const& s, int32_t tag, Tactic const& tactic = Tactic())
{
    std::vector<unsigned char> b(serializedSize(s, tactic));
    serializeSpec(s, tag, tactic, b.data());
    return b;
}

Tactic gLastTactic; // tactic read by the last successful tryBlob

void fixChecksum(std::vector<unsigned char>& b)
{
    if (b.size() < 8)
        return;
    uint64_t const h = blobChecksum(b.data(), b.size() - 8);
    std::memcpy(b.data() + b.size() - 8, &h, 8);
}

// Deserialize a copy held in a buffer of exactly its size (ASan sees any overread).
bool tryBlob(std::vector<unsigned char> const& b, ConvSpec& out, int32_t& tag, std::string& err)
{
    std::unique_ptr<unsigned char[]> exact(new unsigned char[b.size() == 0 ? 1 : b.size()]);
    if (!b.empty())
        std::memcpy(exact.get(), b.data(), b.size());
    gLastTactic = Tactic();
    return deserializeSpec(exact.get(), b.size(), out, tag, gLastTactic, err);
}

// ---- field collections that own their data, sized exactly by length and type
size_t elemSize(int32_t type)
{
    switch (static_cast<FieldType>(type))
    {
    case FieldType::kFLOAT16: return 2;
    case FieldType::kFLOAT32: return 4;
    case FieldType::kFLOAT64: return 8;
    case FieldType::kINT8: return 1;
    case FieldType::kINT16: return 2;
    case FieldType::kINT32: return 4;
    case FieldType::kCHAR: return 1;
    case FieldType::kBF16: return 2;
    case FieldType::kINT64: return 8;
    default: return 8; // types the parser refuses before reading; give it room anyway
    }
}

struct OwnedFields
{
    std::vector<std::string> names;
    std::vector<std::vector<unsigned char>> data;
    std::vector<int32_t> types, lengths;
    void add(std::string const& name, int32_t type, void const* src, int32_t length)
    {
        names.push_back(name);
        types.push_back(type);
        lengths.push_back(length);
        size_t const bytes = static_cast<size_t>(length < 0 ? 0 : length) * elemSize(type);
        data.emplace_back(bytes);
        if (bytes && src)
            std::memcpy(data.back().data(), src, bytes);
    }
    bool parse(ConvSpec& s, std::string& err) const
    {
        std::vector<FieldView> v;
        for (size_t i = 0; i < names.size(); ++i)
            v.push_back(FieldView{names[i].c_str(), data[i].empty() ? nullptr : data[i].data(), types[i], lengths[i]});
        return parseFields(v.data(), static_cast<int32_t>(v.size()), s, err);
    }
    bool parseTactic(Tactic& t, std::string& err) const
    {
        std::vector<FieldView> v;
        for (size_t i = 0; i < names.size(); ++i)
            v.push_back(FieldView{names[i].c_str(), data[i].empty() ? nullptr : data[i].data(), types[i], lengths[i]});
        return trt_sparse::parseTactic(v.data(), static_cast<int32_t>(v.size()), t, err);
    }
};

OwnedFields fieldsOf(ConvSpec const& s)
{
    OwnedFields f;
    FieldScratch scratch;
    for (FieldView const& v : specToFields(s, scratch))
        f.add(v.name, v.type, v.data, v.length);
    if (rnd(2))
        f.add("plugin_version", static_cast<int32_t>(FieldType::kCHAR), "1", rnd(2) ? 2 : 1);
    return f;
}

void randomize(std::vector<unsigned char>& d)
{
    for (auto& c : d)
        c = static_cast<unsigned char>(rnd(256));
}

bool sameSpec(ConvSpec const& a, ConvSpec const& b)
{
    return blobOf(a, 0) == blobOf(b, 0);
}

void silentSink(LogLevel, char const*) {}
} // namespace

int main(int argc, char** argv)
{
    long iterations = 10000;
    unsigned long long seed = 1;
    for (int i = 1; i + 1 < argc; ++i)
    {
        if (std::string(argv[i]) == "--iterations")
            iterations = std::strtol(argv[i + 1], nullptr, 10);
        if (std::string(argv[i]) == "--seed")
            seed = std::strtoull(argv[i + 1], nullptr, 10);
    }
    rng.seed(seed);
    setLogSink(&silentSink); // unknown-field warnings would flood the output
    long nValid = 0, nValidV3 = 0, nTrunc = 0, nFlip = 0, nFixed = 0, nFixedAccepted = 0, nLen = 0, nFlags = 0,
         nFlagsAccepted = 0, nRandom = 0, nFields = 0, nFieldsAccepted = 0, nFieldMut = 0, nFieldMutAccepted = 0;
    std::vector<std::string> const names = {"plugin_version", "plugin_namespace", "format_version", "weight_shape",
        "strides", "pads", "dilations", "activation", "clip_min", "clip_max", "weight_format", "row_offsets", "indices",
        "values", "packed", "bias", "unknown_field", "", "tactic", "allow_tf32"};

    for (long it = 0; it < iterations; ++it)
    {
        ConvSpec const s = randomSpec();
        int32_t const tag = static_cast<int32_t>(rnd(3)) - 1;
        Tactic tactic; // half the blobs carry a tuned kernel choice (blob version 2)
        if (rnd(2))
        {
            tactic.id = static_cast<int32_t>(rnd(kTacticIdLimit));
            tactic.n = 1 + static_cast<int32_t>(rnd(64));
            tactic.h = 1 + static_cast<int32_t>(rnd(4096));
            tactic.w = 1 + static_cast<int32_t>(rnd(4096));
            tactic.dtype = static_cast<int32_t>(rnd(2));
            tactic.layout = static_cast<int32_t>(rnd(2));
        }
        std::vector<unsigned char> const blob = blobOf(s, tag, tactic);
        size_t const flagsBytes = s.allow_tf32 != 0 ? 4 : 0;
        size_t const tacticBytes = tactic.valid() ? kTacticLength * 4 : 0;
        ConvSpec out;
        int32_t outTag = -2;
        std::string err;

        // valid round trip (also through the field path: what V3 getFieldsToSerialize feeds back)
        ++nValid;
        {
            uint32_t version = 0;
            std::memcpy(&version, &blob[4], 4);
            uint32_t const expected = s.allow_tf32 ? kBlobVersionFlags : (tactic.valid() ? kBlobVersionTactic : kBlobVersion);
            if (version != expected)
                fail("valid-version", "blob version " + std::to_string(version) + ", expected " + std::to_string(expected));
            nValidV3 += version == kBlobVersionFlags;
        }
        if (!tryBlob(blob, out, outTag, err) || outTag != tag || blobOf(out, tag, gLastTactic) != blob
            || out.allow_tf32 != s.allow_tf32 || gLastTactic.valid() != tactic.valid()
            || (tactic.valid() && (gLastTactic.id != tactic.id || gLastTactic.io() != tactic.io())))
            fail("valid", err);
        {
            // the version 1 / 2 reader paths of the same spec without allow_tf32 still round-trip, and their
            // blobs are the version 3 blob less the flags word (what builds before allow_tf32 wrote)
            ConvSpec s0 = s;
            s0.allow_tf32 = 0;
            std::vector<unsigned char> const v1 = blobOf(s0, tag);
            if (!tryBlob(v1, out, outTag, err) || gLastTactic.valid() || out.allow_tf32 != 0 || blobOf(out, tag) != v1)
                fail("valid-v1", err);
            std::vector<unsigned char> const v12 = blobOf(s0, tag, tactic);
            if (!tryBlob(v12, out, outTag, err) || gLastTactic.valid() != tactic.valid() || out.allow_tf32 != 0
                || blobOf(out, tag, gLastTactic) != v12)
                fail("valid-v2", err);
            if (s.allow_tf32 && (v12.size() + 4 != blob.size()
                    || !std::equal(v12.begin() + 12, v12.end() - 8, blob.begin() + 16)))
                fail("valid-v3", "version 3 body is not the version 1/2 body after a flags word");
        }
        {
            ConvSpec viaFields;
            if (!fieldsOf(s).parse(viaFields, err) || !sameSpec(viaFields, s))
                fail("valid-fields", err);
        }

        // truncations: 2 random prefixes + empty + one byte short
        for (int t = 0; t < 2; ++t)
        {
            ++nTrunc;
            size_t const len = t == 0 ? static_cast<size_t>(rnd(blob.size())) : blob.size() - 1;
            std::vector<unsigned char> b(blob.begin(), blob.begin() + static_cast<long>(len));
            if (tryBlob(b, out, outTag, err))
                fail("truncated", "prefix of " + std::to_string(len) + " accepted");
        }

        // bit flips without checksum repair
        for (int t = 0; t < 2; ++t)
        {
            ++nFlip;
            std::vector<unsigned char> b = blob;
            int const flips = 1 + static_cast<int>(rnd(8));
            for (int f = 0; f < flips; ++f)
                b[rnd(b.size())] ^= static_cast<unsigned char>(1U << rnd(8));
            if (b != blob && tryBlob(b, out, outTag, err))
                fail("bitflip", "corrupted blob accepted");
        }

        // mutations with the checksum recomputed: reach the structural checks
        for (int t = 0; t < 3; ++t)
        {
            ++nFixed;
            std::vector<unsigned char> b = blob;
            int const kind = static_cast<int>(rnd(4));
            if (kind == 0)
                b[rnd(b.size() - 8)] ^= static_cast<unsigned char>(1U << rnd(8));
            else if (kind == 1)
                b[rnd(b.size() - 8)] = static_cast<unsigned char>(rnd(256));
            else if (kind == 2) // overwrite an aligned int32 with an interesting value
            {
                static int32_t const vals[] = {0, 1, -1, 2, 3, 65536, 65537, 0x7FFFFFFF, static_cast<int32_t>(0x80000000),
                    0x7FC00000, 0x7F800000};
                size_t const pos = 4 * rnd((b.size() - 8) / 4);
                int32_t const v = vals[rnd(sizeof(vals) / sizeof(vals[0]))];
                std::memcpy(&b[pos], &v, 4);
            }
            else // insert or delete bytes in the middle
            {
                size_t const pos = 8 + rnd(b.size() - 16);
                if (rnd(2))
                    b.insert(b.begin() + static_cast<long>(pos), static_cast<unsigned char>(rnd(256)));
                else
                    b.erase(b.begin() + static_cast<long>(pos));
            }
            fixChecksum(b);
            if (tryBlob(b, out, outTag, err))
            {
                ++nFixedAccepted;
                std::string verr;
                if (!validateSpec(out, verr) || blobOf(out, outTag, gLastTactic) != b)
                    fail("fixedsum", "accepted blob that is invalid or misread: " + verr);
            }
        }

        // array-count attacks (5 arrays: offsets, indices, values, packed, bias)
        {
            ++nLen;
            std::vector<unsigned char> b = blob;
            size_t pos = 12 + flagsBytes + tacticBytes + 15 * 4 + 8;
            int const which = static_cast<int>(rnd(5));
            for (int a = 0; a < which; ++a)
            {
                uint32_t n = 0;
                std::memcpy(&n, &b[pos], 4);
                pos += 4 + static_cast<size_t>(n) * 4;
            }
            uint32_t n = 0;
            std::memcpy(&n, &b[pos], 4);
            static uint32_t const deltas[] = {1U, 0xFFFFFFFFU, 0x40000000U, 0x3FFFFFFFU, 2U};
            uint32_t const d = deltas[rnd(5)];
            uint32_t const v = rnd(3) == 0 ? 0xFFFFFFFFU : n + d;
            std::memcpy(&b[pos], &v, 4);
            fixChecksum(b);
            if (v != n && tryBlob(b, out, outTag, err))
                fail("lengths", "count " + std::to_string(v) + " accepted");
        }

        // version 3 flags word and version word attacks (checksum recomputed)
        {
            ++nFlags;
            std::vector<unsigned char> b = blob;
            int const kind = static_cast<int>(rnd(3));
            bool mustReject = false;
            if (kind == 0 && s.allow_tf32) // a flags word without allow_tf32 or with unknown bits
            {
                uint32_t f = 0;
                std::memcpy(&f, &b[12], 4);
                static uint32_t const bad[] = {0U, 2U, 4U, 8U, 0x80000000U, 0xFFFFFFFFU};
                uint32_t const v = rnd(2) ? bad[rnd(sizeof(bad) / sizeof(bad[0]))] : f | (1U << (2 + rnd(30)));
                std::memcpy(&b[12], &v, 4);
                mustReject = true;
            }
            else if (kind == 1 && s.allow_tf32) // toggle the tactic flag: the rest no longer lines up
            {
                b[12] ^= 2U;
            }
            else // another known (or unknown) version word
            {
                static uint32_t const versions[] = {kBlobVersion, kBlobVersionTactic, kBlobVersionFlags, 0U, 4U};
                uint32_t const v = versions[rnd(5)];
                std::memcpy(&b[4], &v, 4);
                mustReject = v == 0U || v == 4U;
            }
            fixChecksum(b);
            if (b != blob && tryBlob(b, out, outTag, err))
            {
                ++nFlagsAccepted;
                std::string verr;
                if (mustReject || !validateSpec(out, verr) || blobOf(out, outTag, gLastTactic) != b)
                    fail("flags", "accepted a forged flags/version word: " + verr);
            }
        }

        // random bytes
        {
            ++nRandom;
            std::vector<unsigned char> b(rnd(512));
            randomize(b);
            if (b.size() >= 16 && rnd(2))
            {
                uint32_t const m = kBlobMagic, ver = static_cast<uint32_t>(1 + rnd(3));
                std::memcpy(&b[0], &m, 4);
                std::memcpy(&b[4], &ver, 4);
                fixChecksum(b);
            }
            (void) tryBlob(b, out, outTag, err); // must not crash; acceptance is astronomically unlikely
        }

        // random field collections
        {
            ++nFields;
            OwnedFields f;
            int const nf = static_cast<int>(rnd(20));
            for (int i = 0; i < nf; ++i)
            {
                int32_t const type = static_cast<int32_t>(rnd(14));
                int32_t const len = rnd(10) == 0 ? -static_cast<int32_t>(rnd(3)) : static_cast<int32_t>(rnd(40));
                f.add(names[rnd(names.size())], type, nullptr, len);
                randomize(f.data.back());
            }
            Tactic ft;
            if (f.parseTactic(ft, err) && ft.valid() && !checkTactic(ft))
                fail("fields", "accepted an out-of-range tactic");
            ConvSpec fs;
            if (f.parse(fs, err))
            {
                ++nFieldsAccepted;
                std::string verr;
                if (!validateSpec(fs, verr))
                    fail("fields", "accepted invalid spec: " + verr);
            }
        }

        // valid field collections with one mutation
        {
            ++nFieldMut;
            OwnedFields f = fieldsOf(s);
            size_t const i = rnd(f.names.size());
            int const kind = static_cast<int>(rnd(5));
            if (kind == 0) // change the type, keep the byte buffer sized for the new type
            {
                f.types[i] = static_cast<int32_t>(rnd(14));
                f.data[i].resize(static_cast<size_t>(f.lengths[i] < 0 ? 0 : f.lengths[i]) * elemSize(f.types[i]));
            }
            else if (kind == 1) // change the length, buffer follows
            {
                f.lengths[i] = static_cast<int32_t>(rnd(2 * f.lengths[i] + 3)) - 1;
                f.data[i].resize(static_cast<size_t>(f.lengths[i] < 0 ? 0 : f.lengths[i]) * elemSize(f.types[i]));
            }
            else if (kind == 2 && !f.data[i].empty()) // random byte
                f.data[i][rnd(f.data[i].size())] = static_cast<unsigned char>(rnd(256));
            else if (kind == 3) // drop a field
            {
                f.names.erase(f.names.begin() + static_cast<long>(i));
                f.types.erase(f.types.begin() + static_cast<long>(i));
                f.lengths.erase(f.lengths.begin() + static_cast<long>(i));
                f.data.erase(f.data.begin() + static_cast<long>(i));
            }
            else // duplicate a field
                f.add(f.names[i], f.types[i], f.data[i].data(), f.lengths[i]);
            ConvSpec fs;
            if (f.parse(fs, err))
            {
                ++nFieldMutAccepted;
                std::string verr;
                if (!validateSpec(fs, verr))
                    fail("fieldmut", "accepted invalid spec: " + verr);
            }
        }
    }
    long const total = nValid + nTrunc + nFlip + nFixed + nLen + nFlags + nRandom + nFields + nFieldMut;
    std::printf("FUZZ seed=%llu valid=%ld (v3 %ld) truncated=%ld bitflip=%ld fixedsum=%ld (accepted %ld) lengths=%ld "
                "flags=%ld (accepted %ld) random=%ld fields=%ld (accepted %ld) fieldmut=%ld (accepted %ld) total=%ld "
                "errors=%d\n",
        seed, nValid, nValidV3, nTrunc, nFlip, nFixed, nFixedAccepted, nLen, nFlags, nFlagsAccepted, nRandom, nFields,
        nFieldsAccepted, nFieldMut, nFieldMutAccepted, total, gErrors);
    return gErrors == 0 ? 0 : 1;
}
