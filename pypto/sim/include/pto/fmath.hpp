/*
 * The simulator's exp and log (texp, tlog, the expdif broadcasts): a fixed implementation
 * in this header, never the host's libm, so a kernel gives the same bits on every host.
 *
 * As in pto-isa's CPU model of the instructions (include/pto/cpu/ElementOp.h computes
 * static_cast<float>(std::exp(static_cast<double>(x)))), the FP32 result is the float64
 * function rounded once to float.  The float64 functions are pypto.golden.fp64's
 * algorithms, operation for operation on the same constants: IEEE 754 basic operations
 * and exact bit manipulation only, which -ffp-contract=off (the sim platforms' flags)
 * keeps unfused.  So the simulator, pypto.debug's torch runtime and the goldens agree bit
 * for bit (tests/sim compares them), and the FP32 results are correctly rounded but for
 * float64 results within a few float64 ulps of an FP32 rounding midpoint (docs/numerics.md).
 * A NaN argument gives the canonical quiet NaN.
 *
 * One template serves a double and a vector of two (GCC's generic vectors: SSE2, NEON): no
 * branch on the data, selects instead, and integers made from doubles by adding 1.5 * 2^52.
 * The array forms take four elements at a time (two vectors) and the scalar instance for the
 * rest, or for all when SIMD is off (simd.hpp): the same operations on every element either
 * way.  About 2.5x the time of glibc's expf per element.
 */
#ifndef PTO_FMATH_HPP
#define PTO_FMATH_HPP

#include <stdint.h>

#include "simd.hpp"

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

typedef double F64x2 __attribute__((vector_size(16)));
typedef uint64_t U64x2 __attribute__((vector_size(16)));
typedef float F32x2 __attribute__((vector_size(8)));

// The bits of a double, or of each lane, and back.
inline uint64_t bits_of(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
}
inline __attribute__((always_inline)) U64x2 bits_of(F64x2 d) { return (U64x2)d; }
inline double double_of(uint64_t u) {
    double d;
    __builtin_memcpy(&d, &u, sizeof d);
    return d;
}
inline __attribute__((always_inline)) F64x2 double_of(U64x2 u) { return (F64x2)u; }

// 2^k from t = k + kRoundShift, for integer k in the normal range [-1022, 1023].
template <class D> inline __attribute__((always_inline)) D power_of_two(D t) {
    return double_of((bits_of(t) - bits_of(kRoundShift) + 1023) << 52);
}

// c[0] + c[1] x + ... + c[N-1] x^(N-1) by Estrin's scheme: pairs t[2i] + t[2i+1] p with
// p = x, x^2, x^4, ... level by level (a shorter chain of dependent operations than Horner's).
template <int N, class D> inline __attribute__((always_inline)) D estrin(const double (&c)[N], D x) {
    D t[N];
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) t[i] = D{} + c[i];
    D p = x;
#pragma GCC unroll 8
    for (int m = N; m > 1; m = (m + 1) / 2) {
#pragma GCC unroll 16
        for (int i = 0; 2 * i < m; ++i) t[i] = 2 * i + 1 < m ? t[2 * i] + t[2 * i + 1] * p : t[2 * i];
        p = p * p;
    }
    return t[0];
}

/* e^x: x = k ln2 + r, |r| <= ln2/2; exp(r) by its Taylor polynomial of degree 13, scaled by
 * 2^k in two exact factors 2^k1 2^k2, k1 = k/2 rounded to even (the second multiplication
 * rounds a subnormal result once). */
template <class D> inline __attribute__((always_inline)) D exp(D x) {
    D xc = x < kExpLow ? D{} + kExpLow : x;
    xc = xc > kExpHigh ? D{} + kExpHigh : xc;
    const D k = (xc * kInvLn2 + kRoundShift) - kRoundShift;
    const D r = (xc - k * kLn2Hi) - k * kLn2Lo;
    const D p = estrin(kCoefficients.exp_taylor, r);
    const D t1 = k * 0.5 + kRoundShift;
    const D t2 = (k - (t1 - kRoundShift)) + kRoundShift;
    const D y = (p * power_of_two(t1)) * power_of_two(t2);
    return x != x ? D{} + __builtin_nan("") : y;
}

/* ln x: x = 2^e m, m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m-1)/(m+1), by its
 * series to s^21; e ln2 added as a head and a tail.  ln 0 = -inf, ln of x < 0 or NaN = NaN. */
template <class D> inline __attribute__((always_inline)) D log(D x) {
    const auto tiny = x < 0x1p-1022;  // subnormals scaled into the normal range
    const auto bits = bits_of(tiny ? x * 0x1p54 : x);
    const D e0 = double_of(((bits >> 52) & 0x7ff) + bits_of(kRoundShift)) - (kRoundShift + 1023.0);
    const D m0 = double_of((bits & ((uint64_t(1) << 52) - 1)) | (uint64_t(1023) << 52));
    const auto big = m0 > kSqrt2;
    const D m = big ? m0 * 0.5 : m0;
    const D e = (e0 - (tiny ? D{} + 54.0 : D{})) + (big ? D{} + 1.0 : D{});
    const D f = m - 1.0;
    const D s = f / (2.0 + f);
    const D y = e * kLn2Hi + (e * kLn2Lo + (s + s) * estrin(kCoefficients.atanh_series, s * s));
    const D special = x == __builtin_inf() ? x : (x == 0.0 ? D{} - __builtin_inf() : y);
    return (x < 0.0) | (x != x) ? D{} + __builtin_nan("") : special;
}

inline float expf(float x) { return float(exp(double(x))); }
inline float logf(float x) { return float(log(double(x))); }

namespace detail {

struct Exp {
    template <class D> static inline __attribute__((always_inline)) D f(D x) { return exp(x); }
};
struct Log {
    template <class D> static inline __attribute__((always_inline)) D f(D x) { return log(x); }
};

// The float differences src[i] - sub[i] (or src[i] - s), as doubles, two lanes from i.
inline __attribute__((always_inline)) F64x2 load2(const float *src, const float *sub, float s, int64_t i) {
    F32x2 a, b;
    __builtin_memcpy(&a, src + i, sizeof a);
    if (sub) __builtin_memcpy(&b, sub + i, sizeof b);
    else b = F32x2{} + s;
    return __builtin_convertvector(a - b, F64x2);
}

inline __attribute__((always_inline)) void store2(float *dst, int64_t i, F64x2 y) {
    const F32x2 f = __builtin_convertvector(y, F32x2);
    __builtin_memcpy(dst + i, &f, sizeof f);
}

// dst[i] = Fn(src[i] - sub[i]) (or src[i] - s: the float difference), four elements at a
// time in two independent F64x2 chains (the polynomials' latency overlaps), or one at a
// time when SIMD is off.  Each chunk's sources are read before its dst is written.
template <class Fn> __attribute__((noinline)) void apply(float *dst, const float *src, const float *sub, float s, int64_t n) {
    int64_t i = 0;
    const int64_t vn = pto::detail::simd_enabled() ? n : 0;
    for (; i + 4 <= vn; i += 4) {
        const F64x2 lo = load2(src, sub, s, i), hi = load2(src, sub, s, i + 2);
        const F64x2 y_lo = Fn::f(lo), y_hi = Fn::f(hi);
        store2(dst, i, y_lo);
        store2(dst, i + 2, y_hi);
    }
    for (; i < n; ++i) dst[i] = float(Fn::f(double(src[i] - (sub ? sub[i] : s))));
}

}  // namespace detail

/* The same functions over arrays (dst may be src): exp, log, and exp of the FP32
 * difference src[i] - b[i] or src[i] - s (TROWEXPANDEXPDIF / TCOLEXPANDEXPDIF).
 * x - 0.0f is x for every float, -0 and NaN included. */
inline void exp_n(float *dst, const float *src, int64_t n) { detail::apply<detail::Exp>(dst, src, nullptr, 0.0f, n); }
inline void log_n(float *dst, const float *src, int64_t n) { detail::apply<detail::Log>(dst, src, nullptr, 0.0f, n); }
inline void expdif_n(float *dst, const float *src, const float *b, int64_t n) {
    detail::apply<detail::Exp>(dst, src, b, 0.0f, n);
}
inline void expdif_n(float *dst, const float *src, float s, int64_t n) {
    detail::apply<detail::Exp>(dst, src, nullptr, s, n);
}

}  // namespace fmath
}  // namespace pto

#endif /* PTO_FMATH_HPP */
