/*
 * pypto artifact ABI: the contract between generated kernels, generated
 * orchestration code and the Python runtime (which mirrors it with ctypes in
 * pypto/runtime/abi.py).  Bump PTO_ABI_VERSION on any layout change: the
 * loader refuses artifacts whose manifest records another version.
 */
#ifndef PTO_ABI_H
#define PTO_ABI_H

#include <stdint.h>

#define PTO_ABI_VERSION 6
#define PTO_MAX_RANK 4

/* Element type codes; pypto/ir/dtypes.py holds the same numbering. */
enum PtoDType {
    PTO_BOOL = 0,
    PTO_INT8 = 1,
    PTO_INT16 = 2,
    PTO_INT32 = 3,
    PTO_INT64 = 4,
    PTO_UINT8 = 5,
    PTO_UINT16 = 6,
    PTO_UINT32 = 7,
    PTO_FP16 = 8,
    PTO_BF16 = 9,
    PTO_FP32 = 10,
    PTO_FP8E4M3FN = 11,
    PTO_FP8E5M2 = 12,
    PTO_HF8 = 13,
    PTO_FP8E8M0 = 14,
    PTO_UINT64 = 15,
    /* 4-bit: two elements to a byte (the even one in the low nibble); shapes and strides
     * count elements, a tensor's data points at its first byte. */
    PTO_FP4 = 16,
    PTO_HF4 = 17,
    PTO_INT4 = 18,
    PTO_UINT4 = 19
};

enum PtoArgKind { PTO_ARG_TENSOR = 0, PTO_ARG_INT = 1, PTO_ARG_FLOAT = 2 };
/* How a task uses a tensor argument; the runtime infers dependencies from it.
 * PTO_ACCUM: the task only atomically adds into the tensor (it commutes with other
 * accumulators of the same bytes).  OR-ing PTO_NO_DEP into a direction opts the argument
 * out of dependency inference (pl.manual_scope / no_dep_args=): the task waits for
 * nobody through it, and a write through it joins the bytes' set of unordered writers,
 * which every later inferred access waits for.  OR-ing PTO_DUMP marks the argument for
 * the runtime's tensor dumps (pl.dump_tag / dumps=; taken at enable_dump_args=1). */
enum PtoDirection { PTO_IN = 0, PTO_OUT = 1, PTO_INOUT = 2, PTO_ACCUM = 3 };
#define PTO_NO_DEP 0x100
#define PTO_DUMP 0x200
#define PTO_DIRECTION_MASK 0xff

/* Task flags: the last argument of `dispatch`.  PTO_TASK_EARLY_RESOLVE
 * (`allow_early_resolve=True`) is a scheduling hint with no effect on results: a task
 * whose predecessors all carry it (or have finished) is staged to start the moment its
 * last predecessor ends, ahead of tasks that became ready earlier. */
#define PTO_TASK_EARLY_RESOLVE 0x1
/* PTO_TASK_GANG: the kernel runs every block of the dispatch itself, at once (a kernel
 * with a pl.system.syncall, pto/gang.hpp): the runtime calls it once, as block 0 of
 * `blocks`, on one core, and records all the dispatch's tasks as run by that call. */
#define PTO_TASK_GANG 0x2

/* A view of global memory.  Strides are in elements. */
typedef struct PtoTensor {
    void *data;
    int64_t shape[PTO_MAX_RANK];
    int64_t stride[PTO_MAX_RANK];
    int32_t ndim;
    int32_t dtype;
} PtoTensor;

/* One kernel or orchestration argument. */
typedef struct PtoArg {
    int32_t kind;      /* PtoArgKind */
    int32_t direction; /* PtoDirection, maybe | PTO_NO_DEP | PTO_DUMP; meaningful for tensors only */
    PtoTensor tensor;
    int64_t i;
    double f;
} PtoArg;

/* One simulated core: its on-chip buffers, each of the backend's capacity (the MX scale
 * buffers left_scale / right_scale have none on a backend without them), and the block of
 * the SPMD dispatch the running task is (block 0 of 1 for a plain task). */
typedef struct PtoCore {
    uint8_t *vec;
    uint8_t *mat;
    uint8_t *left;
    uint8_t *right;
    uint8_t *acc;
    uint8_t *bias;
    uint8_t *left_scale;
    uint8_t *right_scale;
    int32_t core_id;
    int32_t block_idx;
    int32_t block_num;
} PtoCore;

/* Tasks first .. first + count - 1: what one dispatch submitted (a task id). */
typedef struct PtoTaskIds {
    int64_t first;
    int64_t count;
} PtoTaskIds;

/* Exported by each kernel shared object under the kernel's name. */
typedef void (*PtoKernelFn)(PtoCore *core, const PtoArg *args);

/* Services the runtime offers to orchestration code. */
typedef struct PtoRuntimeApi {
    void *ctx;
    /* Submits one task of kernel `kernel_index` (manifest order); returns its
     * task id (>= 0), or a negative value when the runtime refused it. */
    int64_t (*submit)(void *ctx, int32_t kernel_index, int32_t nargs, const PtoArg *args,
                      int32_t ndeps, const int64_t *deps);
    /* Allocates a scratch tensor of t->dtype / t->shape / t->ndim; fills
     * t->data and row-major t->stride.  `name` (may be null) labels it in
     * diagnostics and dependency graphs.  Returns 0 on success. */
    int32_t (*alloc_tensor)(void *ctx, PtoTensor *t, const char *name);
    /* Dispatches kernel `kernel_index` as `blocks` tasks with consecutive ids, one
     * per SPMD block (block b runs with core->block_idx == b), all ordered after
     * every task of the `ndeps` ranges in `deps` and after what inference finds;
     * blocks of one dispatch are not ordered against each other (with PTO_TASK_GANG they
     * run at once, in one call).  Returns the first id, or a negative value when the
     * runtime refused the dispatch.  `flags`: PTO_TASK_* bits. */
    int64_t (*dispatch)(void *ctx, int32_t kernel_index, int32_t nargs, const PtoArg *args,
                        int32_t ndeps, const PtoTaskIds *deps, int64_t blocks, int32_t flags);
    /* Opens / closes a runtime scope (`pl.scope()`).  A task dispatched at scope depth d
     * takes its slot, dependency entries and the scratch tensors allocated at that depth
     * from ring min(d, 3); the scope holds its tasks' slots until it closes.  0 on
     * success; a scope_end without a scope open is refused. */
    int32_t (*scope_begin)(void *ctx);
    int32_t (*scope_end)(void *ctx);
} PtoRuntimeApi;

/* Exported by the orchestration shared object:
 *   int32_t pypto_orchestrate(const PtoRuntimeApi *api, const PtoArg *params);
 * returns 0 on success, non-zero when a submit or allocation failed. */
typedef int32_t (*PtoOrchestrateFn)(const PtoRuntimeApi *api, const PtoArg *params);

#endif /* PTO_ABI_H */
