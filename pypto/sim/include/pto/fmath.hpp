/*
 * The simulator's exp and log (texp, tlog, the expdif broadcasts): a fixed implementation
 * in this header, never the host's libm, so a kernel gives the same bits on every host.
 *
 * As in pto-isa's CPU model of the instructions (include/pto/cpu/ElementOp.h computes
 * static_cast<float>(std::exp(static_cast<double>(x)))), the FP32 result is the float64
 * function rounded once to float.  The float64 functions are pypto.golden.fp64's
 * algorithms, operation for operation on the same constants: IEEE 754 basic operations
 * only, which -ffp-contract=off (the sim platforms' flags) keeps unfused.  So the
 * simulator, pypto.debug's torch runtime and the goldens agree bit for bit (tests/sim
 * compares them), and the FP32 results are correctly rounded but for float64 results
 * within a few float64 ulps of a rounding midpoint (docs/numerics.md).
 *
 * A NaN argument gives the canonical quiet NaN (never its payload, which compilers may
 * pass through a float -> double -> float round trip or not).  Straight-line code with
 * selects, no branches on the data: vectorised and scalar loops compute the same.
 */
#ifndef PTO_FMATH_HPP
#define PTO_FMATH_HPP

#include <stdint.h>

namespace pto {
namespace fmath {

constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kLn2Hi = 0x1.62e42fee00000p-1;  // 32 bits: k * kLn2Hi is exact for |k| < 2^21
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;
constexpr double kRoundShift = 0x1.8p52;  // (t + kRoundShift) - kRoundShift: t rounded, ties to even
constexpr double kExpLow = -746.0, kExpHigh = 710.0;  // exp is 0 below, inf above
constexpr int kExpDegree = 13;
constexpr int kLogTerms = 11;

constexpr double factorial(int k) { return k <= 1 ? 1.0 : k * factorial(k - 1); }  // exact to 18!

// 1/k! and 1/(2j+1): one correctly rounded division each.
struct Coefficients {
    double exp_taylor[kExpDegree + 1];
    double atanh_series[kLogTerms];
    constexpr Coefficients() : exp_taylor(), atanh_series() {
        for (int k = 0; k <= kExpDegree; ++k) exp_taylor[k] = 1.0 / factorial(k);
        for (int j = 0; j < kLogTerms; ++j) atanh_series[j] = 1.0 / double(2 * j + 1);
    }
};
constexpr Coefficients kCoefficients{};

inline double from_bits(uint64_t u) {
    double d;
    __builtin_memcpy(&d, &u, sizeof d);
    return d;
}

inline uint64_t to_bits(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
}

// 2^k for k in the normal range [-1022, 1023].
inline double power_of_two(int64_t k) { return from_bits(uint64_t(k + 1023) << 52); }

template <int N> inline double horner(const double (&c)[N], double x) {
    double acc = c[N - 1];
    for (int i = N - 2; i >= 0; --i) acc = acc * x + c[i];
    return acc;
}

/* e^x: x = k ln2 + r, |r| <= ln2/2; exp(r) by its Taylor polynomial of degree 13, scaled by
 * 2^k in two exact halves (the second multiplication rounds a subnormal result once). */
inline double exp(double x) {
    const double xc = x < kExpLow ? kExpLow : (x > kExpHigh ? kExpHigh : x);
    const double k = (xc * kInvLn2 + kRoundShift) - kRoundShift;
    const double r = (xc - k * kLn2Hi) - k * kLn2Lo;
    const double p = horner(kCoefficients.exp_taylor, r);
    const int64_t kk = int64_t(k == k ? k : 0.0);
    const int64_t half = kk >> 1;
    const double y = (p * power_of_two(half)) * power_of_two(kk - half);
    return x != x ? __builtin_nan("") : y;
}

/* ln x: x = 2^e m, m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m-1)/(m+1), by its
 * series to s^21; e ln2 added as a head and a tail.  ln 0 = -inf, ln of x < 0 or NaN = NaN. */
inline double log(double x) {
    const bool tiny = x < 0x1p-1022;  // subnormals scaled into the normal range
    const uint64_t bits = to_bits(tiny ? x * 0x1p54 : x);
    const int64_t e0 = int64_t((bits >> 52) & 0x7ff) - 1023 - (tiny ? 54 : 0);
    const double m0 = from_bits((bits & ((uint64_t(1) << 52) - 1)) | (uint64_t(1023) << 52));
    const bool big = m0 > kSqrt2;
    const double m = big ? m0 * 0.5 : m0;
    const double e = double(e0 + (big ? 1 : 0));
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double y = e * kLn2Hi + (e * kLn2Lo + (s + s) * horner(kCoefficients.atanh_series, s * s));
    const double special = x == __builtin_inf() ? x : (x == 0.0 ? -__builtin_inf() : y);
    return (x < 0.0 || x != x) ? __builtin_nan("") : special;
}

inline float expf(float x) { return float(exp(double(x))); }
inline float logf(float x) { return float(log(double(x))); }

}  // namespace fmath
}  // namespace pto

#endif /* PTO_FMATH_HPP */
