/*
 * Matrix multiplication of the simulated cube unit (included by isa.hpp).
 *
 * c[i][j] = sum over k of a[i][k] * b[k][j] (a is read as [K, M] when ta, b as [N, K]
 * when tb).  Products are formed in input precision (exact in float for FP16 / BF16,
 * rounded to float for FP32 inputs), accumulated in a float register in K order
 * (k = 0 first; tmatmul_acc starts from acc[i][j]) and rounded once, by Rint, to the
 * result's type.  INT8 inputs accumulate in int32 (wrapping).  The whole tile takes
 * part, so K padding of zero adds nothing.  Fixed order: equal inputs give equal bits.
 *
 * The MX product (tmatmul_mx, TMATMUL_MX on A5) is pto-isa's CPU model's (cpu/TMatmul.hpp,
 * TMatmulMX), step for step: FP8 data, one FP8E8M0 block scale per 32 elements along K;
 * K is a's valid columns; per element an FP32 sum from 0 to which, for k = 0, 1, ..., the
 * term a[i][k] * b[k][j] * (sa[i][k / 32] * sb[k / 32][j]) is added in double (the term is
 * exact in double: products of 4-bit significands and powers of two), the sum rounded to
 * float after each add; the acc form adds acc (one float add) after the last k, the bias
 * form the bias row.
 */
#ifndef PTO_MATMUL_HPP
#define PTO_MATMUL_HPP

namespace pto {
namespace detail {

// The float path is a register-tiled GEMM that keeps the model's order: every c[i][j]
// is one float s, s = s + a[i][k] * b[k][j] for k = 0, 1, ... (two roundings a step,
// no FMA: -ffp-contract=off), only many of them at once.  Operands are widened once
// and packed: a in blocks of mr rows ([k][row]), b in panels of nr columns ([k][col]),
// both zero-padded to whole blocks; a micro-kernel holds an mr x nr block of sums in
// vector registers for the whole K loop.  Padding rows and columns are computed and
// dropped.  The vectors are GCC's generic ones: SSE2 on any x86-64 (NEON on aarch64),
// and AVX2 / AVX-512F where the running CPU has them, chosen at run time, so the
// artifact is the same file on every host; lanes do the same IEEE float operations at
// any width, so the bits are the same too.
template <int W> struct MmVecOf;
template <> struct MmVecOf<1> { typedef float type; };  // no SIMD: one float at a time
template <> struct MmVecOf<4> { typedef float type __attribute__((vector_size(16))); };
template <> struct MmVecOf<8> { typedef float type __attribute__((vector_size(32))); };
template <> struct MmVecOf<16> { typedef float type __attribute__((vector_size(64))); };

// Keeps each product a value of its own, rounded before the add: GCC would otherwise fuse
// the two into an FMA in the AVX-512F kernel (AVX-512F implies FMA) wherever the header is
// compiled without -ffp-contract=off.  Costs nothing: the product is in a register anyway.
#if defined(__x86_64__)
#define PTO_MM_ROUNDED(p) __asm__("" : "+v"(p))
#elif defined(__aarch64__)
#define PTO_MM_ROUNDED(p) __asm__("" : "+w"(p))
#else
#define PTO_MM_ROUNDED(p) (void)0
#endif

typedef void (*MmMicro)(float *s, int64_t lds, const float *pa, const float *pb, int64_t k_len);

// s[r][c] (r < Mr, c < W * Nv, row stride lds) += pa[k][r] * pb[k][c], k in order.
template <int W, int Mr, int Nv>
inline __attribute__((always_inline)) void mm_micro(float *s, int64_t lds, const float *pa, const float *pb,
                                                    int64_t k_len) {
    typedef typename MmVecOf<W>::type V;
    V acc[Mr][Nv];
#pragma GCC unroll 16
    for (int r = 0; r < Mr; ++r)
#pragma GCC unroll 16
        for (int v = 0; v < Nv; ++v) __builtin_memcpy(&acc[r][v], s + r * lds + W * v, sizeof(V));
    for (int64_t k = 0; k < k_len; ++k, pa += Mr, pb += W * Nv) {
        V b[Nv];
#pragma GCC unroll 16
        for (int v = 0; v < Nv; ++v) __builtin_memcpy(&b[v], pb + W * v, sizeof(V));
#pragma GCC unroll 16
        for (int r = 0; r < Mr; ++r) {
            const float x = pa[r];
#pragma GCC unroll 16
            for (int v = 0; v < Nv; ++v) {
                V p = x * b[v];
                PTO_MM_ROUNDED(p);
                acc[r][v] = acc[r][v] + p;
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < Mr; ++r)
#pragma GCC unroll 16
        for (int v = 0; v < Nv; ++v) __builtin_memcpy(s + r * lds + W * v, &acc[r][v], sizeof(V));
}

struct MmKernel {
    int64_t mr, nr;
    MmMicro micro;
};

__attribute__((noinline)) inline void mm_micro_base(float *s, int64_t lds, const float *pa, const float *pb,
                                                    int64_t k_len) {
    mm_micro<4, 6, 2>(s, lds, pa, pb, k_len);  // 12 of the 16 SSE2 / 32 NEON registers
}

__attribute__((noinline)) inline void mm_micro_scalar(float *s, int64_t lds, const float *pa, const float *pb,
                                                      int64_t k_len) {
    mm_micro<1, 4, 4>(s, lds, pa, pb, k_len);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((noinline, target("avx2"))) inline void mm_micro_avx2(float *s, int64_t lds, const float *pa,
                                                                    const float *pb, int64_t k_len) {
    mm_micro<8, 6, 2>(s, lds, pa, pb, k_len);
}
__attribute__((noinline, target("avx512f"))) inline void mm_micro_avx512(float *s, int64_t lds, const float *pa,
                                                                         const float *pb, int64_t k_len) {
    mm_micro<16, 8, 2>(s, lds, pa, pb, k_len);
}
#endif

// The widest micro-kernel the CPU runs, among the first `widest` + 1 of base, AVX2,
// AVX-512F (tests/sim pins each one to check they agree); the scalar one where `widest`
// is negative or SIMD is off (PYPTO_SIM_SIMD=0).
inline MmKernel mm_kernel(int widest = 2) {
    if (widest < 0 || !simd_enabled()) return MmKernel{4, 4, mm_micro_scalar};
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (widest >= 2 && __builtin_cpu_supports("avx512f")) return MmKernel{8, 32, mm_micro_avx512};
    if (widest >= 1 && __builtin_cpu_supports("avx2")) return MmKernel{6, 16, mm_micro_avx2};
#endif
    (void)widest;
    return MmKernel{6, 8, mm_micro_base};
}

// dst[k * mr + r] = rows[r * stride + k] for r < mr, k < k_len: mr rows interleaved.
template <int Mr> inline void mm_interleave_n(float *dst, const float *rows, int64_t stride, int64_t k_len) {
    for (int64_t k = 0; k < k_len; ++k, dst += Mr)
#pragma GCC unroll 8
        for (int r = 0; r < Mr; ++r) dst[r] = rows[r * stride + k];
}

inline void mm_interleave(float *dst, const float *rows, int64_t stride, int64_t mr, int64_t k_len) {
    if (mr == 8) return mm_interleave_n<8>(dst, rows, stride, k_len);
    if (mr == 6) return mm_interleave_n<6>(dst, rows, stride, k_len);
    for (int64_t k = 0; k < k_len; ++k, dst += mr)
        for (int64_t r = 0; r < mr; ++r) dst[r] = rows[r * stride + k];
}

// Rounds the float sum into the result type exactly as convert<D>(s, Rint) does.
template <class D> inline D mm_result(float s) {
    if constexpr (__is_same(D, float)) {
        return s != s ? from_bits<float>(FloatFmt<float>::kNaN) : s;
    } else {
        return Num<D>::store(s);
    }
}

template <class D, class T>
__attribute__((noinline)) void matmul_float(Tile<D> c, const Tile<D> *acc, Tile<T> a, Tile<T> b, bool ta, bool tb,
                                             MmKernel kern) {
    const int64_t mr = kern.mr, nr = kern.nr;
    const int64_t m = c.rows, n = c.cols, k_len = ta ? a.rows : a.cols;
    const int64_t mp = (m + mr - 1) / mr * mr, np = (n + nr - 1) / nr * nr;
    const int64_t rows = m > n ? m : n, line = ((rows > k_len ? rows : k_len) + mr + nr) * mr;
    float *const pa = new float[(mp + np) * k_len + mp * np + line];
    float *const pb = pa + mp * k_len, *const s = pb + np * k_len, *const tmp = s + mp * np;
    // Widened rows of the operands (zero beyond their length) are scattered into
    // pa[ib * k_len * mr + k * mr + r] = a[ib * mr + r][k] and
    // pb[jb * k_len * nr + k * nr + j] = b[k][jb * nr + j].
    for (int64_t i = 0; i < line; ++i) tmp[i] = 0.0f;
    if (ta) {  // a is [K, M]: row k holds column k of the left operand
        for (int64_t k = 0; k < k_len; ++k) {
            Num<T>::load_n(tmp, a.data + k * a.cols, m);
            for (int64_t ib = 0; ib < mp; ib += mr) __builtin_memcpy(pa + ib * k_len + k * mr, tmp + ib, sizeof(float) * mr);
        }
    } else {  // mr rows at a time (float rows read in place, others widened into tmp)
        for (int64_t ib = 0; ib < mp; ib += mr) {
            const float *rows = tmp;
            int64_t stride = k_len;
            if constexpr (__is_same(T, float)) {
                if (ib + mr <= m) rows = a.data + ib * a.cols, stride = a.cols;
            }
            if (rows == tmp) {
                for (int64_t r = 0; r < mr; ++r) {
                    if (ib + r < m) Num<T>::load_n(tmp + r * k_len, a.data + (ib + r) * a.cols, k_len);
                    else for (int64_t k = 0; k < k_len; ++k) tmp[r * k_len + k] = 0.0f;
                }
            }
            mm_interleave(pa + ib * k_len, rows, stride, mr, k_len);
        }
    }
    for (int64_t i = 0; i < line; ++i) tmp[i] = 0.0f;
    if (tb) {  // b is [N, K]: row j holds column j of the right operand
        for (int64_t j = 0; j < np; ++j) {
            if (j < n) Num<T>::load_n(tmp, b.data + j * b.cols, k_len);
            else for (int64_t k = 0; k < k_len; ++k) tmp[k] = 0.0f;
            float *dst = pb + (j - j % nr) * k_len + j % nr;
            for (int64_t k = 0; k < k_len; ++k) dst[k * nr] = tmp[k];
        }
    } else {
        for (int64_t k = 0; k < k_len; ++k) {
            Num<T>::load_n(tmp, b.data + k * b.cols, n);
            for (int64_t jb = 0; jb < np; jb += nr) __builtin_memcpy(pb + jb * k_len + k * nr, tmp + jb, sizeof(float) * nr);
        }
    }
    for (int64_t i = 0; i < mp; ++i)
        for (int64_t j = 0; j < np; ++j)
            s[i * np + j] = (acc && i < m && j < n) ? Num<D>::load(acc->data[i * acc->cols + j]) : 0.0f;
    for (int64_t jb = 0; jb < np; jb += nr)
        for (int64_t ib = 0; ib < mp; ib += mr) kern.micro(s + ib * np + jb, np, pa + ib * k_len, pb + jb * k_len, k_len);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c.data[i * c.cols + j] = mm_result<D>(s[i * np + j]);
    delete[] pa;
}

template <class D, class T>
inline void matmul(Tile<D> c, const Tile<D> *acc, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    if constexpr (Num<T>::is_float) {
        matmul_float<D, T>(c, acc, a, b, ta, tb, mm_kernel());
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

// c[i][j] += bias[0][j] after the K sum: one float add, or a wrapping int32 add.
template <class D> inline void add_bias(Tile<D> c, Tile<D> bias) {
    for (int32_t i = 0; i < c.rows; ++i)
        for (int32_t j = 0; j < c.cols; ++j) {
            if constexpr (Num<D>::is_float) ref(c, i, j) = at(c, i, j) + at(bias, 0, j);
            else ref(c, i, j) = D(int32_t(uint32_t(at(c, i, j)) + uint32_t(at(bias, 0, j))));
        }
}

// The MX product of every element of c (padding too; see the header comment), then acc
// (one float add) or the bias row added, and a NaN made the canonical one.
template <class A, class B>
__attribute__((noinline)) void matmul_mx(Tile<float> c, const Tile<float> *acc, Tile<A> a, Tile<fp8e8m0> sa,
                                         Tile<B> b, Tile<fp8e8m0> sb, const Tile<float> *bias) {
    const int64_t m = c.rows, n = c.cols, k_len = a.vcols, groups = (k_len + 31) / 32;
    double *const va = new double[m * k_len + k_len * n + m * groups + groups * n];
    double *const vb = va + m * k_len, *const vsa = vb + k_len * n, *const vsb = vsa + m * groups;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < k_len; ++k) va[i * k_len + k] = double(to_float(at(a, int32_t(i), int32_t(k))));
    for (int64_t k = 0; k < k_len; ++k)
        for (int64_t j = 0; j < n; ++j) vb[k * n + j] = double(to_float(at(b, int32_t(k), int32_t(j))));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t g = 0; g < groups; ++g) vsa[i * groups + g] = double(to_float(at(sa, int32_t(i), int32_t(g))));
    for (int64_t g = 0; g < groups; ++g)
        for (int64_t j = 0; j < n; ++j) vsb[g * n + j] = double(to_float(at(sb, int32_t(g), int32_t(j))));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            float s = 0.0f;
            for (int64_t k = 0; k < k_len; ++k) {
                const double scale = vsa[i * groups + k / 32] * vsb[(k / 32) * n + j];
                s = float(double(s) + va[i * k_len + k] * vb[k * n + j] * scale);
            }
            if (acc) s = at(*acc, int32_t(i), int32_t(j)) + s;
            if (bias) s = s + at(*bias, 0, int32_t(j));
            ref(c, int32_t(i), int32_t(j)) = mm_result<float>(s);
        }
    }
    delete[] va;
}

}  // namespace detail

/* c = a @ b with block scales (TMATMUL_MX): a in Left, sa in LeftScale, b in Right, sb in
 * RightScale, c in Acc (see the header comment); the acc form adds acc after the sum (c may be
 * acc), the bias form the one-row bias. */
template <class A, class B>
inline void tmatmul_mx(Tile<float> c, Tile<A> a, Tile<fp8e8m0> sa, Tile<B> b, Tile<fp8e8m0> sb) {
    detail::matmul_mx<A, B>(c, nullptr, a, sa, b, sb, nullptr);
}
template <class A, class B>
inline void tmatmul_mx_acc(Tile<float> c, Tile<float> acc, Tile<A> a, Tile<fp8e8m0> sa, Tile<B> b,
                           Tile<fp8e8m0> sb) {
    detail::matmul_mx<A, B>(c, &acc, a, sa, b, sb, nullptr);
}
template <class A, class B>
inline void tmatmul_mx_bias(Tile<float> c, Tile<A> a, Tile<fp8e8m0> sa, Tile<B> b, Tile<fp8e8m0> sb,
                            Tile<float> bias) {
    detail::matmul_mx<A, B>(c, nullptr, a, sa, b, sb, &bias);
}

/* c = a @ b (TMATMUL): a in Left, b in Right, c in Acc. */
template <class D, class T> inline void tmatmul(Tile<D> c, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    detail::matmul<D, T>(c, nullptr, a, b, ta, tb);
}

/* c = acc + a @ b (TMATMUL_ACC); c may be acc. */
template <class D, class T> inline void tmatmul_acc(Tile<D> c, Tile<D> acc, Tile<T> a, Tile<T> b, bool ta, bool tb) {
    detail::matmul<D, T>(c, &acc, a, b, ta, tb);
}

/* TGEMV / TGEMV_ACC: the products of a one-row a, summed as tmatmul sums them (pto-isa's
 * CPU model runs them as its TMATMUL). */
template <class D, class T> inline void tgemv(Tile<D> c, Tile<T> a, Tile<T> b, bool, bool) {
    detail::matmul<D, T>(c, nullptr, a, b, false, false);
}
template <class D, class T> inline void tgemv_acc(Tile<D> c, Tile<D> acc, Tile<T> a, Tile<T> b, bool, bool) {
    detail::matmul<D, T>(c, &acc, a, b, false, false);
}

/* c = a @ b + bias (TMATMUL_BIAS, TGEMV_BIAS): the sum from zero as tmatmul forms it, then
 * the one-row bias (in the Bias buffer, of c's type) added to every row after the last K
 * step, one float add (int32: wrapping), as pto-isa's CPU model adds it. */
template <class D, class T> inline void tmatmul_bias(Tile<D> c, Tile<T> a, Tile<T> b, Tile<D> bias, bool ta, bool tb) {
    detail::matmul<D, T>(c, nullptr, a, b, ta, tb);
    detail::add_bias<D>(c, bias);
}
template <class D, class T> inline void tgemv_bias(Tile<D> c, Tile<T> a, Tile<T> b, Tile<D> bias, bool, bool) {
    tmatmul_bias<D, T>(c, a, b, bias, false, false);
}

}  // namespace pto

#endif /* PTO_MATMUL_HPP */
