/*
 * Scalar reads of tiles: pl.read / `t[i, j]` (included at the end of isa.hpp).
 *
 * tgetval(dst, t, r, c) sets dst to element (r, c) of the tile, in the C++ type that
 * generated kernels hold scalars in: double for float-like element types (the widening
 * is exact for FP32, FP16, BF16 and FP8), int64_t for integers and bool.  The element is read as
 * it is in the buffer: outside the valid region that is the padding.  In a sim debug
 * build (PTO_SIM_BOUNDS_CHECK) an index outside the tile reads 0 and records a fault
 * the runtime reports, as a window outside a tensor does (bounds.hpp).
 */
#ifndef PTO_SCALAR_HPP
#define PTO_SCALAR_HPP

#include <stdint.h>

namespace pto {

namespace detail {
#ifdef PTO_SIM_BOUNDS_CHECK
inline bool element_inside(int64_t r, int64_t c, int32_t rows, int32_t cols) {
    if (r >= 0 && c >= 0 && r < rows && c < cols) return true;
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
        __builtin_snprintf(pto_sim_fault, sizeof pto_sim_fault,
                           "tgetval of element [%lld, %lld] lies outside the [%d, %d] tile",
                           (long long)r, (long long)c, rows, cols);
    return false;
}
#endif
// The C++ type of a scalar of element type T in generated kernels (codegen's scalar_ctype).
template <class T, bool Float = Num<T>::is_float> struct ScalarOf { using type = int64_t; };
template <class T> struct ScalarOf<T, true> { using type = double; };
}  // namespace detail

template <class T> inline void tgetval(typename detail::ScalarOf<T>::type &dst, Tile<T> t, int64_t r, int64_t c) {
    using Scalar = typename detail::ScalarOf<T>::type;
#ifdef PTO_SIM_BOUNDS_CHECK
    if (!detail::element_inside(r, c, t.rows, t.cols)) {
        dst = Scalar(0);
        return;
    }
#endif
    const T x = t.data[r * t.cols + c];
    if constexpr (detail::Num<T>::is_float) {
        dst = Scalar(detail::Num<T>::load(x));
    } else {
        dst = Scalar(x);
    }
}

}  // namespace pto

#endif /* PTO_SCALAR_HPP */
