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

// The float path: operands widened to float once (O(MK + KN) conversions, not two per
// product), then row by row c[i][:] += a[i][k] * b[k][:] for k = 0, 1, ...  Each
// c[i][j] still sees s = s + a[i][k] * b[k][j] in K order, the same float operations
// as the textbook loop, so the bits are the same; the j loop runs on contiguous rows in
// chunks GCC vectorises.
template <class D, class T>
inline void matmul_float(Tile<D> c, const Tile<D> *acc, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    const int64_t m = c.rows, n = c.cols, k_len = ta ? a.rows : a.cols;
    float *const fa = new float[m * k_len + k_len * n + n];
    float *const fb = fa + m * k_len, *const s = fb + k_len * n;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < k_len; ++k) fa[i * k_len + k] = Num<T>::load(ta ? at(a, int32_t(k), int32_t(i)) : at(a, int32_t(i), int32_t(k)));
    for (int64_t k = 0; k < k_len; ++k)
        for (int64_t j = 0; j < n; ++j) fb[k * n + j] = Num<T>::load(tb ? at(b, int32_t(j), int32_t(k)) : at(b, int32_t(k), int32_t(j)));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) s[j] = acc ? Num<D>::load(at(*acc, int32_t(i), int32_t(j))) : 0.0f;
        for (int64_t k = 0; k < k_len; ++k) {
            const float x = fa[i * k_len + k];
            const float *y = fb + k * n;
            zip_n(s, s, y, n, [x](float sj, float yj) { return sj + x * yj; });
        }
        for (int64_t j = 0; j < n; ++j) ref(c, int32_t(i), int32_t(j)) = convert<D>(s[j], RoundMode::Rint);
    }
    delete[] fa;
}

template <class D, class T>
inline void matmul(Tile<D> c, const Tile<D> *acc, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    if constexpr (Num<T>::is_float) {
        matmul_float<D, T>(c, acc, a, b, ta, tb);
    } else {
        const int32_t k_len = ta ? a.rows : a.cols;
        for (int32_t i = 0; i < c.rows; ++i) {
            for (int32_t j = 0; j < c.cols; ++j) {
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
