/*
 * The simulator's model of the PTO tile ISA: tiles (views on a core's on-chip
 * buffer) and the tile instructions generated kernels call.
 *
 * Every instruction acts on the valid region of its destination and leaves the
 * rest of the tile as it was; a destination may alias a source tile.
 *
 * Numerics:
 *  - float tiles compute in float (expf, logf, sqrtf; rsqrt = 1/sqrtf, recip = 1/x).
 *  - f16 / bf16 (and fp8) tiles widen to float, compute, and round back with Rint
 *    after every instruction: for + - * / sqrt that is the correctly rounded
 *    result, since float carries more than 2p + 2 significand bits.
 *  - The scalar of a scalar form is first rounded (Rint) to the element type,
 *    as the hardware holds it in a register of that type.
 *  - Integer tiles wrap (two's complement) on add/sub/mul/neg/abs; div truncates
 *    toward zero and x / 0 gives 0.  Math functions (exp, log, ...) exist for
 *    float-like tiles only.
 *  - max/min propagate NaN, as torch.maximum/minimum do.
 * Math goes through GCC builtins (libm's expf, logf, sqrtf) rather than <math.h>,
 * which alone would double a kernel's compile time.
 */
#ifndef PTO_ISA_HPP
#define PTO_ISA_HPP

#include <stdint.h>

#include "abi.h"
#include "numerics.hpp"

namespace pto {

/* Row-major rows x cols elements (row stride = cols); (vrows, vcols) is the valid region. */
template <class T> struct Tile {
    T *data;
    int32_t rows, cols;
    int32_t vrows, vcols;
};

template <class T>
inline Tile<T> make_tile(uint8_t *base, int64_t byte_addr, int32_t rows, int32_t cols, int32_t vrows,
                         int32_t vcols) {
    Tile<T> t = {reinterpret_cast<T *>(base + byte_addr), rows, cols, vrows, vcols};
    return t;
}

/* Pad values: 0; +inf; -inf.  Converting +-inf saturates where there is no
 * infinity: +-448 for FP8E4M3FN, the integer range's ends; bool max is true, min false. */
template <class T> inline T pad_zero() { return convert<T>(int32_t(0)); }
template <class T> inline T pad_max() { return convert<T>(__builtin_huge_val()); }
template <class T> inline T pad_min() { return convert<T>(-__builtin_huge_val()); }
template <> inline bool pad_min<bool>() { return false; }

namespace detail {

// How an element type computes: float-like types widen to float and round back.
template <class T> struct Num { static constexpr bool is_float = false; };
template <> struct Num<float> {
    static constexpr bool is_float = true;
    static float load(float x) { return x; }
    static float store(float x) { return x; }
};
// Out of line: inlining the conversions into every instruction made kernels compile ~2x slower.
template <class T> struct NarrowFloat {
    static constexpr bool is_float = true;
    __attribute__((noinline)) static float load(T x) { return to_float(x); }
    __attribute__((noinline)) static T store(float x) { return from_float<T>(x, RoundMode::Rint); }
};
template <> struct Num<f16> : NarrowFloat<f16> {};
template <> struct Num<bf16> : NarrowFloat<bf16> {};
template <> struct Num<fp8e4m3fn> : NarrowFloat<fp8e4m3fn> {};
template <> struct Num<fp8e5m2> : NarrowFloat<fp8e5m2> {};

// Integer arithmetic goes through uint64_t so overflow wraps instead of being UB.
template <class I> inline I wrap_neg(I a) { return I(uint64_t(0) - uint64_t(a)); }

struct OpAdd {
    static float f(float a, float b) { return a + b; }
    template <class I> static I i(I a, I b) { return I(uint64_t(a) + uint64_t(b)); }
};
struct OpSub {
    static float f(float a, float b) { return a - b; }
    template <class I> static I i(I a, I b) { return I(uint64_t(a) - uint64_t(b)); }
};
struct OpMul {
    static float f(float a, float b) { return a * b; }
    template <class I> static I i(I a, I b) { return I(uint64_t(a) * uint64_t(b)); }
};
struct OpDiv {
    static float f(float a, float b) { return a / b; }
    template <class I> static I i(I a, I b) {
        if (b == 0) return I(0);
        if (I(-1) < I(0) && b == I(-1)) return wrap_neg(a);  // MIN / -1 would trap
        return I(a / b);
    }
};
struct OpMax {
    static float f(float a, float b) { return a != a ? a : b != b ? b : a > b ? a : b; }
    template <class I> static I i(I a, I b) { return a > b ? a : b; }
};
struct OpMin {
    static float f(float a, float b) { return a != a ? a : b != b ? b : a < b ? a : b; }
    template <class I> static I i(I a, I b) { return a < b ? a : b; }
};
struct OpExp { static float f(float a) { return __builtin_expf(a); } };
struct OpLog { static float f(float a) { return __builtin_logf(a); } };
struct OpSqrt { static float f(float a) { return __builtin_sqrtf(a); } };
struct OpRsqrt { static float f(float a) { return 1.0f / __builtin_sqrtf(a); } };
struct OpRecip { static float f(float a) { return 1.0f / a; } };
struct OpNeg {
    static float f(float a) { return -a; }
    template <class I> static I i(I a) { return wrap_neg(a); }
};
struct OpAbs {
    static float f(float a) { return __builtin_fabsf(a); }
    template <class I> static I i(I a) { return a < I(0) ? wrap_neg(a) : a; }
};
struct OpRelu {
    static float f(float a) { return (a > 0.0f || a != a) ? a : 0.0f; }
    template <class I> static I i(I a) { return a > I(0) ? a : I(0); }
};

template <class Op, class T> inline T elem(T a, T b) {
    if constexpr (Num<T>::is_float) {
        return Num<T>::store(Op::f(Num<T>::load(a), Num<T>::load(b)));
    } else {
        return Op::i(a, b);
    }
}

template <class Op, class T> inline T elem(T a) {
    if constexpr (Num<T>::is_float) {
        return Num<T>::store(Op::f(Num<T>::load(a)));
    } else {
        return Op::i(a);
    }
}

template <class Op, class T> inline T elem_float_only(T a) {
    static_assert(Num<T>::is_float, "this instruction exists for float tiles only");
    return Num<T>::store(Op::f(Num<T>::load(a)));
}

// Applies f(row, col) -> T to every valid element of dst; reading a source at the
// same position before writing it keeps in-place use correct.
template <class T, class F> inline void for_valid(Tile<T> dst, F f) {
    for (int32_t r = 0; r < dst.vrows; ++r) {
        T *row = dst.data + int64_t(r) * dst.cols;
        for (int32_t c = 0; c < dst.vcols; ++c) row[c] = f(r, c);
    }
}

template <class T> inline T at(Tile<T> t, int32_t r, int32_t c) { return t.data[int64_t(r) * t.cols + c]; }

template <class Op, class T> inline void binary(Tile<T> dst, Tile<T> a, Tile<T> b) {
    for_valid(dst, [&](int32_t r, int32_t c) { return elem<Op>(at(a, r, c), at(b, r, c)); });
}

template <class Op, class T> inline void unary(Tile<T> dst, Tile<T> a) {
    for_valid(dst, [&](int32_t r, int32_t c) { return elem<Op>(at(a, r, c)); });
}

template <class Op, class T> inline void unary_float(Tile<T> dst, Tile<T> a) {
    for_valid(dst, [&](int32_t r, int32_t c) { return elem_float_only<Op>(at(a, r, c)); });
}

template <class Op, class T> inline void scalar(Tile<T> dst, Tile<T> a, double s, bool reversed) {
    const T st = convert<T>(s, RoundMode::Rint);
    for_valid(dst, [&](int32_t r, int32_t c) {
        return reversed ? elem<Op>(st, at(a, r, c)) : elem<Op>(at(a, r, c), st);
    });
}

// Row and column strides of a global tensor viewed as 2-D (rank 1 is [1, n]).
inline int64_t row_stride(const PtoTensor &t) { return t.ndim >= 2 ? t.stride[t.ndim - 2] : 0; }
inline int64_t col_stride(const PtoTensor &t) { return t.ndim >= 1 ? t.stride[t.ndim - 1] : 1; }

}  // namespace detail

/* Copies the window at (r0, c0) of a global tensor into dst's valid region and
 * fills the rest of the tile with pad.  The tensor is viewed through its last two
 * dims (its outer dims must be 1); a rank-1 tensor is [1, n]. */
template <class T> inline void tload(Tile<T> dst, const PtoTensor &src, int64_t r0, int64_t c0, T pad) {
    const int64_t rs = detail::row_stride(src), cs = detail::col_stride(src);
    const T *base = static_cast<const T *>(src.data) + r0 * rs + c0 * cs;
    for (int32_t r = 0; r < dst.rows; ++r) {
        T *row = dst.data + int64_t(r) * dst.cols;
        for (int32_t c = 0; c < dst.cols; ++c)
            row[c] = (r < dst.vrows && c < dst.vcols) ? base[r * rs + c * cs] : pad;
    }
}

/* Writes src's valid region to the window at (r0, c0) of a global tensor (viewed as in tload). */
template <class T> inline void tstore(const PtoTensor &dst, int64_t r0, int64_t c0, Tile<T> src) {
    const int64_t rs = detail::row_stride(dst), cs = detail::col_stride(dst);
    T *base = static_cast<T *>(dst.data) + r0 * rs + c0 * cs;
    for (int32_t r = 0; r < src.vrows; ++r)
        for (int32_t c = 0; c < src.vcols; ++c) base[r * rs + c * cs] = detail::at(src, r, c);
}

template <class T> inline void tadd(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpAdd>(d, a, b); }
template <class T> inline void tsub(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpSub>(d, a, b); }
template <class T> inline void tmul(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpMul>(d, a, b); }
template <class T> inline void tdiv(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpDiv>(d, a, b); }
template <class T> inline void tmax(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpMax>(d, a, b); }
template <class T> inline void tmin(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpMin>(d, a, b); }

template <class T> inline void texp(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpExp>(d, a); }
template <class T> inline void tlog(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpLog>(d, a); }
template <class T> inline void tsqrt(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpSqrt>(d, a); }
template <class T> inline void trsqrt(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpRsqrt>(d, a); }
template <class T> inline void trecip(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpRecip>(d, a); }
template <class T> inline void tneg(Tile<T> d, Tile<T> a) { detail::unary<detail::OpNeg>(d, a); }
template <class T> inline void tabs(Tile<T> d, Tile<T> a) { detail::unary<detail::OpAbs>(d, a); }
template <class T> inline void trelu(Tile<T> d, Tile<T> a) { detail::unary<detail::OpRelu>(d, a); }

template <class T> inline void tadds(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpAdd>(d, a, s, false); }
template <class T> inline void tsubs(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpSub>(d, a, s, false); }
template <class T> inline void tmuls(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpMul>(d, a, s, false); }
template <class T> inline void tdivs(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpDiv>(d, a, s, false); }
template <class T> inline void tmaxs(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpMax>(d, a, s, false); }
template <class T> inline void tmins(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpMin>(d, a, s, false); }
/* Reversed scalar forms: s - a and s / a. */
template <class T> inline void trsubs(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpSub>(d, a, s, true); }
template <class T> inline void trdivs(Tile<T> d, Tile<T> a, double s) { detail::scalar<detail::OpDiv>(d, a, s, true); }

/* Element-wise convert<D, S> over dst's valid region: one hardware hop. */
template <class D, class S> inline void tcvt(Tile<D> dst, Tile<S> src, RoundMode m) {
    detail::for_valid(dst, [&](int32_t r, int32_t c) { return convert<D>(detail::at(src, r, c), m); });
}

template <class T> inline void tfill(Tile<T> dst, T value) {
    detail::for_valid(dst, [&](int32_t, int32_t) { return value; });
}

}  // namespace pto

#endif /* PTO_ISA_HPP */
