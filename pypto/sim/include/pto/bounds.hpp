/*
 * Bounds checks of the simulators' global-memory accesses.  isa.hpp's tload / tstore /
 * tstore_atomic_add start with PTO_CHECK_WINDOW: a window outside the global tensor's
 * shape is skipped (nothing is read or written) and the kernel's first such fault is
 * described in pto_sim_fault.  The runtime reads the record after each run and raises a
 * KernelError naming the kernel (pypto/runtime/loader.py).  Every sim build checks
 * windows: a task's view of a tensor may be cut back to the tensor's edge at run time (a
 * slice reaching past its end, orchestration.cpp.j2), and what lies beyond is refused,
 * never read.  A sim debug build (PYPTO_SIM_DEBUG=1, PTO_SIM_BOUNDS_CHECK) also checks
 * element reads of tiles (scalar.hpp).
 *
 * PTO_OBSERVE_WINDOW hands each window tload / tstore / tstore_atomic_add touches (once it
 * passed the bounds check, before the access) to the calling thread's window observer:
 * null but on the threads of a gang kernel's blocks, where pto/gang.hpp checks the
 * cross-block cache protocol.
 */
#ifndef PTO_BOUNDS_HPP
#define PTO_BOUNDS_HPP

#include <stdint.h>

#include "abi.h"

extern "C" {
__attribute__((weak, visibility("default"))) int pto_sim_fault_count = 0;
__attribute__((weak, visibility("default"))) char pto_sim_fault[256] = {0};
}

namespace pto {
namespace detail {
inline bool window_inside(const char *op, const PtoTensor &t, int64_t r0, int64_t c0,
                          int32_t rows, int32_t cols) {
    const int64_t trows = t.ndim >= 2 ? t.shape[t.ndim - 2] : 1;
    const int64_t tcols = t.ndim >= 1 ? t.shape[t.ndim - 1] : 1;
    if (r0 >= 0 && c0 >= 0 && r0 + rows <= trows && c0 + cols <= tcols) return true;
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
        __builtin_snprintf(pto_sim_fault, sizeof pto_sim_fault,
                           "%s of a [%d, %d] window at [%lld, %lld] lies outside the tensor "
                           "[%lld, %lld]", op, rows, cols, (long long)r0, (long long)c0,
                           (long long)trows, (long long)tcols);
    return false;
}
/* Whether b indexes the batch dimension of a rank-3 tensor [B, rows, cols] (a tile load
 * or store of one batch); otherwise the fault is recorded as window_inside records it. */
inline bool batch_inside(const char *op, const PtoTensor &t, int64_t b) {
    const int64_t batches = t.ndim >= 3 ? t.shape[t.ndim - 3] : 1;
    if (b >= 0 && b < batches) return true;
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
        __builtin_snprintf(pto_sim_fault, sizeof pto_sim_fault,
                           "%s of batch %lld lies outside the tensor's %lld batches", op,
                           (long long)b, (long long)batches);
    return false;
}
/* Whether `slot` is one of a declared allocation's `slots` (pl.MemRef(name, slots=n)[slot]);
 * otherwise the fault is recorded and the tile stays in slot 0. */
inline bool slot_inside(int64_t slot, int64_t slots) {
    if (slot >= 0 && slot < slots) return true;
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
        __builtin_snprintf(pto_sim_fault, sizeof pto_sim_fault,
                           "pl.MemRef slot %lld lies outside the allocation's %lld slots",
                           (long long)slot, (long long)slots);
    return false;
}
/* What sees a thread's global-memory windows: `rows` rows of `cols` elements of
 * `elem_bytes` from `base`, strides in bytes; `write`, `atomic`: how it is touched. */
typedef void (*WindowObserver)(bool write, bool atomic, const void *base, int64_t row_stride,
                               int64_t col_stride, int32_t rows, int32_t cols, int32_t elem_bytes);
inline WindowObserver &window_observer() {
    static thread_local WindowObserver observer = nullptr;
    return observer;
}
/* Whether a window of a 4-bit tensor (two elements a byte) lies on whole bytes: a unit
 * column stride, and an even row stride, column offset and valid width (the compiler checks
 * what it knows; a width or an offset known at run time is checked here); otherwise the
 * fault is recorded and nothing is moved. */
inline bool whole_bytes(const char *op, int64_t rs, int64_t cs, int64_t c0, int32_t cols) {
    if (cs == 1 && rs % 2 == 0 && c0 % 2 == 0 && cols % 2 == 0) return true;
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
        __builtin_snprintf(pto_sim_fault, sizeof pto_sim_fault,
                           "%s of a 4-bit window at column %lld, %d columns wide (row stride "
                           "%lld, column stride %lld), does not lie on whole bytes", op,
                           (long long)c0, cols, (long long)rs, (long long)cs);
    return false;
}
}  // namespace detail
}  // namespace pto

#define PTO_CHECK_BYTES(op, rs, cs, c0, cols) \
    if (!::pto::detail::whole_bytes(op, rs, cs, c0, cols)) return

#define PTO_CHECK_WINDOW(op, t, r0, c0, rows, cols) \
    if (!::pto::detail::window_inside(op, t, r0, c0, rows, cols)) return

#define PTO_OBSERVE_WINDOW(write, atomic, base, rs, cs, rows, cols, T)                        \
    if (::pto::detail::WindowObserver pto_observer_ = ::pto::detail::window_observer())      \
    pto_observer_(write, atomic, base, (rs) * int64_t(sizeof(T)), (cs) * int64_t(sizeof(T)), \
                  rows, cols, int32_t(sizeof(T)))

#endif /* PTO_BOUNDS_HPP */
