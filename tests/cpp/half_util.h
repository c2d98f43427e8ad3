// fp16 <-> fp32 on the host for the test programs (round to nearest even).
#ifndef TRT_SPARSE_TESTS_HALF_UTIL_H
#define TRT_SPARSE_TESTS_HALF_UTIL_H

#include <cmath>
#include <cstdint>

inline float halfToFloatT(uint16_t h)
{
    uint32_t const e = (h >> 10) & 0x1FU;
    uint32_t const m = h & 0x3FFU;
    float v = e == 0 ? std::ldexp(static_cast<float>(m), -24)
                     : (e == 31 ? (m ? NAN : INFINITY) : std::ldexp(static_cast<float>(m | 0x400U), static_cast<int>(e) - 25));
    return (h & 0x8000U) ? -v : v;
}

inline uint16_t floatToHalfT(float f)
{
    uint16_t const sign = std::signbit(f) ? 0x8000U : 0;
    double const a = std::fabs(static_cast<double>(f));
    if (std::isnan(f))
        return 0x7E00U;
    if (a >= 65520.0)
        return static_cast<uint16_t>(sign | 0x7C00U);
    if (a < std::ldexp(1.0, -14))
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * std::ldexp(1.0, 24))));
    int e = 0;
    double const fr = std::frexp(a, &e);
    double mant = std::nearbyint(fr * 2048.0);
    if (mant >= 2048.0)
    {
        mant /= 2.0;
        ++e;
    }
    int const exp = e - 1 + 15;
    if (exp >= 31)
        return static_cast<uint16_t>(sign | 0x7C00U);
    return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | (static_cast<uint32_t>(mant) - 1024U));
}

inline float roundToHalf(float f)
{
    return halfToFloatT(floatToHalfT(f));
}

#endif
