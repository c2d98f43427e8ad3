/*
 * trt-sparse: the V2 (TensorRT 8.x) serialized blob of a SparseConv2d plugin:
 * magic "TSC1", blob version, configured dtype, [version 3: flags word], [tactic],
 * geometry, the five arrays with their counts, FNV-1a-64 checksum. The version is the
 * lowest that holds the plugin's state (1: plain, 2: + tactic, 3: allow_tf32 = 1, with or
 * without a tactic), so blobs of layers without TF32 are byte-identical to older builds.
 * The reader checks the remaining length before every read and before any allocation,
 * rejects trailing bytes and unknown flags, then validates the spec.
 * C++14, no TensorRT / CUDA.
 */
#include "SparseConv2dCore.h"

#include <cstdio>
#include <cstring>

namespace trt_sparse
{

namespace
{

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

size_t serializedSize(ConvSpec const& s, Tactic const& tactic)
{
    return serializedSize(s) + (checkTactic(tactic) ? kTacticLength * sizeof(int32_t) : 0);
}

size_t serializedSize(ConvSpec const& s)
{
    return 3 * sizeof(uint32_t) + (s.allow_tf32 != 0 ? sizeof(uint32_t) : 0) + kHeaderScalars * sizeof(int32_t)
        + 2 * sizeof(float) + 5 * sizeof(uint32_t) + s.row_offsets.size() * sizeof(int32_t)
        + s.indices.size() * sizeof(int32_t) + s.values.size() * sizeof(float) + s.packed.size() * sizeof(int32_t)
        + s.bias.size() * sizeof(float) + kChecksumBytes;
}

void serializeSpec(ConvSpec const& s, int32_t dtypeTag, void* buffer)
{
    serializeSpec(s, dtypeTag, Tactic(), buffer);
}

void serializeSpec(ConvSpec const& s, int32_t dtypeTag, Tactic const& tactic, void* buffer)
{
    unsigned char* const begin = static_cast<unsigned char*>(buffer);
    Writer w(begin);
    bool const withTactic = checkTactic(tactic);
    bool const withFlags = s.allow_tf32 != 0;
    w.put<uint32_t>(kBlobMagic);
    w.put<uint32_t>(withFlags ? kBlobVersionFlags : (withTactic ? kBlobVersionTactic : kBlobVersion));
    w.put<int32_t>(dtypeTag);
    if (withFlags)
    {
        w.put<uint32_t>(kBlobFlagAllowTf32 | (withTactic ? kBlobFlagTactic : 0U));
    }
    if (withTactic)
    {
        int32_t const t[kTacticLength] = {tactic.id, tactic.n, tactic.h, tactic.w, tactic.io()};
        for (int32_t v : t)
        {
            w.put<int32_t>(v);
        }
    }
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
    Tactic ignored;
    return deserializeSpec(data, length, out, dtypeTag, ignored, err);
}

bool deserializeSpec(
    void const* data, size_t length, ConvSpec& out, int32_t& dtypeTag, Tactic& tacticOut, std::string& err)
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
    if (version != kBlobVersion && version != kBlobVersionTactic && version != kBlobVersionFlags)
    {
        err = "serialized data has blob version " + std::to_string(version) + ", this library reads versions "
            + std::to_string(kBlobVersion) + " to " + std::to_string(kBlobVersionFlags);
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
    uint32_t flags = 0;
    if (ok && version == kBlobVersionFlags)
    {
        if (!r.get(flags))
        {
            err = "serialized data truncated (no flags word in a version 3 blob)";
            return false;
        }
        if ((flags & ~(kBlobFlagAllowTf32 | kBlobFlagTactic)) != 0)
        {
            char hex[16];
            std::snprintf(hex, sizeof(hex), "0x%08x", static_cast<unsigned>(flags));
            err = std::string("serialized data (blob version 3) has flags ") + hex
                + " with unknown bits (this library knows 0x1 allow_tf32 and 0x2 tactic)";
            return false;
        }
        if ((flags & kBlobFlagAllowTf32) == 0)
        {
            err = "serialized data (blob version 3) lacks the allow_tf32 flag (layers without it are written as "
                  "version 1 or 2)";
            return false;
        }
        s.allow_tf32 = 1;
    }
    bool const hasTactic = version == kBlobVersionTactic || (flags & kBlobFlagTactic) != 0;
    Tactic tactic;
    if (hasTactic)
    {
        int32_t io = -1;
        ok = ok && r.get(tactic.id) && r.get(tactic.n) && r.get(tactic.h) && r.get(tactic.w) && r.get(io);
        tactic.setIo(io);
    }
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
    if (hasTactic && !checkTactic(tactic))
    {
        err = "serialized data has an invalid tactic (id " + std::to_string(tactic.id) + ")";
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
    tacticOut = tactic;
    return true;
}

} // namespace trt_sparse
