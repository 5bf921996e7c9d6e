// Test driver: exposes the simulator's tile instructions over flat arrays so
// tests/sim/test_sim_isa.py can call them through ctypes.
#include "sim_types.hpp"

namespace {

// Arithmetic is exercised on the types kernels compute in.
template <class F> int with_arith_type(int code, F f) {
    switch (code) {
    case PTO_INT8: f(int8_t()); return 0;
    case PTO_INT32: f(int32_t()); return 0;
    case PTO_INT64: f(int64_t()); return 0;
    case PTO_UINT8: f(uint8_t()); return 0;
    case PTO_FP16: f(f16()); return 0;
    case PTO_BF16: f(bf16()); return 0;
    case PTO_FP32: f(float()); return 0;
    default: return -1;
    }
}

template <class T> Tile<T> tile_over(const void *p, int32_t rows, int32_t cols, int32_t vrows, int32_t vcols) {
    return make_tile<T>(static_cast<uint8_t *>(const_cast<void *>(p)), 0, rows, cols, vrows, vcols);
}

PtoTensor tensor(void *data, int ndim, const int64_t *shape, const int64_t *stride, int dtype) {
    PtoTensor t = {};
    t.data = data;
    t.ndim = ndim;
    t.dtype = dtype;
    for (int i = 0; i < ndim; ++i) {
        t.shape[i] = shape[i];
        t.stride[i] = stride[i];
    }
    return t;
}

template <class T> T pad_of(int kind) { return kind == 0 ? pad_zero<T>() : kind == 1 ? pad_max<T>() : pad_min<T>(); }

}  // namespace

extern "C" {

// op: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min on rows x cols tiles with valid region
// (vrows, vcols); dst may be a or b.
int sim_binary(int dtype, int op, void *dst, const void *a, const void *b, int32_t rows, int32_t cols,
               int32_t vrows, int32_t vcols) {
    int rc = 0;
    const int outer = with_arith_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        Tile<T> d = tile_over<T>(dst, rows, cols, vrows, vcols), x = tile_over<T>(a, rows, cols, vrows, vcols),
                y = tile_over<T>(b, rows, cols, vrows, vcols);
        switch (op) {
        case 0: tadd(d, x, y); break;
        case 1: tsub(d, x, y); break;
        case 2: tmul(d, x, y); break;
        case 3: tdiv(d, x, y); break;
        case 4: tmax(d, x, y); break;
        case 5: tmin(d, x, y); break;
        default: rc = -1;
        }
    });
    return outer ? outer : rc;
}

// op: 0 exp, 1 log, 2 sqrt, 3 rsqrt, 4 recip (float tiles), 5 neg, 6 abs, 7 relu (all tiles).
int sim_unary(int dtype, int op, void *dst, const void *a, int32_t rows, int32_t cols) {
    int rc = 0;
    const int outer = with_arith_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        Tile<T> d = tile_over<T>(dst, rows, cols, rows, cols), x = tile_over<T>(a, rows, cols, rows, cols);
        if constexpr (detail::Num<T>::is_float) {
            switch (op) {
            case 0: texp(d, x); return;
            case 1: tlog(d, x); return;
            case 2: tsqrt(d, x); return;
            case 3: trsqrt(d, x); return;
            case 4: trecip(d, x); return;
            }
        }
        switch (op) {
        case 5: tneg(d, x); break;
        case 6: tabs(d, x); break;
        case 7: trelu(d, x); break;
        default: rc = -1;
        }
    });
    return outer ? outer : rc;
}

// op: 0 adds, 1 subs, 2 muls, 3 divs, 4 maxs, 5 mins, 6 rsubs (s - a), 7 rdivs (s / a),
// 8 rmaxs (max(s, a)), 9 rmins (min(s, a)).
int sim_scalar(int dtype, int op, void *dst, const void *a, double s, int32_t rows, int32_t cols) {
    int rc = 0;
    const int outer = with_arith_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        Tile<T> d = tile_over<T>(dst, rows, cols, rows, cols), x = tile_over<T>(a, rows, cols, rows, cols);
        switch (op) {
        case 0: tadds(d, x, s); break;
        case 1: tsubs(d, x, s); break;
        case 2: tmuls(d, x, s); break;
        case 3: tdivs(d, x, s); break;
        case 4: tmaxs(d, x, s); break;
        case 5: tmins(d, x, s); break;
        case 6: trsubs(d, x, s); break;
        case 7: trdivs(d, x, s); break;
        case 8: trmaxs(d, x, s); break;
        case 9: trmins(d, x, s); break;
        default: rc = -1;
        }
    });
    return outer ? outer : rc;
}

// Writes pad_zero/max/min (kind 0/1/2) of dtype to *out.
int sim_pad(int dtype, int kind, void *out) {
    return with_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        *static_cast<T *>(out) = pad_of<T>(kind);
    });
}

// tload of the window at (r0, c0) into a tile placed at vec + addr, padding with pad kind.
int sim_tload(int dtype, void *data, int ndim, const int64_t *shape, const int64_t *stride, int64_t r0,
              int64_t c0, uint8_t *vec, int64_t addr, int32_t rows, int32_t cols, int32_t vrows, int32_t vcols,
              int pad_kind) {
    const PtoTensor t = tensor(data, ndim, shape, stride, dtype);
    return with_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        tload(make_tile<T>(vec, addr, rows, cols, vrows, vcols), t, r0, c0, pad_of<T>(pad_kind));
    });
}

// tstore of the tile at vec + addr to the window at (r0, c0).
int sim_tstore(int dtype, void *data, int ndim, const int64_t *shape, const int64_t *stride, int64_t r0,
               int64_t c0, uint8_t *vec, int64_t addr, int32_t rows, int32_t cols, int32_t vrows, int32_t vcols) {
    const PtoTensor t = tensor(data, ndim, shape, stride, dtype);
    return with_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        tstore(t, r0, c0, make_tile<T>(vec, addr, rows, cols, vrows, vcols));
    });
}

// tcvt FP32 -> FP16 between two tiles that share the valid region (vrows, vcols).
void sim_tcvt_f32_f16(uint16_t *dst, int32_t dcols, const float *src, int32_t scols, int32_t rows, int32_t vrows,
                      int32_t vcols, int mode) {
    tcvt(tile_over<f16>(dst, rows, dcols, vrows, vcols), tile_over<float>(src, rows, scols, vrows, vcols),
         RoundMode(mode));
}

// texpands of an FP32 tile whose valid region is (vrows, vcols).
void sim_texpands_f32(float *dst, int32_t rows, int32_t cols, int32_t vrows, int32_t vcols, float value) {
    texpands(tile_over<float>(dst, rows, cols, vrows, vcols), value);
}

// tfillpad of an FP32 tile with valid region (vrows, vcols) into dst (which may be src).
void sim_tfillpad_f32(float *dst, const float *src, int32_t rows, int32_t cols, int32_t vrows, int32_t vcols,
                      int pad_kind) {
    tfillpad(tile_over<float>(dst, rows, cols, vrows, vcols), tile_over<float>(src, rows, cols, vrows, vcols),
             pad_of<float>(pad_kind));
}

// Reductions of a rows x cols tile: op 0 row sum, 1 row max, 2 row min (dst rows x 1),
// 3 column sum sequential, 4 column sum tree (in tmp), 5 column max, 6 column min (dst 1 x cols).
int sim_reduce(int dtype, int op, void *dst, const void *src, void *tmp, int32_t rows, int32_t cols) {
    int rc = 0;
    const int outer = with_arith_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        Tile<T> x = tile_over<T>(src, rows, cols, rows, cols), t = tile_over<T>(tmp, rows, cols, rows, cols);
        Tile<T> rd = tile_over<T>(dst, rows, 1, rows, 1), cd = tile_over<T>(dst, 1, cols, 1, cols);
        switch (op) {
        case 0: trowsum(rd, x, t); break;
        case 1: trowmax(rd, x, t); break;
        case 2: trowmin(rd, x, t); break;
        case 3: tcolsum(cd, x); break;
        case 4: tcolsum(cd, x, t); break;
        case 5: tcolmax(cd, x); break;
        case 6: tcolmin(cd, x); break;
        default: rc = -1;
        }
    });
    return outer ? outer : rc;
}

// c (m x n) = [acc +] a @ b with a m x k (k x m when ta) and b k x n (n x k when tb).
// kind 0: FP16 inputs -> FP32, 1: BF16 -> FP32, 2: FP32 -> FP32, 3: FP16 -> FP16, 4: INT8 -> INT32.
int sim_matmul(int kind, void *c, const void *acc, const void *a, const void *b, int32_t m, int32_t n, int32_t k,
               int ta, int tb) {
    auto run = [&](auto zd, auto zt) {
        typedef decltype(zd) D;
        typedef decltype(zt) T;
        Tile<D> ct = tile_over<D>(c, m, n, m, n);
        Tile<T> at = ta ? tile_over<T>(a, k, m, k, m) : tile_over<T>(a, m, k, m, k);
        Tile<T> bt = tb ? tile_over<T>(b, n, k, n, k) : tile_over<T>(b, k, n, k, n);
        if (acc)
            tmatmul_acc(ct, tile_over<D>(acc, m, n, m, n), at, bt, ta != 0, tb != 0);
        else
            tmatmul(ct, at, bt, ta != 0, tb != 0);
    };
    switch (kind) {
    case 0: run(float(), f16()); return 0;
    case 1: run(float(), bf16()); return 0;
    case 2: run(float(), float()); return 0;
    case 3: run(f16(), f16()); return 0;
    case 4: run(int32_t(), int8_t()); return 0;
    default: return -1;
    }
}

// The float matmul of sim_matmul (kinds 0-3) on the widest micro-kernel among the first
// widest + 1 of base, AVX2, AVX-512F that the CPU runs; returns that kernel's width in
// columns (8, 16, 32), or -1 for an unknown kind.
int sim_matmul_kernel(int widest, int kind, void *c, const void *acc, const void *a, const void *b, int32_t m,
                      int32_t n, int32_t k, int ta, int tb) {
    const detail::MmKernel kern = detail::mm_kernel(widest);
    auto run = [&](auto zd, auto zt) {
        typedef decltype(zd) D;
        typedef decltype(zt) T;
        Tile<D> ct = tile_over<D>(c, m, n, m, n);
        Tile<T> at = ta ? tile_over<T>(a, k, m, k, m) : tile_over<T>(a, m, k, m, k);
        Tile<T> bt = tb ? tile_over<T>(b, n, k, n, k) : tile_over<T>(b, k, n, k, n);
        Tile<D> acc_t = tile_over<D>(acc, m, n, m, n);
        detail::matmul_float<D, T>(ct, acc ? &acc_t : nullptr, at, bt, ta != 0, tb != 0, kern);
    };
    switch (kind) {
    case 0: run(float(), f16()); break;
    case 1: run(float(), bf16()); break;
    case 2: run(float(), float()); break;
    case 3: run(f16(), f16()); break;
    default: return -1;
    }
    return int(kern.nr);
}

// The definition the tile instructions' fast paths must equal: dst[i] = elem<Op>(a[i], b[i])
// (binary op codes of sim_binary), elem<Op>(a[i], s) (scalar codes of sim_scalar, + 8) or
// elem<Op>(a[i]) (unary codes of sim_unary, + 16) or elem<Op>(s, a[i]) (rmaxs, rmins: 24, 25),
// one element at a time, for FP16 / BF16 /
// FP32 and (no float-only unary ops) INT8 / INT32 / INT64 / UINT8.
int sim_elementwise_reference(int dtype, int op, void *dst, const void *a, const void *b, double s, int64_t n) {
    int rc = 0;
    auto run = [&](auto z) {
        typedef decltype(z) T;
        T *d = static_cast<T *>(dst);
        const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
        const T st = convert<T>(s, RoundMode::Rint);
        for (int64_t i = 0; i < n; ++i) {
            using namespace detail;
            if constexpr (Num<T>::is_float) {
                switch (op) {
                case 16: d[i] = elem<OpExp>(x[i]); continue;
                case 17: d[i] = elem<OpLog>(x[i]); continue;
                case 18: d[i] = elem<OpSqrt>(x[i]); continue;
                case 19: d[i] = elem<OpRsqrt>(x[i]); continue;
                case 20: d[i] = elem<OpRecip>(x[i]); continue;
                }
            }
            switch (op) {
            case 0: d[i] = elem<OpAdd>(x[i], y[i]); break;
            case 1: d[i] = elem<OpSub>(x[i], y[i]); break;
            case 2: d[i] = elem<OpMul>(x[i], y[i]); break;
            case 3: d[i] = elem<OpDiv>(x[i], y[i]); break;
            case 4: d[i] = elem<OpMax>(x[i], y[i]); break;
            case 5: d[i] = elem<OpMin>(x[i], y[i]); break;
            case 8: d[i] = elem<OpAdd>(x[i], st); break;
            case 9: d[i] = elem<OpSub>(x[i], st); break;
            case 10: d[i] = elem<OpMul>(x[i], st); break;
            case 11: d[i] = elem<OpDiv>(x[i], st); break;
            case 12: d[i] = elem<OpMax>(x[i], st); break;
            case 13: d[i] = elem<OpMin>(x[i], st); break;
            case 14: d[i] = elem<OpSub>(st, x[i]); break;
            case 15: d[i] = elem<OpDiv>(st, x[i]); break;
            case 24: d[i] = elem<OpMax>(st, x[i]); break;
            case 25: d[i] = elem<OpMin>(st, x[i]); break;
            case 21: d[i] = elem<OpNeg>(x[i]); break;
            case 22: d[i] = elem<OpAbs>(x[i]); break;
            case 23: d[i] = elem<OpRelu>(x[i]); break;
            default: rc = -1; return;
            }
        }
    };
    switch (dtype) {
    case PTO_FP16: run(f16()); break;
    case PTO_BF16: run(bf16()); break;
    case PTO_FP32: run(float()); break;
    case PTO_INT8: run(int8_t()); break;
    case PTO_INT32: run(int32_t()); break;
    case PTO_INT64: run(int64_t()); break;
    case PTO_UINT8: run(uint8_t()); break;
    default: return -1;
    }
    return rc;
}

// The portable (pre-AVX2) loop of binary FP32 instructions, which x86-64 CPUs with AVX2 never
// take inside tadd & co: dst[i] = elem<Op>(a[i], b[i]) over n elements (sim_binary's codes).
int sim_binary_portable_fp32(int op, float *dst, const float *a, const float *b, int64_t n) {
    using namespace detail;
    auto run = [&](auto o) {
        typedef decltype(o) Op;
        zip_chunks<kWide<Op, float>>(dst, a, b, n, [](float x, float y) { return elem<Op>(x, y); });
    };
    switch (op) {
    case 0: run(OpAdd()); break;
    case 1: run(OpSub()); break;
    case 2: run(OpMul()); break;
    case 3: run(OpDiv()); break;
    case 4: run(OpMax()); break;
    case 5: run(OpMin()); break;
    default: return -1;
    }
    return 0;
}

// The portable loop of unary FP32 instructions (sim_unary's codes), as sim_binary_portable_fp32.
int sim_unary_portable_fp32(int op, float *dst, const float *a, int64_t n) {
    using namespace detail;
    auto run = [&](auto o) {
        typedef decltype(o) Op;
        map_chunks<kWide<Op, float>>(dst, a, n, [](float x) { return elem<Op>(x); });
    };
    switch (op) {
    case 0: run(OpExp()); break;
    case 1: run(OpLog()); break;
    case 2: run(OpSqrt()); break;
    case 3: run(OpRsqrt()); break;
    case 4: run(OpRecip()); break;
    case 5: run(OpNeg()); break;
    case 6: run(OpAbs()); break;
    case 7: run(OpRelu()); break;
    default: return -1;
    }
    return 0;
}

// Broadcasts of rows x cols tiles: op 0 row_expand, 1 row_expand_add, 2 row_expand_mul,
// 3 row_expand_expdif (v rows x 1), 4 col_expand, 5 col_expand_sub, 6 col_expand_div,
// 7 col_expand_expdif (v 1 x cols).
int sim_expand(int dtype, int op, void *dst, const void *x, const void *v, int32_t rows, int32_t cols) {
    int rc = 0;
    const int outer = with_arith_type(dtype, [&](auto z) {
        typedef decltype(z) T;
        if constexpr (detail::Num<T>::is_float) {
            Tile<T> d = tile_over<T>(dst, rows, cols, rows, cols), xt = tile_over<T>(x, rows, cols, rows, cols);
            Tile<T> rv = tile_over<T>(v, rows, 1, rows, 1), cv = tile_over<T>(v, 1, cols, 1, cols);
            switch (op) {
            case 0: trowexpand(d, xt, rv); return;
            case 1: trowexpandadd(d, xt, rv); return;
            case 2: trowexpandmul(d, xt, rv); return;
            case 3: trowexpandexpdif(d, xt, rv); return;
            case 4: tcolexpand(d, xt, cv); return;
            case 5: tcolexpandsub(d, xt, cv); return;
            case 6: tcolexpanddiv(d, xt, cv); return;
            case 7: tcolexpandexpdif(d, xt, cv); return;
            }
        }
        rc = -1;
    });
    return outer ? outer : rc;
}

}  // extern "C"
