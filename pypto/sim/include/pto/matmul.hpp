/*
 * Matrix multiplication of the simulated cube unit (included by isa.hpp).
 *
 * c[i][j] = sum over k of a[i][k] * b[k][j] (a is read as [K, M] when ta, b as [N, K]
 * when tb).  Products are formed in input precision (exact in float for FP16 / BF16,
 * rounded to float for FP32 inputs), accumulated in a float register in K order
 * (k = 0 first; tmatmul_acc starts from acc[i][j]) and rounded once, by Rint, to the
 * result's type.  INT8 inputs accumulate in int32 (wrapping).  The whole tile takes
 * part, so K padding of zero adds nothing.  Fixed order: equal inputs give equal bits.
 */
#ifndef PTO_MATMUL_HPP
#define PTO_MATMUL_HPP

namespace pto {
namespace detail {

template <class D, class T>
inline void matmul(Tile<D> c, const Tile<D> *acc, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    const int32_t k_len = ta ? a.rows : a.cols;
    for (int32_t i = 0; i < c.rows; ++i) {
        for (int32_t j = 0; j < c.cols; ++j) {
            if constexpr (Num<T>::is_float) {
                float s = acc ? Num<D>::load(at(*acc, i, j)) : 0.0f;
                for (int32_t k = 0; k < k_len; ++k) {
                    const float x = Num<T>::load(ta ? at(a, k, i) : at(a, i, k));
                    const float y = Num<T>::load(tb ? at(b, j, k) : at(b, k, j));
                    s = s + x * y;
                }
                ref(c, i, j) = convert<D>(s, RoundMode::Rint);
            } else {
                uint32_t s = acc ? uint32_t(at(*acc, i, j)) : 0u;
                for (int32_t k = 0; k < k_len; ++k) {
                    const int32_t x = ta ? at(a, k, i) : at(a, i, k);
                    const int32_t y = tb ? at(b, j, k) : at(b, k, j);
                    s += uint32_t(x * y);
                }
                ref(c, i, j) = D(int32_t(s));
            }
        }
    }
}

}  // namespace detail

/* c = a @ b (TMATMUL): a in Left, b in Right, c in Acc. */
template <class D, class T> inline void tmatmul(Tile<D> c, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    detail::matmul<D, T>(c, nullptr, a, b, ta, tb);
}

/* c = acc + a @ b (TMATMUL_ACC); c may be acc. */
template <class D, class T> inline void tmatmul_acc(Tile<D> c, Tile<D> acc, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    detail::matmul<D, T>(c, &acc, a, b, ta, tb);
}

}  // namespace pto

#endif /* PTO_MATMUL_HPP */
