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

template <class T> inline T &table_at(const PtoTensor &t, int64_t r, int64_t c) {
    return static_cast<T *>(t.data)[r * row_stride(t) + c * col_stride(t)];
}

template <class T> inline void zero_tile(Tile<T> dst) {
    for (int64_t k = 0; k < int64_t(dst.rows) * dst.cols; ++k) dst.data[k] = pad_zero<T>();
}

// coalesce="row": dst row r (r < dst.vrows) is row idx[0][r].
template <class T, class I> inline void mgather_row(Tile<T> dst, const PtoTensor &src, Tile<I> idx, GatherOob oob) {
    const uint64_t capacity = uint64_t(detail::tensor_rows(src));
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

/* pl.tile.mscatter(src, idx, dst): element idx[r][c] of dst is src[r][c], in row-major
 * order of src (the later of two with one index stays). */
template <class T, class I> inline void tmscatter(const PtoTensor &dst, Tile<T> src, Tile<I> idx) {
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

}  // namespace pto

#endif /* PTO_GATHER_HPP */
