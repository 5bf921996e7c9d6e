/*
 * pypto artifact ABI: the contract between generated kernels, generated
 * orchestration code and the Python runtime (which mirrors it with ctypes in
 * pypto/runtime/abi.py).  Bump PTO_ABI_VERSION on any layout change: the
 * loader refuses artifacts whose manifest records another version.
 */
#ifndef PTO_ABI_H
#define PTO_ABI_H

#include <stdint.h>

#define PTO_ABI_VERSION 1
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
    PTO_FP8E5M2 = 12
};

enum PtoArgKind { PTO_ARG_TENSOR = 0, PTO_ARG_INT = 1, PTO_ARG_FLOAT = 2 };
enum PtoDirection { PTO_IN = 0, PTO_OUT = 1, PTO_INOUT = 2 };

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
    int32_t direction; /* PtoDirection; meaningful for tensors only */
    PtoTensor tensor;
    int64_t i;
    double f;
} PtoArg;

/* One simulated core: its on-chip buffers, each of the backend's capacity. */
typedef struct PtoCore {
    uint8_t *vec;
    uint8_t *mat;
    uint8_t *left;
    uint8_t *right;
    uint8_t *acc;
    int32_t core_id;
} PtoCore;

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
     * t->data and row-major t->stride.  Returns 0 on success. */
    int32_t (*alloc_tensor)(void *ctx, PtoTensor *t);
} PtoRuntimeApi;

/* Exported by the orchestration shared object:
 *   int32_t pypto_orchestrate(const PtoRuntimeApi *api, const PtoArg *params);
 * returns 0 on success, non-zero when a submit or allocation failed. */
typedef int32_t (*PtoOrchestrateFn)(const PtoRuntimeApi *api, const PtoArg *params);

#endif /* PTO_ABI_H */
