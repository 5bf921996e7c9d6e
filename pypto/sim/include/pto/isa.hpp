/*
 * The simulator's model of the PTO tile ISA: tiles (views on a core's on-chip
 * buffer) and the tile instructions generated kernels call.
 *
 * Tiles and valid regions:
 *  - A tile is rows x cols elements, row-major; (vrows, vcols) is its valid region,
 *    anchored at the origin.  The valid region is metadata: tload reads only it from
 *    global memory and fills the rest with the pad value, tstore writes only it,
 *    tfillpad overwrites everything outside it.  Every other instruction computes the
 *    whole tile, padding included, as the vector unit works on whole tiles: padding
 *    flows through arithmetic and takes part in reductions (pypto's numerics contract;
 *    see docs/numerics.md).  Generated code sets the metadata from the IR tile type.
 *  - A destination may alias a source tile of the same shape; each element is read
 *    before it is written (ttrans of a square tile in place swaps).
 *
 * Numerics:
 *  - float tiles compute in float (sqrtf; rsqrt = 1/sqrtf, recip = 1/x); exp and log are
 *    fmath.hpp's, the float64 function rounded once to float, never the host's libm.
 *  - f16 / bf16 (and fp8) tiles widen to float, compute, and round back with Rint
 *    after every instruction: for + - * / sqrt that is the correctly rounded
 *    result, since float carries more than 2p + 2 significand bits.
 *  - The scalar of a scalar form is first rounded (Rint) to the element type,
 *    as the hardware holds it in a register of that type.
 *  - Integer tiles wrap (two's complement) on add/sub/mul/neg/abs; div truncates
 *    toward zero and x / 0 gives 0.  Math functions (exp, log, ...) exist for
 *    float-like tiles only.
 *  - max/min propagate NaN, as torch.maximum/minimum do; comparisons with NaN are
 *    false except NE.
 *  - Reductions (reduce.hpp) and matmul (matmul.hpp) document their order there.
 * Math goes through GCC builtins (sqrtf, fabsf) rather than <math.h>, which alone would
 * double a kernel's compile time.
 * SIMD: the element-wise loops, the FP16/BF16 array conversions and the matmul take vector
 * paths (portable GCC vectors; AVX2, F16C, AVX-512F where the host has them), each the
 * same IEEE operations as the scalar definition.  PYPTO_SIM_SIMD=0 in the environment of
 * the process that runs a kernel turns them all off (simd.hpp), to show the bits agree.
 */
#ifndef PTO_ISA_HPP
#define PTO_ISA_HPP

#include <stdint.h>
#include <string.h>

#include "abi.h"
#include "bounds.hpp"  // PTO_CHECK_WINDOW: bounds checks of sim debug builds
#include "lane.hpp"    // lane_subblock(): pl.tensor.get_subblock_idx()
#include "fmath.hpp"
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

/* A tile of a declared allocation of `slots` slots of `slot_bytes` each, at `byte_addr`,
 * placed in its slot where it is defined (pl.MemRef(name, slots=n)[slot]). */
template <class T>
inline void seat(Tile<T> &t, uint8_t *base, int64_t byte_addr, int64_t slot, int64_t slots,
                 int64_t slot_bytes) {
    if (!detail::slot_inside(slot, slots)) slot = 0;
    t.data = reinterpret_cast<T *>(base + byte_addr + slot * slot_bytes);
}

/* Comparison of pl.cmp (cmp_type codes 0..5, in this order). */
enum class CmpMode : int { EQ = 0, NE = 1, LT = 2, LE = 3, GT = 4, GE = 5 };

/* Pad values: 0; +inf; -inf.  Converting +-inf saturates where there is no
 * infinity: +-448 for FP8E4M3FN, the integer range's ends; bool max is true, min false. */
template <class T> inline T pad_zero() { return convert<T>(int32_t(0)); }
template <class T> inline T pad_max() { return convert<T>(__builtin_huge_val()); }
template <class T> inline T pad_min() { return convert<T>(-__builtin_huge_val()); }
template <> inline bool pad_min<bool>() { return false; }
// FP8E8M0 has no infinity (converting one gives NaN) and no sign: its pads are its ends.
template <> inline fp8e8m0 pad_max<fp8e8m0>() { return fp8e8m0{0xfe}; }
template <> inline fp8e8m0 pad_min<fp8e8m0>() { return fp8e8m0{0x00}; }

namespace detail {

// How an element type computes: float-like types widen to float and round back.
// load_n / store_n do the same to arrays (equal to load / store element by element).
template <class T> struct Num { static constexpr bool is_float = false; };
template <> struct Num<float> {
    static constexpr bool is_float = true;
    static float load(float x) { return x; }
    static float store(float x) { return x; }
    static void load_n(float *dst, const float *src, int64_t n) { __builtin_memmove(dst, src, sizeof(float) * n); }
    static void store_n(float *dst, const float *src, int64_t n) { __builtin_memmove(dst, src, sizeof(float) * n); }
};
// Out of line: inlining the conversions into every instruction made kernels compile ~2x slower.
template <class T> struct NarrowFloat {
    static constexpr bool is_float = true;
    __attribute__((noinline)) static float load(T x) { return to_float(x); }
    __attribute__((noinline)) static T store(float x) { return from_float<T>(x, RoundMode::Rint); }
    static void load_n(float *dst, const T *src, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dst[i] = load(src[i]);
    }
    static void store_n(T *dst, const float *src, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dst[i] = store(src[i]);
    }
};
// FP16 and BF16 have exact inline paths (numerics.hpp: f16_widen/f16_round, ...).
template <> struct Num<f16> {
    static constexpr bool is_float = true;
    static float load(f16 x) { return f16_widen(x); }
    static f16 store(float x) { return f16_round(x); }
    __attribute__((noinline)) static void load_n(float *dst, const f16 *src, int64_t n) { f16_widen_n(dst, src, n); }
    __attribute__((noinline)) static void store_n(f16 *dst, const float *src, int64_t n) { f16_round_n(dst, src, n); }
};
template <> struct Num<bf16> {
    static constexpr bool is_float = true;
    static float load(bf16 x) { return bf16_widen(x); }
    static bf16 store(float x) { return bf16_round(x); }
    __attribute__((noinline)) static void load_n(float *dst, const bf16 *src, int64_t n) { bf16_widen_n(dst, src, n); }
    __attribute__((noinline)) static void store_n(bf16 *dst, const float *src, int64_t n) { bf16_round_n(dst, src, n); }
};
template <> struct Num<fp8e4m3fn> : NarrowFloat<fp8e4m3fn> {};
template <> struct Num<fp8e5m2> : NarrowFloat<fp8e5m2> {};
template <> struct Num<hf8> : NarrowFloat<hf8> {};
template <> struct Num<fp8e8m0> : NarrowFloat<fp8e8m0> {};

// A narrow float type (f16, bf16, fp8): computes in float, stored narrower.
template <class T> constexpr bool kNarrow = Num<T>::is_float && !__is_same(T, float);

// The 4-bit types: a tile or tensor of them holds two elements a byte, element 2i in the
// low nibble of byte i.  Their tiles are rows x cols elements like any tile (cols even),
// so data + k is byte k; they are loaded, stored, copied and converted only.
template <class T> struct Packed { static constexpr bool value = false; };
template <> struct Packed<fp4e2m1> { static constexpr bool value = true; };
template <> struct Packed<hf4> { static constexpr bool value = true; };
template <> struct Packed<int4> { static constexpr bool value = true; };
template <> struct Packed<uint4> { static constexpr bool value = true; };
template <class T> constexpr bool kPacked = Packed<T>::value;

// Element i of the packed elements starting at byte p, and its update.
template <class T> inline T nibble(const void *p, int64_t i) {
    const uint8_t b = static_cast<const uint8_t *>(p)[i >> 1];
    return T{uint8_t((i & 1) ? b >> 4 : b & 0xf)};
}
template <class T> inline void set_nibble(void *p, int64_t i, T v) {
    uint8_t &b = static_cast<uint8_t *>(p)[i >> 1];
    b = (i & 1) ? uint8_t((b & 0x0f) | (v.bits << 4)) : uint8_t((b & 0xf0) | (v.bits & 0xf));
}
// Element i of a tile's (or a converted array's) data, packed or not.
template <class T> inline T element(const T *data, int64_t i) {
    if constexpr (kPacked<T>) return nibble<T>(data, i);
    else return data[i];
}
template <class T> inline void set_element(T *data, int64_t i, T v) {
    if constexpr (kPacked<T>) set_nibble(data, i, v);
    else data[i] = v;
}

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
// exp and log also have array forms, fmath's vectorised loops: the same bits as f.
struct OpExp {
    static float f(float a) { return fmath::expf(a); }
    static void n(float *d, const float *a, int64_t n) { fmath::exp_n(d, a, n); }
};
struct OpLog {
    static float f(float a) { return fmath::logf(a); }
    static void n(float *d, const float *a, int64_t n) { fmath::log_n(d, a, n); }
};
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
// Bitwise operators exist for integer tiles only (no float member).
struct OpAnd { template <class I> static I i(I a, I b) { return I(a & b); } };
struct OpOr { template <class I> static I i(I a, I b) { return I(a | b); } };
struct OpXor { template <class I> static I i(I a, I b) { return I(a ^ b); } };
struct OpNot { template <class I> static I i(I a) { return I(~a); } };
struct OpShl {
    template <class I> static I i(I a, I n) {
        return (n < I(0) || int64_t(n) >= int64_t(8 * sizeof(I))) ? I(0) : I(uint64_t(a) << int(n));
    }
};
struct OpShr {
    template <class I> static I i(I a, I n) {
        if (n < I(0) || int64_t(n) >= int64_t(8 * sizeof(I))) return a < I(0) ? I(-1) : I(0);
        return I(a >> int(n));
    }
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

// Applies f(row, col) -> T to every element of dst (padding included); reading a
// source at the same position before writing it keeps in-place use correct.
template <class T, class F> inline void for_each(Tile<T> dst, F f) {
    for (int32_t r = 0; r < dst.rows; ++r) {
        T *row = dst.data + int64_t(r) * dst.cols;
        for (int32_t c = 0; c < dst.cols; ++c) row[c] = f(r, c);
    }
}

template <class T> inline T at(Tile<T> t, int32_t r, int32_t c) { return t.data[int64_t(r) * t.cols + c]; }
template <class T> inline T &ref(Tile<T> t, int32_t r, int32_t c) { return t.data[int64_t(r) * t.cols + c]; }

// Which instructions' float form is straight-line arithmetic, which GCC turns into
// vector instructions (the rest call libm or branch on NaN, and are left to scalar code).
template <class Op> struct Wide { static constexpr bool value = false; };
template <> struct Wide<OpAdd> { static constexpr bool value = true; };
template <> struct Wide<OpSub> { static constexpr bool value = true; };
template <> struct Wide<OpMul> { static constexpr bool value = true; };
template <> struct Wide<OpDiv> { static constexpr bool value = true; };
template <> struct Wide<OpRecip> { static constexpr bool value = true; };
template <> struct Wide<OpNeg> { static constexpr bool value = true; };
template <> struct Wide<OpAbs> { static constexpr bool value = true; };
template <> struct Wide<OpRelu> { static constexpr bool value = true; };
// An element-wise loop over T takes the wide path for Op (float-like T only).
template <class Op, class T> constexpr bool kWide = Wide<Op>::value && Num<T>::is_float;
// Which float forms come as array functions Op::n of their own (fmath.hpp's).
template <class Op> struct ArrayForm { static constexpr bool value = false; };
template <> struct ArrayForm<OpExp> { static constexpr bool value = true; };
template <> struct ArrayForm<OpLog> { static constexpr bool value = true; };

// The element-wise loops below work in chunks: each chunk of the sources is read before
// dst is written, so a dst that is one of its sources (the only aliasing allowed) stays
// correct, and GCC's -O2 (which vectorises only fixed trip counts) turns a chunk into
// vector instructions: the same IEEE operations, the same bits.  A wide loop holds its
// chunks (32 bytes) in GCC's generic vector registers, which SLP-vectorises straight-line
// arithmetic; the others keep arrays of 8, whose loops the loop vectoriser if-converts
// (NaN-propagating max/min) or leaves to scalar libm calls.
constexpr int64_t kChunk = 8;
template <class T> struct VectorOf { typedef T type __attribute__((vector_size(32))); };

// dst[i] = f(a[i], b[i]) over n contiguous elements.
template <bool W, class T, class F>
inline __attribute__((always_inline)) void zip_chunks(T *dst, const T *a, const T *b, int64_t n, F f) {
    if constexpr (W) {
        typedef typename VectorOf<T>::type V;
        constexpr int64_t K = sizeof(V) / sizeof(T);
        const int64_t whole = n - n % K;
        for (int64_t i = 0; i < whole; i += K) {
            V x, y, z;
            __builtin_memcpy(&x, a + i, sizeof x);
            __builtin_memcpy(&y, b + i, sizeof y);
#pragma GCC unroll 32
            for (int k = 0; k < int(K); ++k) z[k] = f(x[k], y[k]);
            __builtin_memcpy(dst + i, &z, sizeof z);
        }
        for (int64_t i = whole; i < n; ++i) dst[i] = f(a[i], b[i]);
    } else {
        const int64_t whole = n - n % kChunk;
        for (int64_t i = 0; i < whole; i += kChunk) {
            T x[kChunk], y[kChunk];
            for (int64_t k = 0; k < kChunk; ++k) { x[k] = a[i + k]; y[k] = b[i + k]; }
            for (int64_t k = 0; k < kChunk; ++k) dst[i + k] = f(x[k], y[k]);
        }
        for (int64_t i = whole; i < n; ++i) dst[i] = f(a[i], b[i]);
    }
}

// dst[i] = f(a[i]) over n contiguous elements.
template <bool W, class T, class F>
inline __attribute__((always_inline)) void map_chunks(T *dst, const T *a, int64_t n, F f) {
    if constexpr (W) {
        typedef typename VectorOf<T>::type V;
        constexpr int64_t K = sizeof(V) / sizeof(T);
        const int64_t whole = n - n % K;
        for (int64_t i = 0; i < whole; i += K) {
            V x, z;
            __builtin_memcpy(&x, a + i, sizeof x);
#pragma GCC unroll 32
            for (int k = 0; k < int(K); ++k) z[k] = f(x[k]);
            __builtin_memcpy(dst + i, &z, sizeof z);
        }
        for (int64_t i = whole; i < n; ++i) dst[i] = f(a[i]);
    } else {
        const int64_t whole = n - n % kChunk;
        for (int64_t i = 0; i < whole; i += kChunk) {
            T x[kChunk];
            for (int64_t k = 0; k < kChunk; ++k) x[k] = a[i + k];
            for (int64_t k = 0; k < kChunk; ++k) dst[i + k] = f(x[k]);
        }
        for (int64_t i = whole; i < n; ++i) dst[i] = f(a[i]);
    }
}

// Wide float loops (FP32 tiles, and narrow floats, which compute in float) are also built
// for AVX2, taken where the running CPU has it (x86-64): a chunk of 8 floats is one
// 256-bit instruction instead of two 128-bit ones, ~3x faster on cache-resident tiles.
// AVX2 brings no FMA, and lanes do the same IEEE operations at any width: the bits do
// not change, and the artifact is the same file on every host.  Other loops keep one
// copy, which keeps kernels' compile time down.
#if defined(__x86_64__)
template <class T, class F>
__attribute__((noinline, target("avx2"))) void zip_chunks_avx2(T *dst, const T *a, const T *b, int64_t n, F f) {
    zip_chunks<true>(dst, a, b, n, f);
}
template <class T, class F>
__attribute__((noinline, target("avx2"))) void map_chunks_avx2(T *dst, const T *a, int64_t n, F f) {
    map_chunks<true>(dst, a, n, f);
}
#endif

template <bool W, class T, class F> inline void zip_n(T *dst, const T *a, const T *b, int64_t n, F f) {
    if (!simd_enabled()) {  // element by element: dst[i] may be a[i] or b[i]
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], b[i]);
        return;
    }
#if defined(__x86_64__)
    if constexpr (W && __is_same(T, float))
        if (__builtin_cpu_supports("avx2")) return zip_chunks_avx2(dst, a, b, n, f);
#endif
    zip_chunks<W>(dst, a, b, n, f);
}

template <bool W, class T, class F> inline void map_n(T *dst, const T *a, int64_t n, F f) {
    if (!simd_enabled()) {
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i]);
        return;
    }
#if defined(__x86_64__)
    if constexpr (W && __is_same(T, float))
        if (__builtin_cpu_supports("avx2")) return map_chunks_avx2(dst, a, n, f);
#endif
    map_chunks<W>(dst, a, n, f);
}

// Narrow floats element-wise, in blocks: widen the block's sources to float, run the
// float loop, round the block back.  Each element sees store(f(load(a), load(b))), as in
// elem<>, and a block's sources are read before its dst is written.
constexpr int64_t kBlock = 256;

// g(x, y, len) computes a block in place in x (y: the second source's block).
template <class T, class G> inline void zip_blocks(T *dst, const T *a, const T *b, int64_t n, G g) {
    float x[kBlock], y[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
        const int64_t len = n - i < kBlock ? n - i : kBlock;
        Num<T>::load_n(x, a + i, len);
        Num<T>::load_n(y, b + i, len);
        g(x, y, len);
        Num<T>::store_n(dst + i, x, len);
    }
}

template <class T, class G> inline void map_blocks(T *dst, const T *a, int64_t n, G g) {
    float x[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
        const int64_t len = n - i < kBlock ? n - i : kBlock;
        Num<T>::load_n(x, a + i, len);
        g(x, len);
        Num<T>::store_n(dst + i, x, len);
    }
}

template <bool W, class T, class F> inline void zip_narrow(T *dst, const T *a, const T *b, int64_t n, F f) {
    zip_blocks(dst, a, b, n, [&f](float *x, const float *y, int64_t len) { zip_n<W>(x, x, y, len, f); });
}

template <bool W, class T, class F> inline void map_narrow(T *dst, const T *a, int64_t n, F f) {
    map_blocks(dst, a, n, [&f](float *x, int64_t len) { map_n<W>(x, x, len, f); });
}

// Same-shape tiles are row-major with one row stride, so whole tiles are flat arrays.
template <class T> inline bool flat(Tile<T> dst, Tile<T> a) { return a.cols == dst.cols && a.rows >= dst.rows; }

// dst[i] = elem<Op>(a[i], b[i]) over n contiguous elements.
template <class Op, class T> inline void zip_elem(T *dst, const T *a, const T *b, int64_t n) {
    constexpr bool W = kWide<Op, T>;
    if constexpr (ArrayForm<Op>::value && kNarrow<T>)
        zip_blocks(dst, a, b, n, [](float *x, const float *y, int64_t len) { Op::n(x, x, y, len); });
    else if constexpr (ArrayForm<Op>::value && Num<T>::is_float) Op::n(dst, a, b, n);
    else if constexpr (kNarrow<T>) zip_narrow<W>(dst, a, b, n, [](float x, float y) { return Op::f(x, y); });
    else zip_n<W>(dst, a, b, n, [](T x, T y) { return elem<Op>(x, y); });
}

// dst[i] = elem<Op>(a[i], s) (elem<Op>(s, a[i]) when Reversed) over n contiguous elements.
template <class Op, bool Reversed, class T> inline void map_elem(T *dst, const T *a, T s, int64_t n) {
    if constexpr (ArrayForm<Op>::value && Num<T>::is_float && !Reversed) {
        const float sf = Num<T>::load(s);
        if constexpr (kNarrow<T>) map_blocks(dst, a, n, [sf](float *x, int64_t len) { Op::n(x, x, sf, len); });
        else Op::n(dst, a, sf, n);
    } else if constexpr (kNarrow<T>) {
        const float sf = Num<T>::load(s);
        map_narrow<kWide<Op, T>>(dst, a, n, [sf](float x) { return Reversed ? Op::f(sf, x) : Op::f(x, sf); });
    } else {
        map_n<kWide<Op, T>>(dst, a, n, [s](T x) { return Reversed ? elem<Op>(s, x) : elem<Op>(x, s); });
    }
}

template <class Op, class T> inline void binary(Tile<T> dst, Tile<T> a, Tile<T> b) {
    if (flat(dst, a) && flat(dst, b)) return zip_elem<Op>(dst.data, a.data, b.data, int64_t(dst.rows) * dst.cols);
    for_each(dst, [&](int32_t r, int32_t c) { return elem<Op>(at(a, r, c), at(b, r, c)); });
}

template <class Op, class T> inline void unary(Tile<T> dst, Tile<T> a) {
    if (flat(dst, a)) {
        const int64_t n = int64_t(dst.rows) * dst.cols;
        if constexpr (kNarrow<T>) map_narrow<kWide<Op, T>>(dst.data, a.data, n, [](float x) { return Op::f(x); });
        else map_n<kWide<Op, T>>(dst.data, a.data, n, [](T x) { return elem<Op>(x); });
        return;
    }
    for_each(dst, [&](int32_t r, int32_t c) { return elem<Op>(at(a, r, c)); });
}

template <class Op, class T> inline void unary_float(Tile<T> dst, Tile<T> a) {
    static_assert(Num<T>::is_float, "this instruction exists for float tiles only");
    if (flat(dst, a)) {
        const int64_t n = int64_t(dst.rows) * dst.cols;
        if constexpr (ArrayForm<Op>::value && kNarrow<T>) map_blocks(dst.data, a.data, n, [](float *x, int64_t len) { Op::n(x, x, len); });
        else if constexpr (ArrayForm<Op>::value) Op::n(dst.data, a.data, n);
        else if constexpr (kNarrow<T>) map_narrow<kWide<Op, T>>(dst.data, a.data, n, [](float x) { return Op::f(x); });
        else map_n<kWide<Op, T>>(dst.data, a.data, n, [](T x) { return elem_float_only<Op>(x); });
        return;
    }
    for_each(dst, [&](int32_t r, int32_t c) { return elem_float_only<Op>(at(a, r, c)); });
}

template <class Op, class T, class S> inline void scalar(Tile<T> dst, Tile<T> a, S s, bool reversed) {
    const T st = convert<T>(s, RoundMode::Rint);
    if (flat(dst, a)) {
        const int64_t n = int64_t(dst.rows) * dst.cols;
        if (reversed) return map_elem<Op, true>(dst.data, a.data, st, n);
        return map_elem<Op, false>(dst.data, a.data, st, n);
    }
    for_each(dst, [&](int32_t r, int32_t c) {
        return reversed ? elem<Op>(st, at(a, r, c)) : elem<Op>(at(a, r, c), st);
    });
}

// A comparison in the element's own domain (narrow floats widen exactly).
template <class T> inline bool compare(T a, T b, CmpMode m) {
    const auto cmp = [m](auto x, auto y) {
        switch (m) {
        case CmpMode::EQ: return x == y;
        case CmpMode::NE: return x != y;
        case CmpMode::LT: return x < y;
        case CmpMode::LE: return x <= y;
        case CmpMode::GT: return x > y;
        default: return x >= y;
        }
    };
    if constexpr (Num<T>::is_float) {
        return cmp(Num<T>::load(a), Num<T>::load(b));
    } else {
        return cmp(a, b);
    }
}

// Row and column strides of a global tensor viewed as 2-D (rank 1 is [1, n]).
inline int64_t row_stride(const PtoTensor &t) { return t.ndim >= 2 ? t.stride[t.ndim - 2] : 0; }
inline int64_t col_stride(const PtoTensor &t) { return t.ndim >= 1 ? t.stride[t.ndim - 1] : 1; }

}  // namespace detail

/* Sets a tile's valid region (metadata only; generated code calls it before the
 * instruction that defines the tile). */
template <class T> inline void set_valid(Tile<T> &t, int32_t vrows, int32_t vcols) {
    t.vrows = vrows;
    t.vcols = vcols;
}

/* Batch b of a rank-3 global tensor [B, rows, cols]: the tensor [1, rows, cols] that a
 * load or store of one batch's [rows, cols] tile reads through.  A b outside [0, B) is a
 * fault (bounds.hpp), and the view it gives has no rows, so the load or store that
 * follows touches nothing. */
template <class T> inline PtoTensor batch(const char *op, const PtoTensor &t, int64_t b) {
    PtoTensor v = t;
    const int d = t.ndim - 3;
    if (!detail::batch_inside(op, t, b)) {
        v.shape[t.ndim - 2] = 0;
        return v;
    }
    if constexpr (detail::kPacked<T>) v.data = static_cast<uint8_t *>(t.data) + b * t.stride[d] / 2;
    else v.data = static_cast<T *>(t.data) + b * t.stride[d];
    v.shape[d] = 1;
    return v;
}

/* Copies the window at (r0, c0) of a global tensor into dst's valid region and
 * fills the rest of the tile with pad.  The tensor is viewed through its last two
 * dims (its outer dims must be 1); a rank-1 tensor is [1, n]. */
template <class T> inline void tload(Tile<T> dst, const PtoTensor &src, int64_t r0, int64_t c0, T pad) {
    PTO_CHECK_WINDOW("tload", src, r0, c0, dst.vrows, dst.vcols);
    const int64_t rs = detail::row_stride(src), cs = detail::col_stride(src);
    if constexpr (detail::kPacked<T>) {  // whole bytes: rows of vcols / 2 bytes, padding pairs of pad
        PTO_CHECK_BYTES("tload", rs, cs, c0, dst.vcols);
        const uint8_t *base = static_cast<const uint8_t *>(src.data) + (r0 * rs + c0) / 2;
        uint8_t *out = reinterpret_cast<uint8_t *>(dst.data);
        const int64_t row_bytes = dst.cols / 2, valid = (dst.vcols < dst.cols ? dst.vcols : dst.cols) / 2;
        const uint8_t fill = uint8_t((pad.bits & 0xf) | (pad.bits << 4));
        for (int32_t r = 0; r < dst.rows; ++r) {
            uint8_t *row = out + int64_t(r) * row_bytes;
            const int64_t n = r < dst.vrows ? valid : 0;
            if (n > 0) __builtin_memcpy(row, base + r * rs / 2, size_t(n));
            __builtin_memset(row + n, fill, size_t(row_bytes - n));
        }
        return;
    }
    const T *base = static_cast<const T *>(src.data) + r0 * rs + c0 * cs;
    PTO_OBSERVE_WINDOW(false, false, base, rs, cs, dst.vrows < dst.rows ? dst.vrows : dst.rows,
                       dst.vcols < dst.cols ? dst.vcols : dst.cols, T);
    for (int32_t r = 0; r < dst.rows; ++r) {
        T *row = dst.data + int64_t(r) * dst.cols;
        int32_t c = 0;
        if (r < dst.vrows) {
            if (cs == 1 && dst.vcols > 0) {  // a contiguous row of the window: one copy
                c = dst.vcols < dst.cols ? dst.vcols : dst.cols;
                __builtin_memcpy(row, base + r * rs, sizeof(T) * c);
            } else {
                for (; c < dst.cols && c < dst.vcols; ++c) row[c] = base[r * rs + c * cs];
            }
        }
        for (; c < dst.cols; ++c) row[c] = pad;
    }
}

/* Writes src's valid region to the window at (r0, c0) of a global tensor (viewed as in tload). */
template <class T> inline void tstore(const PtoTensor &dst, int64_t r0, int64_t c0, Tile<T> src) {
    PTO_CHECK_WINDOW("tstore", dst, r0, c0, src.vrows, src.vcols);
    const int64_t rs = detail::row_stride(dst), cs = detail::col_stride(dst);
    if constexpr (detail::kPacked<T>) {  // whole bytes: rows of vcols / 2 bytes
        PTO_CHECK_BYTES("tstore", rs, cs, c0, src.vcols);
        uint8_t *base = static_cast<uint8_t *>(dst.data) + (r0 * rs + c0) / 2;
        const uint8_t *in = reinterpret_cast<const uint8_t *>(src.data);
        for (int32_t r = 0; r < src.vrows; ++r)
            if (src.vcols > 0) __builtin_memcpy(base + r * rs / 2, in + int64_t(r) * (src.cols / 2), size_t(src.vcols / 2));
        return;
    }
    T *base = static_cast<T *>(dst.data) + r0 * rs + c0 * cs;
    PTO_OBSERVE_WINDOW(true, false, base, rs, cs, src.vrows, src.vcols, T);
    for (int32_t r = 0; r < src.vrows; ++r) {
        if (cs == 1 && src.vcols > 0) {  // a contiguous row of the window: one copy
            __builtin_memcpy(base + r * rs, src.data + int64_t(r) * src.cols, sizeof(T) * src.vcols);
            continue;
        }
        for (int32_t c = 0; c < src.vcols; ++c) base[r * rs + c * cs] = detail::at(src, r, c);
    }
}

namespace detail {

template <int N> struct UIntOf;
template <> struct UIntOf<1> { typedef uint8_t type; };
template <> struct UIntOf<2> { typedef uint16_t type; };
template <> struct UIntOf<4> { typedef uint32_t type; };
template <> struct UIntOf<8> { typedef uint64_t type; };

/* *p += v atomically.  Floats: a compare-and-swap loop on the element's bits, the sum
 * rounded to the element type as the hardware's accumulating store does; integers wrap.
 * Concurrent accumulators never lose an update and land in whatever order the tasks
 * reach the element, so a split-K sum may differ in its last bits from run to run. */
template <class T> inline void atomic_add(T *p, T v) {
    typedef typename UIntOf<sizeof(T)>::type U;
    U *bits = reinterpret_cast<U *>(p);
    if constexpr (Num<T>::is_float) {
        U expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
        for (;;) {
            T old;
            memcpy(&old, &expected, sizeof(T));
            T sum = elem<OpAdd>(old, v);
            U desired;
            memcpy(&desired, &sum, sizeof(T));
            if (__atomic_compare_exchange_n(bits, &expected, desired, true, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED))
                return;
        }
    } else {
        U add;
        memcpy(&add, &v, sizeof(T));
        __atomic_fetch_add(bits, add, __ATOMIC_ACQ_REL);
    }
}

}  // namespace detail

/* Adds src's valid region into the window at (r0, c0) of a global tensor, element by
 * element atomically (pl.store / pl.assemble with atomic=pl.AtomicType.Add). */
template <class T>
inline void tstore_atomic_add(const PtoTensor &dst, int64_t r0, int64_t c0, Tile<T> src) {
    PTO_CHECK_WINDOW("tstore_atomic_add", dst, r0, c0, src.vrows, src.vcols);
    const int64_t rs = detail::row_stride(dst), cs = detail::col_stride(dst);
    T *base = static_cast<T *>(dst.data) + r0 * rs + c0 * cs;
    PTO_OBSERVE_WINDOW(true, true, base, rs, cs, src.vrows, src.vcols, T);
    for (int32_t r = 0; r < src.vrows; ++r)
        for (int32_t c = 0; c < src.vcols; ++c)
            detail::atomic_add(base + r * rs + c * cs, detail::at(src, r, c));
}

template <class T> inline void tadd(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpAdd>(d, a, b); }
template <class T> inline void tsub(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpSub>(d, a, b); }
template <class T> inline void tmul(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpMul>(d, a, b); }
template <class T> inline void tdiv(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpDiv>(d, a, b); }
template <class T> inline void tmax(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpMax>(d, a, b); }
template <class T> inline void tmin(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpMin>(d, a, b); }
template <class T> inline void tand(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpAnd>(d, a, b); }
template <class T> inline void tor(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpOr>(d, a, b); }
template <class T> inline void txor(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpXor>(d, a, b); }
template <class T> inline void tshl(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpShl>(d, a, b); }
template <class T> inline void tshr(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpShr>(d, a, b); }

template <class T> inline void texp(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpExp>(d, a); }
template <class T> inline void tlog(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpLog>(d, a); }
template <class T> inline void tsqrt(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpSqrt>(d, a); }
template <class T> inline void trsqrt(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpRsqrt>(d, a); }
template <class T> inline void trecip(Tile<T> d, Tile<T> a) { detail::unary_float<detail::OpRecip>(d, a); }
template <class T> inline void tneg(Tile<T> d, Tile<T> a) { detail::unary<detail::OpNeg>(d, a); }
template <class T> inline void tabs(Tile<T> d, Tile<T> a) { detail::unary<detail::OpAbs>(d, a); }
template <class T> inline void trelu(Tile<T> d, Tile<T> a) { detail::unary<detail::OpRelu>(d, a); }
template <class T> inline void tnot(Tile<T> d, Tile<T> a) { detail::unary<detail::OpNot>(d, a); }

/* Scalar forms: the scalar (int64_t or double) is rounded to the element type first. */
template <class T, class S> inline void tadds(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpAdd>(d, a, s, false); }
template <class T, class S> inline void tsubs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpSub>(d, a, s, false); }
template <class T, class S> inline void tmuls(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpMul>(d, a, s, false); }
template <class T, class S> inline void tdivs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpDiv>(d, a, s, false); }
template <class T, class S> inline void tmaxs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpMax>(d, a, s, false); }
template <class T, class S> inline void tmins(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpMin>(d, a, s, false); }
template <class T, class S> inline void tands(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpAnd>(d, a, s, false); }
template <class T, class S> inline void tors(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpOr>(d, a, s, false); }
template <class T, class S> inline void txors(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpXor>(d, a, s, false); }
template <class T, class S> inline void tshls(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpShl>(d, a, s, false); }
template <class T, class S> inline void tshrs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpShr>(d, a, s, false); }
/* Reversed scalar forms: s - a, s / a, and max(s, a) / min(s, a), which differ from
 * max(a, s) / min(a, s) in which zero a tie of +0 and -0 gives (the second operand). */
template <class T, class S> inline void trsubs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpSub>(d, a, s, true); }
template <class T, class S> inline void trdivs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpDiv>(d, a, s, true); }
template <class T, class S> inline void trmaxs(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpMax>(d, a, s, true); }
template <class T, class S> inline void trmins(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpMin>(d, a, s, true); }

/* Comparisons into a BOOL mask tile, and selection by such a mask. */
template <class T> inline void tcmp(Tile<bool> d, Tile<T> a, Tile<T> b, CmpMode m) {
    detail::for_each(d, [&](int32_t r, int32_t c) { return detail::compare(detail::at(a, r, c), detail::at(b, r, c), m); });
}
template <class T, class S> inline void tcmps(Tile<bool> d, Tile<T> a, S s, CmpMode m) {
    const T st = convert<T>(s, RoundMode::Rint);
    detail::for_each(d, [&](int32_t r, int32_t c) { return detail::compare(detail::at(a, r, c), st, m); });
}
template <class T> inline void tsel(Tile<T> d, Tile<bool> mask, Tile<T> a, Tile<T> b) {
    detail::for_each(d, [&](int32_t r, int32_t c) { return detail::at(mask, r, c) ? detail::at(a, r, c) : detail::at(b, r, c); });
}

/* Remainders, leaky ReLUs and three-operand sums (TFMOD, TREM, TLRELU, TPRELU, TADDC, ...). */
namespace detail {
// fmod: the remainder of the truncating division (the dividend's sign), exact in float, so
// it is representable in every float element type; rem: of the flooring division (the
// divisor's sign): fmod, plus the divisor (one rounding) where a non-zero fmod and the
// divisor differ in sign, as TREM corrects it.  Integers: x % 0 is 0 (as x / 0 is), and
// MIN % -1 is 0 (the C++ division would trap).
struct OpFmod {
    static float f(float a, float b) { return __builtin_fmodf(a, b); }
    template <class I> static I i(I a, I b) {
        if (b == I(0) || (I(-1) < I(0) && b == I(-1))) return I(0);
        return I(a % b);
    }
};
struct OpRem {
    static float f(float a, float b) {
        const float r = __builtin_fmodf(a, b);
        return (r != 0.0f && (r < 0.0f) != (b < 0.0f)) ? r + b : r;
    }
    template <class I> static I i(I a, I b) {
        const I r = OpFmod::i(a, b);
        return (r != I(0) && (r < I(0)) != (b < I(0))) ? I(r + b) : r;
    }
};
// x > 0 ? x : x * slope (NaN takes the product: NaN); float tiles only.
struct OpLrelu { static float f(float a, float s) { return a > 0.0f ? a : a * s; } };

// a OP1 b + c, each operation rounded to the element type (integers wrap).
template <class Op, class T> inline void sum3(Tile<T> d, Tile<T> a, Tile<T> b, Tile<T> c) {
    for_each(d, [&](int32_t r, int32_t k) { return elem<OpAdd>(elem<Op>(at(a, r, k), at(b, r, k)), at(c, r, k)); });
}
template <class Op, class T, class S> inline void sum3s(Tile<T> d, Tile<T> a, S s, Tile<T> c) {
    const T st = convert<T>(s, RoundMode::Rint);
    for_each(d, [&](int32_t r, int32_t k) { return elem<OpAdd>(elem<Op>(at(a, r, k), st), at(c, r, k)); });
}
}  // namespace detail

template <class T> inline void tfmod(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpFmod>(d, a, b); }
template <class T> inline void trem(Tile<T> d, Tile<T> a, Tile<T> b) { detail::binary<detail::OpRem>(d, a, b); }
template <class T, class S> inline void tfmods(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpFmod>(d, a, s, false); }
template <class T, class S> inline void trems(Tile<T> d, Tile<T> a, S s) { detail::scalar<detail::OpRem>(d, a, s, false); }
template <class T, class S> inline void tlrelu(Tile<T> d, Tile<T> a, S slope) {
    static_assert(detail::Num<T>::is_float, "TLRELU exists for float tiles only");
    detail::scalar<detail::OpLrelu>(d, a, slope, false);
}
/* x > 0 ? x : x * slope with a slope per element; tmp (upstream's scratch operand, where
 * A2/A3 keeps its compare mask) is not written. */
template <class T> inline void tprelu(Tile<T> d, Tile<T> a, Tile<T> slope) {
    static_assert(detail::Num<T>::is_float, "TPRELU exists for float tiles only");
    detail::binary<detail::OpLrelu>(d, a, slope);
}
template <class T> inline void tprelu(Tile<T> d, Tile<T> a, Tile<T> slope, Tile<T>) { tprelu(d, a, slope); }
/* a + b + c and a - b + c (TADDC / TSUBC); a + s + c and a - s + c (TADDSC / TSUBSC). */
template <class T> inline void taddc(Tile<T> d, Tile<T> a, Tile<T> b, Tile<T> c) { detail::sum3<detail::OpAdd>(d, a, b, c); }
template <class T> inline void tsubc(Tile<T> d, Tile<T> a, Tile<T> b, Tile<T> c) { detail::sum3<detail::OpSub>(d, a, b, c); }
template <class T, class S> inline void taddsc(Tile<T> d, Tile<T> a, S s, Tile<T> c) { detail::sum3s<detail::OpAdd>(d, a, s, c); }
template <class T, class S> inline void tsubsc(Tile<T> d, Tile<T> a, S s, Tile<T> c) { detail::sum3s<detail::OpSub>(d, a, s, c); }

namespace detail {
// Out of line, once per type pair: a kernel with many casts compiles ~3x faster.
// Widening FP16/BF16 is exact under every mode, and rounding float to them by Rint is
// the hot path's store_n: both take the array conversions of numerics.hpp.
template <class D, class S> __attribute__((noinline)) void convert_n(D *dst, const S *src, int64_t n, RoundMode m) {
    if constexpr (__is_same(D, float) && (__is_same(S, f16) || __is_same(S, bf16))) {
        return Num<S>::load_n(dst, src, n);
    } else if constexpr (__is_same(S, float) && (__is_same(D, f16) || __is_same(D, bf16))) {
        if (m == RoundMode::Rint || m == RoundMode::None) return Num<D>::store_n(dst, src, n);
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i], m);
}
}  // namespace detail

/* Element-wise convert<D, S> of every element (same shape): one hardware hop.  A 4-bit
 * side is read or written a nibble at a time. */
template <class D, class S> inline void tcvt(Tile<D> dst, Tile<S> src, RoundMode m) {
    const int64_t n = int64_t(dst.rows) * dst.cols;
    if constexpr (detail::kPacked<D> || detail::kPacked<S>) {
        for (int64_t i = 0; i < n; ++i) detail::set_element(dst.data, i, convert<D>(detail::element(src.data, i), m));
        return;
    }
    detail::convert_n(dst.data, src.data, n, m);
}

/* Every element set to s (rounded once to the element type). */
template <class T, class S> inline void texpands(Tile<T> dst, S s) {
    const T value = convert<T>(s, RoundMode::Rint);
    detail::for_each(dst, [&](int32_t, int32_t) { return value; });
}

/* TCI: start + c in column c of every row (start - c when descending), start first rounded
 * to the element type (saturating, as every scalar operand), the sequence wrapping. */
template <class T, class S> inline void tci(Tile<T> dst, S start, bool descending) {
    const T first = convert<T>(start, RoundMode::Rint);
    detail::for_each(dst, [&](int32_t, int32_t c) {
        return descending ? detail::OpSub::i(first, T(c)) : detail::OpAdd::i(first, T(c));
    });
}

/* dst = src inside src's valid region, pad elsewhere (dst may be src). */
template <class T> inline void tfillpad(Tile<T> dst, Tile<T> src, T pad) {
    detail::for_each(dst, [&](int32_t r, int32_t c) {
        return (r < src.vrows && c < src.vcols) ? detail::at(src, r, c) : pad;
    });
}

/* TFILLPAD_EXPAND: dst (at least src's shape) = src's valid region at its origin, pad
 * everywhere else (tfillpad reads src at its own row stride). */
template <class T> inline void tfillpad_expand(Tile<T> dst, Tile<T> src, T pad) { tfillpad(dst, src, pad); }

/* Partial (segmented) arithmetic (TPARTADD, TPARTMUL, TPARTMAX, TPARTMIN) of two tiles of
 * one shape: where exactly one source's valid region holds an element, a copy of that
 * source's; elsewhere (both regions, or neither: padding) the operation. */
namespace detail {
template <class Op, class T> inline void part(Tile<T> d, Tile<T> a, Tile<T> b) {
    for_each(d, [&](int32_t r, int32_t c) {
        const bool in_a = r < a.vrows && c < a.vcols, in_b = r < b.vrows && c < b.vcols;
        if (in_a != in_b) return in_a ? at(a, r, c) : at(b, r, c);
        return elem<Op>(at(a, r, c), at(b, r, c));
    });
}
}  // namespace detail
template <class T> inline void tpartadd(Tile<T> d, Tile<T> a, Tile<T> b) { detail::part<detail::OpAdd>(d, a, b); }
template <class T> inline void tpartmul(Tile<T> d, Tile<T> a, Tile<T> b) { detail::part<detail::OpMul>(d, a, b); }
template <class T> inline void tpartmax(Tile<T> d, Tile<T> a, Tile<T> b) { detail::part<detail::OpMax>(d, a, b); }
template <class T> inline void tpartmin(Tile<T> d, Tile<T> a, Tile<T> b) { detail::part<detail::OpMin>(d, a, b); }

/* Copies a tile into another of the same shape (any two buffers: TMOV). */
template <class T> inline void tmov(Tile<T> dst, Tile<T> src) {
    if constexpr (detail::kPacked<T>) {  // rows of cols / 2 bytes
        const int64_t dst_row = dst.cols / 2, src_row = src.cols / 2;
        for (int32_t r = 0; r < dst.rows; ++r)
            __builtin_memmove(reinterpret_cast<uint8_t *>(dst.data) + r * dst_row,
                              reinterpret_cast<const uint8_t *>(src.data) + r * src_row, size_t(dst_row));
        return;
    }
    if (detail::flat(dst, src)) {  // the same row stride: one copy of the whole tile
        __builtin_memmove(dst.data, src.data, sizeof(T) * int64_t(dst.rows) * dst.cols);
        return;
    }
    detail::for_each(dst, [&](int32_t r, int32_t c) { return detail::at(src, r, c); });
}

/* dst = the dst-shaped window of src at (r0, c0) (TEXTRACT). */
template <class T> inline void textract(Tile<T> dst, Tile<T> src, int64_t r0, int64_t c0) {
    detail::for_each(dst, [&](int32_t r, int32_t c) { return detail::at(src, int32_t(r0 + r), int32_t(c0 + c)); });
}

/* The valid region of src written into dst at (r0, c0) (TINSERT); dst keeps its other
 * elements.  Elements that would land outside dst are not written. */
template <class T> inline void tinsert(Tile<T> dst, Tile<T> src, int64_t r0, int64_t c0) {
    for (int32_t r = 0; r < src.vrows; ++r)
        for (int32_t c = 0; c < src.vcols; ++c)
            if (r0 + r >= 0 && r0 + r < dst.rows && c0 + c >= 0 && c0 + c < dst.cols)
                detail::ref(dst, int32_t(r0 + r), int32_t(c0 + c)) = detail::at(src, r, c);
}

/* The same row-major bytes under dst's shape and element type (pl.reshape keeps the type,
 * pl.reinterpret_view changes it). */
template <class T, class U> inline void treshape(Tile<T> dst, Tile<U> src) {
    const size_t n = size_t(dst.rows) * size_t(dst.cols) * sizeof(T);
    if (static_cast<void *>(dst.data) != static_cast<void *>(src.data)) memmove(dst.data, src.data, n);
}

/* dst[c][r] = src[r][c]; a square tile transposes in place. */
template <class T> inline void ttrans(Tile<T> dst, Tile<T> src) {
    if (dst.data == src.data) {
        for (int32_t r = 0; r < src.rows; ++r)
            for (int32_t c = r + 1; c < src.cols; ++c) {
                const T x = detail::at(src, r, c);
                detail::ref(src, r, c) = detail::at(src, c, r);
                detail::ref(src, c, r) = x;
            }
        return;
    }
    detail::for_each(dst, [&](int32_t r, int32_t c) { return detail::at(src, c, r); });
}

/* [R, Ca] and [R, Cb] side by side. */
template <class T> inline void tconcat(Tile<T> dst, Tile<T> a, Tile<T> b) {
    detail::for_each(dst, [&](int32_t r, int32_t c) { return c < a.cols ? detail::at(a, r, c) : detail::at(b, r, c - a.cols); });
}

}  // namespace pto

#include "reduce.hpp"
#include "matmul.hpp"
#include "gather.hpp"
#include "sort.hpp"  // tsort32, tmrgsort
#include "scalar.hpp"  // tgetval: pl.read of one element
#include "random.hpp"  // trandom: pl.tile.random
#include "mask.hpp"  // ttri, tsels: pl.tile.tri, pl.tile.sels

#endif /* PTO_ISA_HPP */
