/*
 * Reductions and broadcasts of the simulated tile ISA (included by isa.hpp).
 *
 * Orders (pypto's numerics contract, docs/numerics.md):
 *  - Row reductions are sequential: acc = x[r][0], then acc = acc op x[r][c] for
 *    c = 1 .. cols-1, every step rounded to the element type, so an FP16 tile
 *    accumulates in FP16.  tmp is the scratch tile the hardware needs; the simulator
 *    needs none and leaves it alone.
 *  - tcolsum without tmp is sequential over rows (row 0 first).  With tmp it is the
 *    device's pairwise tree (pto-isa's npu/a2a3/TColSum.hpp, BinarySum): while n > 1
 *    rows remain, tmp[i] = row 2i + row 2i+1 for i < n / 2, an odd last row is added
 *    to tmp[0], and n = n / 2; tmp's contents are clobbered.
 *  - trowprod / tcolprod are sequential as the sums are (column 0 / row 0 first), as in
 *    pto-isa's CPU model; an integer product wraps.
 *  - The arg-reductions scan from index 0 and move to an element only when it compares
 *    strictly greater (argmax) or less (argmin) than the best so far: a tie keeps the
 *    first index, and a NaN wins only at index 0 (pto-isa's cpu/TReduceIdx.hpp).  The
 *    index is an int32_t.
 *  - Every row and column of the source takes part, padding included.
 *  - Broadcasts apply their operator to x[r][c] and v[r][0] (row) or v[0][c] (column);
 *    expdif computes exp(x - v) in float and rounds once.
 */
#ifndef PTO_REDUCE_HPP
#define PTO_REDUCE_HPP

namespace pto {
namespace detail {

// Rows are reduced kRows at a time, one accumulator each: every row is still its own
// sequential chain, but the chains overlap in the CPU instead of waiting on each other.
constexpr int32_t kRows = 4;

template <class Op, class T> inline void row_reduce(Tile<T> dst, Tile<T> src) {
    int32_t r = 0;
    for (; r + kRows <= src.rows; r += kRows) {
        const T *x = src.data + int64_t(r) * src.cols;
        T acc[kRows];
#pragma GCC unroll 4
        for (int32_t g = 0; g < kRows; ++g) acc[g] = x[int64_t(g) * src.cols];
        for (int32_t c = 1; c < src.cols; ++c)
#pragma GCC unroll 4
            for (int32_t g = 0; g < kRows; ++g) acc[g] = elem<Op>(acc[g], x[int64_t(g) * src.cols + c]);
#pragma GCC unroll 4
        for (int32_t g = 0; g < kRows; ++g) ref(dst, r + g, 0) = acc[g];
    }
    for (; r < src.rows; ++r) {
        T acc = at(src, r, 0);
        for (int32_t c = 1; c < src.cols; ++c) acc = elem<Op>(acc, at(src, r, c));
        ref(dst, r, 0) = acc;
    }
}

// Row by row: dst[0][c] = op(dst[0][c], x[r][c]) keeps each column's sequential order.
template <class Op, class T> inline void col_reduce(Tile<T> dst, Tile<T> src) {
    for (int32_t c = 0; c < src.cols; ++c) ref(dst, 0, c) = at(src, 0, c);
    for (int32_t r = 1; r < src.rows; ++r) zip_elem<Op>(dst.data, dst.data, src.data + int64_t(r) * src.cols, src.cols);
}

// Whether a beats b in an arg-reduction: strictly greater (Max) or less, floats compared
// as floats (a NaN never does).
template <bool Max, class T> inline bool beats(T a, T b) {
    if constexpr (Num<T>::is_float) {
        const float x = Num<T>::load(a), y = Num<T>::load(b);
        return Max ? x > y : x < y;
    } else {
        return Max ? a > b : a < b;
    }
}

// dst[r][0] (Row) or dst[0][c]: the index of the first best element of the row or column.
template <bool Max, bool Row, class T> inline void arg_reduce(Tile<int32_t> dst, Tile<T> src) {
    const int32_t lines = Row ? src.rows : src.cols, length = Row ? src.cols : src.rows;
    for (int32_t i = 0; i < lines; ++i) {
        T best = Row ? at(src, i, 0) : at(src, 0, i);
        int32_t index = 0;
        for (int32_t k = 1; k < length; ++k) {
            const T v = Row ? at(src, i, k) : at(src, k, i);
            if (beats<Max>(v, best)) {
                best = v;
                index = k;
            }
        }
        if constexpr (Row) ref(dst, i, 0) = index;
        else ref(dst, 0, i) = index;
    }
}

struct OpExpDif {
    static float f(float a, float b) { return fmath::expf(a - b); }
    static void n(float *d, const float *a, const float *b, int64_t n) { fmath::expdif_n(d, a, b, n); }
    static void n(float *d, const float *a, float s, int64_t n) { fmath::expdif_n(d, a, s, n); }
};
template <> struct ArrayForm<OpExpDif> { static constexpr bool value = true; };
struct OpSecond {
    static float f(float, float b) { return b; }
    template <class I> static I i(I, I b) { return b; }
};
template <> struct Wide<OpSecond> { static constexpr bool value = true; };

// dst[r][c] = op(x[r][c], v[r][0]) (Row) or op(x[r][c], v[0][c]) (column), row by row
// (reading x[r][:] and v before writing dst[r][:], so dst may be x).
template <class Op, bool Row, class T> inline void expand(Tile<T> dst, Tile<T> x, Tile<T> v) {
    for (int32_t r = 0; r < dst.rows; ++r) {
        T *out = dst.data + int64_t(r) * dst.cols;
        const T *in = x.data + int64_t(r) * x.cols;
        if constexpr (Row) map_elem<Op, false>(out, in, at(v, r, 0), dst.cols);
        else zip_elem<Op>(out, in, v.data, dst.cols);
    }
}

}  // namespace detail

template <class T> inline void trowsum(Tile<T> d, Tile<T> x, Tile<T>) { detail::row_reduce<detail::OpAdd>(d, x); }
template <class T> inline void trowmax(Tile<T> d, Tile<T> x, Tile<T>) { detail::row_reduce<detail::OpMax>(d, x); }
template <class T> inline void trowmin(Tile<T> d, Tile<T> x, Tile<T>) { detail::row_reduce<detail::OpMin>(d, x); }
template <class T> inline void tcolsum(Tile<T> d, Tile<T> x) { detail::col_reduce<detail::OpAdd>(d, x); }
template <class T> inline void tcolmax(Tile<T> d, Tile<T> x) { detail::col_reduce<detail::OpMax>(d, x); }
template <class T> inline void tcolmin(Tile<T> d, Tile<T> x) { detail::col_reduce<detail::OpMin>(d, x); }
template <class T> inline void trowprod(Tile<T> d, Tile<T> x, Tile<T>) { detail::row_reduce<detail::OpMul>(d, x); }
template <class T> inline void tcolprod(Tile<T> d, Tile<T> x) { detail::col_reduce<detail::OpMul>(d, x); }
template <class T> inline void trowargmax(Tile<int32_t> d, Tile<T> x, Tile<T>) { detail::arg_reduce<true, true>(d, x); }
template <class T> inline void trowargmin(Tile<int32_t> d, Tile<T> x, Tile<T>) { detail::arg_reduce<false, true>(d, x); }
template <class T> inline void tcolargmax(Tile<int32_t> d, Tile<T> x, Tile<T>) { detail::arg_reduce<true, false>(d, x); }
template <class T> inline void tcolargmin(Tile<int32_t> d, Tile<T> x, Tile<T>) { detail::arg_reduce<false, false>(d, x); }

/* Column sums by the device's pairwise tree over the rows, in tmp (at least x's shape). */
template <class T> inline void tcolsum(Tile<T> d, Tile<T> x, Tile<T> tmp) {
    if (x.rows == 1) {
        for (int32_t c = 0; c < x.cols; ++c) detail::ref(d, 0, c) = detail::at(x, 0, c);
        return;
    }
    const T *src = x.data;
    int64_t stride = x.cols;
    for (int32_t n = x.rows; n > 1; n /= 2) {
        for (int32_t i = 0; i < n / 2; ++i)  // row i is written after rows 2i, 2i+1 are read
            detail::zip_elem<detail::OpAdd>(tmp.data + int64_t(i) * tmp.cols, src + 2 * i * stride,
                                            src + (2 * i + 1) * stride, x.cols);
        if (n % 2 == 1)
            detail::zip_elem<detail::OpAdd>(tmp.data, tmp.data, src + int64_t(n - 1) * stride, x.cols);
        src = tmp.data;
        stride = tmp.cols;
    }
    for (int32_t c = 0; c < x.cols; ++c) detail::ref(d, 0, c) = detail::at(tmp, 0, c);
}

template <class T> inline void trowexpand(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpSecond, true>(d, x, v); }
template <class T> inline void trowexpandadd(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpAdd, true>(d, x, v); }
template <class T> inline void trowexpandsub(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpSub, true>(d, x, v); }
template <class T> inline void trowexpandmul(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpMul, true>(d, x, v); }
template <class T> inline void trowexpanddiv(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpDiv, true>(d, x, v); }
template <class T> inline void trowexpandmax(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpMax, true>(d, x, v); }
template <class T> inline void trowexpandmin(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpMin, true>(d, x, v); }
template <class T> inline void trowexpandexpdif(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpExpDif, true>(d, x, v); }
template <class T> inline void tcolexpand(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpSecond, false>(d, x, v); }
template <class T> inline void tcolexpandadd(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpAdd, false>(d, x, v); }
template <class T> inline void tcolexpandsub(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpSub, false>(d, x, v); }
template <class T> inline void tcolexpandmul(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpMul, false>(d, x, v); }
template <class T> inline void tcolexpanddiv(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpDiv, false>(d, x, v); }
template <class T> inline void tcolexpandmax(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpMax, false>(d, x, v); }
template <class T> inline void tcolexpandmin(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpMin, false>(d, x, v); }
template <class T> inline void tcolexpandexpdif(Tile<T> d, Tile<T> x, Tile<T> v) { detail::expand<detail::OpExpDif, false>(d, x, v); }

}  // namespace pto

#endif /* PTO_REDUCE_HPP */
