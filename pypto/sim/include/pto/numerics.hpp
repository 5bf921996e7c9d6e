/*
 * Element formats of the simulated tile ISA and the conversions between them.
 *
 * convert<D, S>(x, mode) models one hardware conversion instruction: the exact
 * source value is rounded once, by `mode`, into D.  Every source is first held
 * exactly as (sign, 64-bit magnitude, binary exponent), so no conversion ever
 * rounds twice (INT64 -> FP32, INT32 -> BF16 and FP32 -> FP8 included).
 *
 * Decisions where IEEE leaves the choice to the implementation:
 *  - NaN in -> one canonical positive quiet NaN out: f16 0x7E00, bf16 0x7FC0,
 *    float 0x7FC00000, e5m2 0x7E (the top byte of the f16 NaN), e4m3fn 0x7F.
 *  - Float -> integer rounds by the mode, then saturates to the destination's
 *    range (+-inf saturate too); NaN -> 0, like the hardware's saturating
 *    conversion.  Integer -> integer saturates.  Any -> bool is x != 0 (NaN -> true).
 *  - Float overflow follows IEEE: Rint/Round -> +-inf; Trunc and Odd -> the
 *    largest finite value; Floor/Ceil -> inf on the side they round towards,
 *    largest finite on the other.
 *  - FP8E4M3FN has no infinity: wherever IEEE would give +-inf (overflow under
 *    any mode, and an infinite input) it saturates to +-448, as torch's
 *    conversion does (goldens come from torch); only NaN gives NaN.
 *  - HF8 (HiFloat8) and FP8E8M0 are not IEEE-shaped; their encoders are below
 *    (EncodeHf8, EncodeE8m0) and docs/numerics.md specifies both.
 *  - The 4-bit types hold one element's code here (in the low nibble); tiles and tensors
 *    of them pack two to a byte (isa.hpp).  FP4 (E2M1) and HF4 (S1E1M2) have neither
 *    infinity nor NaN: overflow and infinite inputs saturate to their largest magnitude
 *    under every mode, and NaN gives +0, as NaN converted to an integer gives 0.  INT4
 *    and UINT4 are integers, saturating as every integer conversion does.
 */
#ifndef PTO_NUMERICS_HPP
#define PTO_NUMERICS_HPP

#include <stdint.h>
#include <string.h>

#include "simd.hpp"

namespace pto {

struct f16 { uint16_t bits; };
struct bf16 { uint16_t bits; };
struct fp8e4m3fn { uint8_t bits; };
struct fp8e5m2 { uint8_t bits; };
struct hf8 { uint8_t bits; };      // HiFloat8: tapered precision (docs/numerics.md)
struct fp8e8m0 { uint8_t bits; };  // OCP MX scale: 2^(bits - 127), 0xFF NaN; no sign, zero or inf
// The 4-bit types: one element's code in the low nibble (packed two to a byte in tiles).
struct fp4e2m1 { uint8_t bits; };  // OCP MX FP4: E2M1, bias 1, +-0 .. 6, no inf or NaN
struct hf4 { uint8_t bits; };      // HiFloat4's element: S1E1M2, magnitudes k / 4 (0 .. 1.75)
struct int4 { uint8_t bits; };     // two's complement: -8 .. 7
struct uint4 { uint8_t bits; };    // 0 .. 15

/* None means the conversion's natural mode: Rint for float targets, Trunc for float -> int. */
enum class RoundMode : int { None = 0, Rint = 1, Round = 2, Floor = 3, Ceil = 4, Trunc = 5, Odd = 6 };

namespace detail {

// The exact value (-1)^neg * mag * 2^exp, or an infinity / NaN.
struct Exact {
    enum Kind : uint8_t { Finite, Inf, NaN };
    uint64_t mag;
    int32_t exp;
    bool neg;
    Kind kind;
};

// Float formats: P significand bits (implicit one included), E exponent bits.
// IEEE formats reserve the top exponent for inf/NaN; E4M3FN ("finite") keeps it
// for numbers except the all-ones pattern, which is NaN.  The 4-bit floats have no
// NaN at all (HasNaN false: kNaN is then the code NaN converts to) and HF4 an exponent
// bias of 1 where the IEEE rule would give 0 (Bias).
template <class B, int P_, int E_, bool IEEE_, uint64_t NaN_, bool HasNaN_ = true,
          int Bias_ = (1 << (E_ - 1)) - 1>
struct Fmt {
    typedef B Bits;
    static constexpr int P = P_, E = E_, Bias = Bias_;
    static constexpr bool IEEE = IEEE_, HasNaN = HasNaN_;
    static constexpr uint64_t kNaN = NaN_;
};
template <class T> struct FloatFmt;
template <> struct FloatFmt<f16> : Fmt<uint16_t, 11, 5, true, 0x7E00> {};
template <> struct FloatFmt<bf16> : Fmt<uint16_t, 8, 8, true, 0x7FC0> {};
template <> struct FloatFmt<float> : Fmt<uint32_t, 24, 8, true, 0x7FC00000u> {};
template <> struct FloatFmt<double> : Fmt<uint64_t, 53, 11, true, 0x7FF8000000000000ull> {};
template <> struct FloatFmt<fp8e4m3fn> : Fmt<uint8_t, 4, 4, false, 0x7F> {};
template <> struct FloatFmt<fp8e5m2> : Fmt<uint8_t, 3, 5, true, 0x7E> {};
template <> struct FloatFmt<fp4e2m1> : Fmt<uint8_t, 2, 2, false, 0, false> {};
template <> struct FloatFmt<hf4> : Fmt<uint8_t, 3, 1, false, 0, false, 1> {};

template <class T> inline uint64_t bits_of(T x) {
    typename FloatFmt<T>::Bits b;
    memcpy(&b, &x, sizeof b);
    return b;
}

template <class T> inline T from_bits(uint64_t v) {
    const typename FloatFmt<T>::Bits b = (typename FloatFmt<T>::Bits)v;
    T x;
    memcpy(&x, &b, sizeof x);
    return x;
}

inline int msb(uint64_t v) { return 63 - __builtin_clzll(v); }

template <class T> inline Exact decode_float(T x) {
    typedef FloatFmt<T> F;
    const int mb = F::P - 1, bias = F::Bias, top = (1 << F::E) - 1;
    const uint64_t b = bits_of(x), mmask = (uint64_t(1) << mb) - 1;
    const uint64_t frac = b & mmask;
    const int field = int((b >> mb) & uint64_t(top));
    Exact r = {0, 0, bool((b >> (mb + F::E)) & 1), Exact::Finite};
    if (field == top && (F::IEEE || (F::HasNaN && frac == mmask))) {
        r.kind = (F::IEEE && frac == 0) ? Exact::Inf : Exact::NaN;
    } else if (field == 0) {
        r.mag = frac;
        r.exp = 1 - bias - mb;
    } else {
        r.mag = frac | (uint64_t(1) << mb);
        r.exp = field - bias - mb;
    }
    return r;
}

template <class T> inline Exact decode_signed(T x) {
    const bool neg = x < 0;
    const uint64_t mag = neg ? uint64_t(0) - uint64_t(int64_t(x)) : uint64_t(x);
    Exact r = {mag, 0, neg, Exact::Finite};
    return r;
}

inline Exact decode_unsigned(uint64_t x) {
    Exact r = {x, 0, false, Exact::Finite};
    return r;
}

inline Exact decompose(bool x) { return decode_unsigned(x ? 1 : 0); }
inline Exact decompose(int8_t x) { return decode_signed(x); }
inline Exact decompose(int16_t x) { return decode_signed(x); }
inline Exact decompose(int32_t x) { return decode_signed(x); }
inline Exact decompose(int64_t x) { return decode_signed(x); }
inline Exact decompose(uint8_t x) { return decode_unsigned(x); }
inline Exact decompose(uint16_t x) { return decode_unsigned(x); }
inline Exact decompose(uint32_t x) { return decode_unsigned(x); }
inline Exact decompose(uint64_t x) { return decode_unsigned(x); }
inline Exact decompose(f16 x) { return decode_float(x); }
inline Exact decompose(bf16 x) { return decode_float(x); }
inline Exact decompose(float x) { return decode_float(x); }
inline Exact decompose(double x) { return decode_float(x); }
inline Exact decompose(fp8e4m3fn x) { return decode_float(x); }
inline Exact decompose(fp8e5m2 x) { return decode_float(x); }
inline Exact decompose(fp4e2m1 x) { return decode_float(fp4e2m1{uint8_t(x.bits & 0xf)}); }
inline Exact decompose(hf4 x) { return decode_float(hf4{uint8_t(x.bits & 0xf)}); }
inline Exact decompose(int4 x) { return decode_signed(int8_t(int8_t(x.bits << 4) >> 4)); }
inline Exact decompose(uint4 x) { return decode_unsigned(uint8_t(x.bits & 0xf)); }

/* HiFloat8: sign, then a prefix-coded dot field giving the exponent's width D, the
 * exponent in sign-magnitude with an implicit leading one, and 3 - 3 - 3 - 2 - 1
 * mantissa bits for D = 0 - 1 - 2 - 3 - 4 (the payload's 7 bits: 0001 mmm, 001 s mmm,
 * 01 sx mmm, 10 sxx mm, 11 sxxx m).  Payload 0000 mmm: 2^(m - 23) for m > 0 (the
 * denormals), zero for m = 0 (0x00) and NaN with the sign set (0x80).  Exponent +15 with
 * mantissa 1 (0x6F / 0xEF) is +-inf, so 2^15 is the largest finite magnitude. */
inline Exact decompose(hf8 x) {
    const int b = x.bits, p = b & 0x7f;
    Exact r = {0, 0, bool(b & 0x80), Exact::Finite};
    if (p < 0x08) {
        if (p == 0) r.kind = r.neg ? Exact::NaN : Exact::Finite;
        else { r.mag = 1; r.exp = p - 23; }
        return r;
    }
    int d, field;  // exponent width, then the exponent and mantissa bits after the dot field
    if (p >= 0x60) { d = 4; field = p & 0x1f; }
    else if (p >= 0x40) { d = 3; field = p & 0x1f; }
    else if (p >= 0x20) { d = 2; field = p & 0x1f; }
    else if (p >= 0x10) { d = 1; field = p & 0x0f; }
    else { d = 0; field = p & 0x07; }
    const int mb = d <= 2 ? 3 : 5 - d;
    const int m = field & ((1 << mb) - 1), e_bits = field >> mb;
    int e = 0;
    if (d > 0) {
        const int mag = (1 << (d - 1)) | (e_bits & ((1 << (d - 1)) - 1));
        e = (e_bits >> (d - 1)) ? -mag : mag;
    }
    if (e == 15 && m == 1) {
        r.kind = Exact::Inf;
        return r;
    }
    r.mag = uint64_t((1 << mb) | m);
    r.exp = e - mb;
    return r;
}

/* FP8E8M0: 2^(bits - 127); 0xFF is NaN. */
inline Exact decompose(fp8e8m0 x) {
    Exact r = {1, int32_t(x.bits) - 127, false, x.bits == 0xff ? Exact::NaN : Exact::Finite};
    return r;
}

// Drops the low `shift` (>= 1) bits of mag, rounding the kept magnitude by mode;
// neg is the value's sign, which the directed modes need.
inline uint64_t round_shift(uint64_t mag, int shift, bool neg, RoundMode m) {
    uint64_t kept;
    bool above, tie, inexact;
    if (shift < 64) {
        const uint64_t rem = mag & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
        kept = mag >> shift;
        above = rem > half;
        tie = rem == half;
        inexact = rem != 0;
    } else {
        const uint64_t half = uint64_t(1) << 63;
        kept = 0;
        above = shift == 64 && mag > half;
        tie = shift == 64 && mag == half;
        inexact = mag != 0;
    }
    switch (m) {
    case RoundMode::Rint: return kept + (above || (tie && (kept & 1)));
    case RoundMode::Round: return kept + (above || tie);
    case RoundMode::Floor: return kept + (neg && inexact);
    case RoundMode::Ceil: return kept + (!neg && inexact);
    case RoundMode::Odd: return kept | uint64_t(inexact);
    default: return kept;
    }
}

template <class D> struct EncodeFloat {
    typedef FloatFmt<D> F;
    static constexpr int mb = F::P - 1, bias = F::Bias;
    // The largest exponent field of a number: below the IEEE formats' inf/NaN one.
    static constexpr int emin = 1 - bias, emax = (1 << F::E) - (F::IEEE ? 2 : 1) - bias;
    // E4M3FN's all-ones significand at emax is its NaN.
    static constexpr uint64_t max_sig = (uint64_t(1) << F::P) - (!F::IEEE && F::HasNaN ? 2 : 1);

    static uint64_t largest(uint64_t sign) {
        return sign | uint64_t(emax + bias) << mb | (max_sig & ((uint64_t(1) << mb) - 1));
    }
    // Formats without infinity saturate instead.
    static uint64_t infinity(uint64_t sign) {
        return F::IEEE ? sign | uint64_t((1 << F::E) - 1) << mb : largest(sign);
    }

    __attribute__((noinline)) static D from(const Exact &v, RoundMode m) {
        const uint64_t sign = uint64_t(v.neg) << (mb + F::E);
        if (v.kind == Exact::NaN) return from_bits<D>(F::kNaN);
        if (v.kind == Exact::Inf) return from_bits<D>(infinity(sign));
        if (v.mag == 0) return from_bits<D>(sign);
        if (m == RoundMode::None) m = RoundMode::Rint;
        const int top = msb(v.mag) + v.exp;
        // q is the exponent of the destination's last significand bit at this magnitude.
        int q = (top > emin ? top : emin) - mb;
        const int shift = q - v.exp;
        uint64_t sig = shift <= 0 ? v.mag << -shift : round_shift(v.mag, shift, v.neg, m);
        if (sig >> F::P) {  // rounding carried into the next binade
            sig >>= 1;
            ++q;
        }
        if (!(sig >> mb)) return from_bits<D>(sign | sig);  // subnormal or zero
        const int e = q + mb;
        if (e > emax || (e == emax && sig > max_sig)) {
            const bool to_inf = m == RoundMode::Rint || m == RoundMode::Round ||
                                (m == RoundMode::Ceil && !v.neg) || (m == RoundMode::Floor && v.neg);
            return from_bits<D>(to_inf ? infinity(sign) : largest(sign));
        }
        return from_bits<D>(sign | uint64_t(e + bias) << mb | (sig & ((uint64_t(1) << mb) - 1)));
    }
};

template <class D, int64_t Lo, uint64_t Hi> struct EncodeInt {
    static D saturate(bool neg) { return neg ? D(Lo) : D(Hi); }

    __attribute__((noinline)) static D from(const Exact &v, RoundMode m) {
        if (v.kind == Exact::NaN) return D(0);
        if (v.kind == Exact::Inf) return saturate(v.neg);
        if (v.mag == 0) return D(0);
        if (m == RoundMode::None) m = RoundMode::Trunc;
        uint64_t mag;
        if (v.exp >= 0) {
            if (msb(v.mag) + v.exp >= 64) return saturate(v.neg);
            mag = v.mag << v.exp;
        } else {
            mag = round_shift(v.mag, -v.exp, v.neg, m);
        }
        // Largest magnitude representable on the value's side of zero.
        const uint64_t limit = v.neg ? uint64_t(0) - uint64_t(Lo) : Hi;
        if (mag > limit) return saturate(v.neg);
        return v.neg ? D(uint64_t(0) - mag) : D(mag);
    }
};

template <class D> struct Encode : EncodeFloat<D> {};
template <> struct Encode<int8_t> : EncodeInt<int8_t, INT8_MIN, INT8_MAX> {};
template <> struct Encode<int16_t> : EncodeInt<int16_t, INT16_MIN, INT16_MAX> {};
template <> struct Encode<int32_t> : EncodeInt<int32_t, INT32_MIN, INT32_MAX> {};
template <> struct Encode<int64_t> : EncodeInt<int64_t, INT64_MIN, INT64_MAX> {};
template <> struct Encode<uint8_t> : EncodeInt<uint8_t, 0, UINT8_MAX> {};
template <> struct Encode<uint16_t> : EncodeInt<uint16_t, 0, UINT16_MAX> {};
template <> struct Encode<uint32_t> : EncodeInt<uint32_t, 0, UINT32_MAX> {};
template <> struct Encode<uint64_t> : EncodeInt<uint64_t, 0, UINT64_MAX> {};
template <> struct Encode<int4> {
    static int4 from(const Exact &v, RoundMode m) {
        return int4{uint8_t(EncodeInt<int8_t, -8, 7>::from(v, m) & 0xf)};
    }
};
template <> struct Encode<uint4> {
    static uint4 from(const Exact &v, RoundMode m) { return uint4{EncodeInt<uint8_t, 0, 15>::from(v, m)}; }
};
/* Mantissa bits of HiFloat8 numbers in the binade [2^e, 2^(e+1)): 3 up to |e| = 3, 2 up
 * to 7, 1 up to 15; none below 2^-15, where the denormals are the powers of two down to
 * 2^-22. */
inline int hf8_mantissa_bits(int e) {
    if (e < -15) return 0;
    const int a = e < 0 ? -e : e;
    return a <= 3 ? 3 : a <= 7 ? 2 : 1;
}

/* x rounded once by `mode` onto the HF8 grid.  The natural mode (None) is Round, ties away
 * from zero: pto-isa's A5 TCVT converts to hifloat8 by ROUND_A whatever mode it is given.
 * NaN -> 0x80; zero, and what rounds to zero, -> 0x00 (HF8 has one zero); an infinite input
 * -> +-inf; overflow past 2^15 follows IEEE (Rint / Round -> +-inf, Trunc / Odd -> +-2^15,
 * Floor / Ceil -> inf on the side they round towards). */
template <> struct Encode<hf8> {
    __attribute__((noinline)) static hf8 from(const Exact &v, RoundMode m) {
        const uint8_t sign = v.neg ? 0x80 : 0;
        if (v.kind == Exact::NaN) return hf8{0x80};
        if (v.kind == Exact::Inf) return hf8{uint8_t(sign | 0x6f)};
        if (v.mag == 0) return hf8{0};
        if (m == RoundMode::None) m = RoundMode::Round;
        const int top = msb(v.mag) + v.exp;
        int q = (top > -22 ? top : -22) - hf8_mantissa_bits(top);
        const int shift = q - v.exp;
        uint64_t sig = shift <= 0 ? v.mag << -shift : round_shift(v.mag, shift, v.neg, m);
        if (sig == 0) return hf8{0};
        const int e = msb(sig) + q;  // the rounded value's binade (a carry moves it up one)
        if (e > 15 || (e == 15 && sig != (uint64_t(1) << msb(sig)))) {
            const bool to_inf = m == RoundMode::Rint || m == RoundMode::Round ||
                                (m == RoundMode::Ceil && !v.neg) || (m == RoundMode::Floor && v.neg);
            return hf8{uint8_t(sign | (to_inf ? 0x6f : 0x6e))};
        }
        if (e < -15) return hf8{uint8_t(sign | (e + 23))};
        const int mb = hf8_mantissa_bits(e), lead = msb(sig);
        const uint64_t frac = sig & ((uint64_t(1) << lead) - 1);
        const int mant = int(lead <= mb ? frac << (mb - lead) : frac >> (lead - mb));
        const int a = e < 0 ? -e : e, es = e < 0;
        int payload;
        if (a == 0) payload = 0x08;
        else if (a == 1) payload = 0x10 | es << 3;
        else if (a <= 3) payload = 0x20 | es << 4 | (a - 2) << 3;
        else if (a <= 7) payload = 0x40 | es << 4 | (a - 4) << 2;
        else payload = 0x60 | es << 4 | (a - 8) << 1;
        return hf8{uint8_t(sign | payload | mant)};
    }
};

/* |x| rounded once by `mode` onto the powers of two 2^-127 .. 2^127, as torch's
 * float8_e8m0fnu conversion does for Rint: the sign is dropped, zero and what rounds
 * below 2^-127 give 2^-127 (0x00, there is no zero), NaN and inf give NaN (0xFF), and
 * overflow past 2^127 gives NaN where IEEE would give inf (Rint, Round, Ceil), 2^127
 * otherwise.  Each binade holds one value, so Rint's ties (1.5 * 2^e) go up as Round's do. */
template <> struct Encode<fp8e8m0> {
    __attribute__((noinline)) static fp8e8m0 from(const Exact &v, RoundMode m) {
        if (v.kind != Exact::Finite) return fp8e8m0{0xff};
        if (v.mag == 0) return fp8e8m0{0};
        if (m == RoundMode::None) m = RoundMode::Rint;
        const int top = msb(v.mag) + v.exp;
        const int q = top > -127 ? top : -127, shift = q - v.exp;
        const uint64_t sig = shift <= 0 ? v.mag << -shift : round_shift(v.mag, shift, false, m);
        if (sig == 0) return fp8e8m0{0};
        const int e = msb(sig) + q;
        if (e > 127) {
            const bool to_nan = m == RoundMode::Rint || m == RoundMode::Round || m == RoundMode::Ceil;
            return fp8e8m0{uint8_t(to_nan ? 0xff : 0xfe)};
        }
        return fp8e8m0{uint8_t(e + 127)};
    }
};

template <> struct Encode<bool> {
    static bool from(const Exact &v, RoundMode) { return v.kind != Exact::Finite || v.mag != 0; }
};

/* The bits of `x` read as a `To` of the same size (C++20's std::bit_cast). */
template <class To, class From> inline To bit_as(From x) {
    static_assert(sizeof(To) == sizeof(From), "bit_as reads as many bytes as it is given");
    To to;
    memcpy(&to, &x, sizeof to);
    return to;
}

/* FP16 <-> float on the hot path: the same results as convert<> (RNE, overflow to inf
 * from 65520, subnormals, signed zeros, NaN -> the canonical positive NaN), by bit
 * manipulation instead of the generic decompose/encode: ~1 ns instead of ~12 ns an
 * element.  Checked equal to convert<> on all 2^16 halves and all 2^32 floats once, and
 * by tests/sim/test_sim_numerics.py on every half and ~3M floats around each rounding
 * boundary. */
inline float f16_widen(f16 h) {
    const uint32_t sign = uint32_t(h.bits & 0x8000u) << 16, em = h.bits & 0x7fffu;
    if (em >= 0x7c00u) return bit_as<float>(em == 0x7c00u ? (sign | 0x7f800000u) : 0x7fc00000u);
    if (em >= 0x0400u) return bit_as<float>(sign | ((em << 13) + 0x38000000u));
    const float m = float(em) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return bit_as<float>(bit_as<uint32_t>(m) | sign);
}

inline f16 f16_round(float f) {
    uint32_t u = bit_as<uint32_t>(f);
    const uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint32_t o;
    if (u >= 0x47800000u) {  // >= 65536, inf or NaN
        if (u > 0x7f800000u) return f16{0x7e00};
        o = 0x7c00u;
    } else if (u < 0x38800000u) {  // below 2^-14: subnormal or zero; RNE by a float add
        o = bit_as<uint32_t>(bit_as<float>(u) + 0.5f) - 0x3f000000u;
    } else {
        const uint32_t odd = (u >> 13) & 1u;
        o = (u + 0xc8000fffu + odd) >> 13;  // rebias 127 -> 15, round half to even
    }
    return f16{uint16_t(o | (sign >> 16))};
}

/* BF16 <-> float on the hot path, equal to convert<> like the FP16 pair above: widening
 * is a shift (NaN -> the canonical float NaN); rounding is RNE on the low 16 bits, which
 * carries into the exponent and on to inf exactly as IEEE overflow does. */
inline float bf16_widen(bf16 h) {
    return bit_as<float>((h.bits & 0x7fffu) > 0x7f80u ? 0x7fc00000u : uint32_t(h.bits) << 16);
}

inline bf16 bf16_round(float f) {
    const uint32_t u = bit_as<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{0x7fc0};
    return bf16{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

/* The same four conversions over arrays, four elements at a time in GCC's generic
 * vectors (SSE2 on x86-64, NEON on aarch64): the scalar functions above, branch-free,
 * lane by lane (tests/sim checks them against convert<> on every half and bfloat16 and
 * on every rounding boundary of every float binade). */
typedef uint32_t U32x4 __attribute__((vector_size(16)));
typedef int32_t I32x4 __attribute__((vector_size(16)));
typedef float F32x4 __attribute__((vector_size(16)));
typedef uint16_t U16x4 __attribute__((vector_size(8)));

#if defined(__x86_64__) && defined(__GNUC__)
/* Where the CPU has F16C (every x86-64 since 2013), eight at a time by its conversion
 * instructions: vcvtph2ps is exact and vcvtps2ph with immediate 0 rounds to nearest even,
 * overflowing to inf from 65520 and producing subnormals as IEEE says; both keep NaN
 * payloads, so NaN lanes are replaced by the canonical NaN afterwards.  GCC builtins
 * rather than <immintrin.h>, which would add to every kernel's compile time. */
typedef short I16x8 __attribute__((vector_size(16)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef float F32x8 __attribute__((vector_size(32)));

__attribute__((target("avx2,f16c"))) inline int64_t f16_widen_f16c(float *dst, const f16 *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        I16x8 h;
        memcpy(&h, src + i, sizeof h);
        const F32x8 f = __builtin_ia32_vcvtph2ps256(h);
        I32x8 bits;
        memcpy(&bits, &f, sizeof bits);
        bits = f != f ? I32x8{} + 0x7fc00000 : bits;
        memcpy(dst + i, &bits, sizeof bits);
    }
    return i;
}

__attribute__((target("avx2,f16c"))) inline int64_t f16_round_f16c(f16 *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        F32x8 f;
        memcpy(&f, src + i, sizeof f);
        I16x8 h = __builtin_ia32_vcvtps2ph256(f, 0);
        const I16x8 nan = __builtin_convertvector(f != f, I16x8);
        h = nan ? I16x8{} + 0x7e00 : h;
        memcpy(dst + i, &h, sizeof h);
    }
    return i;
}

inline bool cpu_has_f16c() {
    static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"));
    return yes;
}
#endif

/* dst[k] = one(src[k]) for k in [i, n): while SIMD is on, four elements at a time by
 * four(V), V the four source elements' bits as a vector, whose result holds the four
 * destination elements' bits; the rest (all, when SIMD is off) one at a time. */
template <class V, class D, class S, class Four, class One>
inline void convert_n(D *dst, const S *src, int64_t i, int64_t n, Four four, One one) {
    const int64_t vn = simd_enabled() ? n : 0;
    for (; i + 4 <= vn; i += 4) {
        V v;
        memcpy(&v, src + i, sizeof v);
        const auto out = four(v);
        memcpy(dst + i, &out, sizeof out);
    }
    for (; i < n; ++i) dst[i] = one(src[i]);
}

// f16c = false: the portable loop alone (tests check both).
inline void f16_widen_n(float *dst, const f16 *src, int64_t n, bool f16c = true) {
    int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (f16c && cpu_has_f16c()) i = f16_widen_f16c(dst, src, simd_enabled() ? n : 0);
#endif
    (void)f16c;
    convert_n<U16x4>(dst, src, i, n, [](U16x4 h) {
        const I32x4 w = __builtin_convertvector(h, I32x4);
        const I32x4 sign = (w & 0x8000) << 16, em = w & 0x7fff;
        const F32x4 sub_f = __builtin_convertvector(em, F32x4) * 5.9604644775390625e-8f;  // exact
        I32x4 sub;
        memcpy(&sub, &sub_f, sizeof sub);
        const I32x4 finite = (em >= 0x0400 ? (em << 13) + 0x38000000 : sub) | sign;
        const I32x4 special = em == 0x7c00 ? (sign | 0x7f800000) : I32x4{} + 0x7fc00000;
        return em >= 0x7c00 ? special : finite;
    }, [](f16 x) { return f16_widen(x); });
}

inline void f16_round_n(f16 *dst, const float *src, int64_t n, bool f16c = true) {
    int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (f16c && cpu_has_f16c()) i = f16_round_f16c(dst, src, simd_enabled() ? n : 0);
#endif
    (void)f16c;
    convert_n<I32x4>(dst, src, i, n, [](I32x4 u) {
        const I32x4 sign = (u >> 16) & 0x8000;
        u &= 0x7fffffff;
        F32x4 g;
        memcpy(&g, &u, sizeof g);
        g += 0.5f;  // below 2^-14: RNE to a multiple of 2^-24 by a float add
        I32x4 small;
        memcpy(&small, &g, sizeof small);
        small -= 0x3f000000;
        const U32x4 uu = (U32x4)u;
        const I32x4 normal = (I32x4)((uu + 0xc8000fffu + ((uu >> 13) & 1u)) >> 13);
        const I32x4 big = u > 0x7f800000 ? I32x4{} + 0x7e00 : (0x7c00 | sign);
        const I32x4 out = u >= 0x47800000 ? big : ((u < 0x38800000 ? small : normal) | sign);
        return __builtin_convertvector(out, U16x4);
    }, [](float x) { return f16_round(x); });
}

inline void bf16_widen_n(float *dst, const bf16 *src, int64_t n) {
    convert_n<U16x4>(dst, src, 0, n, [](U16x4 h) {
        const I32x4 w = __builtin_convertvector(h, I32x4);
        return (w & 0x7fff) > 0x7f80 ? I32x4{} + 0x7fc00000 : w << 16;
    }, [](bf16 x) { return bf16_widen(x); });
}

inline void bf16_round_n(bf16 *dst, const float *src, int64_t n) {
    convert_n<U32x4>(dst, src, 0, n, [](U32x4 u) {
        const I32x4 nan = (I32x4)(u & 0x7fffffffu) > 0x7f800000;
        const U32x4 out = nan ? U32x4{} + 0x7fc0u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        return __builtin_convertvector(out, U16x4);
    }, [](float x) { return bf16_round(x); });
}
}  // namespace detail

/* One conversion instruction: x rounded once into D by mode (see the header comment). */
template <class D, class S> inline D convert(S x, RoundMode m = RoundMode::None) {
    return detail::Encode<D>::from(detail::decompose(x), m);
}

/* Widening to float is exact for every 16- and 8-bit float format. */
template <class T> inline float to_float(T x) { return convert<float>(x, RoundMode::Rint); }

template <class T> inline T from_float(float x, RoundMode m = RoundMode::Rint) { return convert<T>(x, m); }

}  // namespace pto

#endif /* PTO_NUMERICS_HPP */
