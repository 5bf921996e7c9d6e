/*
 * Gathers and scatters between a global tensor and tiles through an index tile
 * (pl.tile.mgather / pl.tile.mscatter; pto-isa's MGATHER / MSCATTER), as pto-isa's CPU
 * model computes them:
 *  - An index (int32_t or uint32_t) is read as the size_t the CPU model converts it to: a
 *    negative int32_t is 2**64 + i, past every end.
 *  - Row coalesce: dst row r is the tensor's row idx[0][r]; capacity is the tensor's rows.
 *    Element coalesce: dst[r][c] is element idx[r][c] of the tensor in row-major order;
 *    capacity is its element count, and the tensor must be packed (its rows adjacent, as
 *    the CPU model reads data()[index]).
 *  - The out-of-range policy: Clamp reads capacity - 1, Wrap index % capacity, Zero gives
 *    0; Undefined (the caller's promise) and a scatter's index out of range are faults: the
 *    element is skipped and the kernel fails (bounds.hpp's pto_sim_fault, a KernelError).
 *  - Only dst's (src's) valid region is gathered (scattered); a gather's padding holds 0.
 *    A scatter writes in row-major order of src, so of two elements with one index the
 *    later stays.
 *  - Within a tile (pl.tile.gather / gatherb; TGATHER / TGATHERB) an index or byte offset
 *    addresses the source tile's row-major storage; TGATHER gives 0 outside it (the CPU
 *    model's choice), a TGATHERB block reaching past it is a fault.
 *  - pl.tile.scatter (TSCATTER, index form) writes into a copy of its destination tile:
 *    element indexes[r][c] of its row-major storage becomes src[r][c], in row-major order
 *    of the index tile's valid region (the later of two with one index stays); an index
 *    outside the storage is a fault.
 */
#ifndef PTO_GATHER_HPP
#define PTO_GATHER_HPP

#include <stdint.h>

#include "abi.h"
#include "bounds.hpp"

namespace pto {

/* pl.tile.mgather's coalesce= and gather_oob= policies, in upstream's numbering. */
enum class Coalesce : int { Row = 0, Elem = 1 };
enum class GatherOob : int { Undefined = 0, Clamp = 1, Wrap = 2, Zero = 3 };

namespace detail {

template <class I> inline uint64_t table_index(I v) { return uint64_t(int64_t(v)); }

inline int64_t tensor_rows(const PtoTensor &t) { return t.ndim >= 2 ? t.shape[t.ndim - 2] : 1; }
inline int64_t tensor_cols(const PtoTensor &t) { return t.ndim >= 1 ? t.shape[t.ndim - 1] : 1; }

inline void gather_fault(const char *what) {
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
        __builtin_snprintf(pto_sim_fault, sizeof pto_sim_fault, "%s", what);
}

// Refuses (a fault) a tensor whose rows are not adjacent: element coalesce indexes it flat.
inline bool packed(const char *op, const PtoTensor &t) {
    const bool ok = col_stride(t) == 1 && (tensor_rows(t) <= 1 || row_stride(t) == tensor_cols(t));
    if (!ok) {
        char what[128];
        __builtin_snprintf(what, sizeof what, "%s: the tensor's rows are not adjacent (a view)", op);
        gather_fault(what);
    }
    return ok;
}

// The index `v` remapped by the policy into [0, capacity), or false (a fault for
// Undefined, a zero for Zero).
template <class I> inline bool remap(const char *op, I v, uint64_t capacity, GatherOob oob, uint64_t &index) {
    index = table_index(v);
    if (index < capacity) return true;
    switch (oob) {
    case GatherOob::Clamp: index = capacity - 1; return true;
    case GatherOob::Wrap: index %= capacity; return true;
    case GatherOob::Zero: return false;
    default: break;
    }
    char what[160];
    __builtin_snprintf(what, sizeof what, "%s: index %lld lies outside [0, %llu)", op,
                       (long long)int64_t(v), (unsigned long long)capacity);
    gather_fault(what);
    return false;
}

// The rows the row forms index: a tensor of rank > 2 is read as its rows ([A, B, 1, d] is
// A * B rows of d), which needs its leading dims adjacent (a fault, and 0 rows, otherwise).
inline int64_t table_rows(const char *op, const PtoTensor &t) {
    int64_t rows = tensor_rows(t);
    for (int32_t i = int32_t(t.ndim) - 3; i >= 0; --i) {
        if (t.shape[i] > 1 && t.stride[i] != t.shape[i + 1] * t.stride[i + 1]) {
            char what[128];
            __builtin_snprintf(what, sizeof what, "%s: the tensor's rows are not adjacent (a view)", op);
            gather_fault(what);
            return 0;
        }
        rows *= t.shape[i];
    }
    return rows;
}

template <class T> inline T &table_at(const PtoTensor &t, int64_t r, int64_t c) {
    return static_cast<T *>(t.data)[r * row_stride(t) + c * col_stride(t)];
}

template <class T> inline void zero_tile(Tile<T> dst) {
    for (int64_t k = 0; k < int64_t(dst.rows) * dst.cols; ++k) dst.data[k] = pad_zero<T>();
}

// coalesce="row": dst row r (r < dst.vrows) is row idx[0][r].
template <class T, class I> inline void mgather_row(Tile<T> dst, const PtoTensor &src, Tile<I> idx, GatherOob oob) {
    const uint64_t capacity = uint64_t(detail::table_rows("mgather (row)", src));
    if (capacity == 0) return;
    for (int32_t r = 0; r < dst.vrows; ++r) {
        uint64_t row;
        if (!detail::remap("mgather (row)", idx.data[r], capacity, oob, row)) continue;
        for (int32_t c = 0; c < dst.vcols; ++c) detail::ref(dst, r, c) = detail::table_at<T>(src, int64_t(row), c);
    }
}

// coalesce="elem": dst[r][c] is element idx[r][c] of src.
template <class T, class I> inline void mgather_elem(Tile<T> dst, const PtoTensor &src, Tile<I> idx, GatherOob oob) {
    if (!detail::packed("mgather (elem)", src)) return;
    const int64_t cols = detail::tensor_cols(src);
    const uint64_t capacity = uint64_t(detail::tensor_rows(src) * cols);
    for (int32_t r = 0; r < dst.vrows; ++r)
        for (int32_t c = 0; c < dst.vcols; ++c) {
            uint64_t k;
            if (detail::remap("mgather (elem)", detail::at(idx, r, c), capacity, oob, k))
                detail::ref(dst, r, c) = detail::table_at<T>(src, int64_t(k) / cols, int64_t(k) % cols);
        }
}

}  // namespace detail

/* pl.tile.mgather(mem, idx, coalesce, gather_oob): dst's valid region gathered, its padding 0. */
template <class T, class I>
inline void tmgather(Tile<T> dst, const PtoTensor &src, Tile<I> idx, Coalesce coalesce, GatherOob oob) {
    detail::zero_tile(dst);
    if (coalesce == Coalesce::Row) detail::mgather_row(dst, src, idx, oob);
    else detail::mgather_elem(dst, src, idx, oob);
}

/* pl.tile.mscatter(src, idx, dst, coalesce): coalesce="elem": element idx[r][c] of dst is
 * src[r][c]; coalesce="row": row idx[0][r] of dst is row r of src.  Written in row-major
 * order of src (the later of two with one index stays). */
template <class T, class I>
inline void tmscatter(const PtoTensor &dst, Tile<T> src, Tile<I> idx, Coalesce coalesce) {
    if (coalesce == Coalesce::Row) {
        const uint64_t capacity = uint64_t(detail::table_rows("mscatter (row)", dst));
        if (capacity == 0) return;
        for (int32_t r = 0; r < src.vrows; ++r) {
            uint64_t row;
            if (!detail::remap("mscatter (row)", idx.data[r], capacity, GatherOob::Undefined, row)) continue;
            for (int32_t c = 0; c < src.vcols; ++c) detail::table_at<T>(dst, int64_t(row), c) = detail::at(src, r, c);
        }
        return;
    }
    if (!detail::packed("mscatter", dst)) return;
    const int64_t cols = detail::tensor_cols(dst);
    const uint64_t capacity = uint64_t(detail::tensor_rows(dst) * cols);
    for (int32_t r = 0; r < src.vrows; ++r)
        for (int32_t c = 0; c < src.vcols; ++c) {
            uint64_t k;
            if (detail::remap("mscatter", detail::at(idx, r, c), capacity, GatherOob::Undefined, k))
                detail::table_at<T>(dst, int64_t(k) / cols, int64_t(k) % cols) = detail::at(src, r, c);
        }
}

/* pl.tile.gather(src, indices, tmp) (TGATHER, index form): dst[r][c] is element
 * indices[r][c] of src's storage, 0 outside it (pto-isa's CPU model); tmp is the device's
 * scratch. */
template <class T>
inline void tgather(Tile<T> dst, Tile<T> src, Tile<int32_t> indices, Tile<int32_t>) {
    detail::zero_tile(dst);
    const int64_t n = int64_t(src.rows) * src.cols;
    for (int32_t r = 0; r < dst.vrows; ++r)
        for (int32_t c = 0; c < dst.vcols; ++c) {
            const int64_t k = detail::at(indices, r, c);
            if (k >= 0 && k < n) detail::ref(dst, r, c) = src.data[k];
        }
}

/* pl.tile.gatherb(src, offsets) (TGATHERB): block c (32 bytes) of dst row r is the 32 bytes
 * of src's storage from byte offsets[r][c]; a block past src's end is a fault. */
template <class T> inline void tgatherb(Tile<T> dst, Tile<T> src, Tile<uint32_t> offsets) {
    detail::zero_tile(dst);
    constexpr int32_t per = 32 / int32_t(sizeof(T));
    const uint64_t bytes = uint64_t(src.rows) * src.cols * sizeof(T);
    for (int32_t r = 0; r < dst.vrows; ++r)
        for (int32_t c = 0; c < dst.vcols / per; ++c) {
            const uint64_t from = detail::at(offsets, r, c);
            if (from + 32 > bytes) {
                char what[128];
                __builtin_snprintf(what, sizeof what, "gatherb: a block at byte %llu reaches past the "
                                   "tile's %llu bytes", (unsigned long long)from, (unsigned long long)bytes);
                detail::gather_fault(what);
                continue;
            }
            __builtin_memcpy(&detail::ref(dst, r, c * per), reinterpret_cast<const uint8_t *>(src.data) + from, 32);
        }
}

/* pl.tile.scatter(dst, src, indexes) (TSCATTER, index form): out is dst with element
 * indexes[r][c] of its row-major storage set to src[r][c].  out is dst's buffer or one of
 * its own, which may be src's or indexes' (a name rebound): those are read first. */
template <class T, class I> inline void tscatter(Tile<T> out, Tile<T> dst, Tile<T> src, Tile<I> idx) {
    const int64_t n = int64_t(out.rows) * out.cols, m = int64_t(idx.vrows) * idx.vcols;
    T *values = new T[m > 0 ? m : 1];
    uint64_t *at = new uint64_t[m > 0 ? m : 1];
    for (int32_t r = 0; r < idx.vrows; ++r)
        for (int32_t c = 0; c < idx.vcols; ++c) {
            values[int64_t(r) * idx.vcols + c] = detail::at(src, r, c);
            at[int64_t(r) * idx.vcols + c] = detail::table_index(detail::at(idx, r, c));
        }
    if (out.data != dst.data) __builtin_memmove(out.data, dst.data, size_t(n) * sizeof(T));
    for (int64_t k = 0; k < m; ++k) {
        if (at[k] < uint64_t(n)) {
            out.data[at[k]] = values[k];
            continue;
        }
        char what[128];
        __builtin_snprintf(what, sizeof what, "tile.scatter: index %lld lies outside the tile's [0, %lld)",
                           (long long)int64_t(at[k]), (long long)n);
        detail::gather_fault(what);
    }
    delete[] values;
    delete[] at;
}

}  // namespace pto

#endif /* PTO_GATHER_HPP */
