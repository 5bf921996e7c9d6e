/*
 * The native scheduler: the fast path of pypto.runtime (see pypto/runtime/native.py).
 *
 * It serves an orchestration's PtoRuntimeApi (submit, dispatch, alloc_tensor) without
 * calling back into Python, infers dependencies exactly as pypto/runtime/scheduler.py
 * does (RAW/WAW from byte ranges, explicit deps, untracked accesses, accumulators), and
 * runs tasks on a process-wide pool of native worker threads: no GIL anywhere between
 * the orchestration's first submit and the last kernel's return.  The Python scheduler
 * stays the reference and the instrumented path; both record the same edges in the same
 * order, and tests run the same programs through both.
 *
 * Failures are recorded as a code plus numbers (PnrError); Python formats the message,
 * so both paths word them identically.  Compiled once per installation by the runtime
 * with the host C++ compiler, keyed by this file's digest.
 */
#include "pto/abi.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define PNR_VERSION 8

namespace {

enum ErrorCode : int32_t {
    ERR_NONE = 0,
    ERR_NDEPS = 1,         /* a: ndeps; position: 0 submit, 1 dispatch */
    ERR_DEP_RANGE = 2,     /* a: count */
    ERR_KERNEL_INDEX = 3,  /* kernel: index, a: kernel count */
    ERR_NARGS = 4,         /* kernel, a: nargs given */
    ERR_ARG_KIND = 5,      /* kernel, position */
    ERR_ARG_FLAGS = 6,     /* kernel, position, a: flags, b: ndim */
    ERR_ARG_DTYPE = 7,     /* kernel, position, a: dtype code */
    ERR_ARG_OUTSIDE = 8,   /* kernel, position, a: start, b: end */
    ERR_DEP_FUTURE = 9,    /* kernel, a: task id, b: dep */
    ERR_BLOCKS = 10,       /* kernel */
    ERR_ALLOC_INVALID = 11, /* a: ndim, b: dtype, shape[4] */
    ERR_ALLOC_FAILED = 12, /* a: bytes */
    ERR_NULL_ARRAY = 13,   /* kernel (-1: unknown), a: count; position: 0 args, 1 deps */
    /* A ring resource that can never be had (position: the ring; a: needed, b: capacity):
     * ERR_RING_WINDOW / ERR_RING_DEP_POOL carry kernel; ERR_RING_HEAP kernel -1.
     * pad: 1 when it could fit but what holds it belongs to a scope still open (the
     * orchestration waits for nothing that could free it), 0 when it exceeds the ring. */
    ERR_RING_WINDOW = 14,
    ERR_RING_HEAP = 15,
    ERR_RING_DEP_POOL = 16,
    ERR_SCOPE_END = 17,    /* scope_end with no scope open */
};

constexpr int kRings = 4;

struct PnrError {
    int32_t code;
    int32_t kernel;
    int32_t position;
    int32_t pad;
    int64_t a;
    int64_t b;
    int64_t shape[PTO_MAX_RANK];
};

struct PnrTaskRecord {
    int64_t task_id;
    int32_t kernel;
    int32_t core_id;  /* -1: never ran */
    int64_t block_idx;
    int64_t block_num;
    int64_t group;
    int64_t start_ns; /* 0: never ran */
    int64_t end_ns;
    const PtoArg *args;
    int64_t pred_offset; /* into the run's predecessor list */
    int64_t pred_count;
    int32_t flags;       /* PTO_TASK_* of its dispatch */
    int32_t staged;      /* 1: released by an early-resolve predecessor (pre-staged) */
    int32_t ring;
    int32_t scope;       /* index into the run's scope records (0: the implicit one) */
};

/* One runtime scope's sample (scope_stats.jsonl): its ring, depth, tasks and the peaks of
 * its ring's three resources while it was open. */
struct PnrScope {
    int32_t depth; /* -1: the implicit top-level scope */
    int32_t ring;
    int64_t tasks;
    int64_t first_task;
    int64_t task_window_peak;
    int64_t heap_peak;
    int64_t dep_pool_peak;
};

struct PnrScratch {
    const char *name; /* empty: unnamed */
    void *data;
    int32_t ndim;
    int32_t dtype;
    int64_t shape[PTO_MAX_RANK];
};

struct PnrEdge {
    int64_t src;
    int64_t dst;
    int32_t kind; /* 0 RAW, 1 WAW (tensormap), 2 explicit */
    int32_t pad;
};

/* On-chip spaces a core has (PtoCore's buffers, memory.ON_CHIP_SPACES). */
#define PNR_SPACES 8

/* One plain call's data movement, done here rather than by a torch op apiece:
 * `copy_in` before the orchestration, `fill` (poison) too, `copy_out` after a run
 * that succeeded.  Each entry is (dst, src, bytes) or, for fills, (dst, bytes, dtype).
 * `on_chip`: bytes [0, n) of each on-chip space (vec, mat, left, right, acc, bias,
 * left_scale, right_scale: PNR_SPACES of them) poisoned
 * with ON_CHIP_POISON on each core before the first task the run gives it. */
struct PnrCall {
    PtoOrchestrateFn orchestrate;
    const PtoArg *params;
    int32_t ncopy_in;
    int32_t nfill;
    int32_t ncopy_out;
    int32_t ncores;
    const uint64_t *copy_in;
    const uint64_t *fill;
    const uint64_t *copy_out;
    PtoCore *const *cores;
    const uint64_t *ranges; /* device buffers: [start, end) pairs */
    int64_t nranges;
    void *run; /* out: the run, for pnr_run_* (free it with pnr_run_free) */
    uint64_t on_chip[PNR_SPACES];
    /* Ring capacities (RunConfig ring_*), per ring: task slots, heap bytes, dep entries. */
    int64_t ring_task_window[4];
    int64_t ring_heap[4];
    int64_t ring_dep_pool[4];
};

/* memory.ON_CHIP_POISON_BYTE: NaN in every float format, at any offset. */
constexpr int ON_CHIP_POISON = 0xFF;

int64_t now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock of Python's time.perf_counter_ns */
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/* What a program's kernels are: function pointers and, per argument, tensor or not. */
/* a / b rounded toward -inf (b > 0): byte offsets of elements below a view's start. */
static __int128 floor_div(__int128 a, __int128 b) {
    const __int128 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Dtype codes the per-dtype tables cover (PtoDType's codes are below it). */
#define PNR_DTYPE_CODES 32

struct Program {
    std::vector<PtoKernelFn> kernels;
    std::vector<std::vector<uint8_t>> is_tensor;
    int32_t bits[PNR_DTYPE_CODES]; /* element bits: 4 for the types two to a byte, 0 unknown */
    uint8_t poison[PNR_DTYPE_CODES][8]; /* one element of poison per dtype code */
    int32_t is_float[PNR_DTYPE_CODES];
};

/* Immutable chains of task ids, shared between OverlapMap entries (like the Python
 * scheduler's tuples): adding a writer to a set of thousands is O(1). */
struct Chain {
    int64_t id;
    const Chain *next;
};

struct Entry {
    uint64_t end;
    const Chain *plain;        /* the last plain writers */
    const Chain *accumulators; /* accumulators since */
};

struct Task {
    PtoKernelFn kernel;
    const PtoArg *args;
    int64_t block_idx;
    int64_t block_num;
    int64_t group;
    int32_t kernel_index;
    int32_t core_id = -1;
    int64_t pred_offset;
    int64_t pred_count;
    int64_t pending = 0;
    std::vector<int64_t> dependents;
    std::vector<int64_t> holds;  /* predecessors unfinished at submit: it holds their slots */
    int64_t consumers = 0;       /* dependents that hold this task's slot, not yet finished */
    int64_t ndeps = 0;           /* dependency entries it takes from its ring's pool */
    int32_t flags = 0;
    bool staged = false;
    /* A block of a gang dispatch (PTO_TASK_GANG) other than the first: never ready by
     * itself, it runs in block 0's call and finishes with it. */
    bool rider = false;
    int32_t ring = 0;
    int32_t scope = 0;
    bool finished = false;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
};

struct Run;

/* Worker threads shared by every run in the process, started once and kept (as
 * scheduler._WorkerPool in Python).  One lock guards every run's scheduling state. */
struct Pool {
    std::mutex lock;
    std::condition_variable work;
    std::condition_variable progress;
    std::vector<Run *> runs;
    int threads = 0;
    int cores = 0;
    int idle = 0;

    void attach(Run *run);
    void detach(Run *run);
    void serve();
};

Pool *g_pool = nullptr;
std::once_flag g_pool_once;

void reset_pool_in_child() {
    /* A forked child has none of the parent's threads; the old pool (its lock maybe
     * held by a thread that no longer exists) is abandoned. */
    g_pool = new Pool();
}

Pool &pool() {
    std::call_once(g_pool_once, [] {
        g_pool = new Pool();
        pthread_atfork(nullptr, nullptr, reset_pool_in_child);
    });
    return *g_pool;
}

struct Run {
    const Program *program;
    std::vector<PtoCore *> cores;
    std::vector<int32_t> free_cores;  /* indices into cores */
    /* Per core: poisoned already in this run.  A core's on-chip memory is seen only by
     * the tasks it runs, so poisoning it before its first task is the same as poisoning
     * every core up front, and a run that uses one core pays for one. */
    std::vector<uint8_t> poisoned;
    uint64_t on_chip[PNR_SPACES] = {};
    std::vector<std::pair<uint64_t, uint64_t>> ranges; /* device buffers, sorted */
    std::vector<void *> scratch;
    std::deque<std::string> scratch_names;
    std::vector<PnrScratch> scratch_records; /* every alloc_tensor, in order */

    /* Orchestration-thread state. */
    std::map<uint64_t, Entry> writers;
    std::vector<std::unique_ptr<Chain[]>> chain_blocks;
    size_t chain_used = 0;
    std::vector<std::unique_ptr<PtoArg[]>> arg_blocks;
    size_t arg_used = 0;
    size_t arg_capacity = 0;
    std::vector<int64_t> predecessors;
    std::vector<PnrEdge> edges;
    PnrError error = {};
    int32_t status = 0;
    PtoRuntimeApi api;

    /* Rings (under the pool's lock): a task takes a slot and its dependency entries from
     * ring min(depth, 3) of its scope, a scratch tensor its bytes from its scope's ring;
     * each ring frees them first in, first out (a slot once its task, the consumers that
     * hold it and its scope are done; an allocation once its scope closed and every task
     * submitted before the close finished). */
    struct Scope {
        int32_t depth;
        int32_t ring;
        bool open;
        int64_t first_task;
        int64_t end_task; /* tasks submitted when it closed */
        int64_t peak[3];
    };
    struct Alloc {
        int32_t scope;
        int64_t bytes;
    };
    int64_t capacity[3][kRings] = {};
    int64_t used[3][kRings] = {}; /* 0 task window, 1 heap, 2 dep pool */
    std::deque<int64_t> ring_tasks[kRings]; /* unreclaimed tasks, in submit order */
    std::deque<Alloc> ring_allocs[kRings];
    std::vector<Scope> scopes;
    std::vector<int32_t> open_scopes; /* innermost last; [0] is the implicit scope */
    int64_t finished_prefix = 0;      /* tasks 0 .. finished_prefix - 1 have all finished */
    bool orchestrator_waiting = false;

    /* Shared state, under the pool's lock. */
    std::deque<Task> tasks;
    std::deque<int64_t> ready;
    int64_t completed = 0;
    int64_t running = 0;
    bool closing = false;
    bool attached = false;

    /* Arenas start small and double (to 4096 entries a block): a one-task run must not
     * pay for a large allocation (which glibc would map and fault in page by page). */
    size_t chain_capacity = 0;

    const Chain *chain(int64_t id, const Chain *rest) {
        if (chain_used == chain_capacity) {
            chain_capacity = std::min<size_t>(4096, std::max<size_t>(16, 2 * chain_capacity));
            chain_blocks.emplace_back(new Chain[chain_capacity]);
            chain_used = 0;
        }
        Chain *node = &chain_blocks.back()[chain_used++];
        node->id = id;
        node->next = rest;
        return node;
    }

    const Chain *chain_ids(int64_t first, int64_t count, const Chain *rest) {
        for (int64_t i = first; i < first + count; ++i) rest = chain(i, rest);
        return rest;
    }

    PtoArg *copy_args(const PtoArg *args, int32_t nargs) {
        if (nargs <= 0) return nullptr;
        if (arg_used + size_t(nargs) > arg_capacity) {
            size_t grown = std::min<size_t>(4096, std::max<size_t>(16, 2 * arg_capacity));
            size_t capacity = std::max(grown, size_t(nargs));
            arg_blocks.emplace_back(new PtoArg[capacity]);
            arg_used = 0;
            arg_capacity = capacity;
        }
        PtoArg *copy = &arg_blocks.back()[arg_used];
        memcpy(copy, args, sizeof(PtoArg) * size_t(nargs));
        arg_used += size_t(nargs);
        return copy;
    }

    bool fail(int32_t code, int32_t kernel, int32_t position, int64_t a, int64_t b) {
        if (error.code == ERR_NONE) {
            error.code = code;
            error.kernel = kernel;
            error.position = position;
            error.a = a;
            error.b = b;
        }
        return false;
    }

    bool contains(uint64_t start, uint64_t end) const {
        auto it = std::upper_bound(ranges.begin(), ranges.end(),
                                   std::make_pair(start, UINT64_MAX));
        if (it == ranges.begin()) return false;
        --it;
        return end <= it->second;
    }

    /* Entries overlapping [start, end): the first one. */
    std::map<uint64_t, Entry>::iterator first_overlap(uint64_t start) {
        auto it = writers.upper_bound(start);
        if (it != writers.begin()) {
            auto prev = std::prev(it);
            if (prev->second.end > start) return prev;
        }
        return it;
    }

    template <typename Change>
    void update(uint64_t start, uint64_t end, Change change) {
        struct Piece {
            uint64_t start;
            Entry entry;
        };
        Piece pieces[64];
        std::vector<Piece> more;
        size_t n = 0;
        auto emit = [&](uint64_t s, uint64_t e, const Chain *plain, const Chain *acc) {
            Piece piece = {s, {e, plain, acc}};
            if (n < 64) pieces[n++] = piece;
            else more.push_back(piece);
        };
        uint64_t position = start;
        auto it = first_overlap(start);
        while (it != writers.end() && it->first < end) {
            uint64_t s = it->first;
            Entry e = it->second;
            if (s < start) {
                emit(s, start, e.plain, e.accumulators);
            } else if (s > position) {
                Entry fresh = change(nullptr, nullptr);
                emit(position, s, fresh.plain, fresh.accumulators);
            }
            Entry changed = change(e.plain, e.accumulators);
            uint64_t covered_start = std::max(s, start), covered_end = std::min(e.end, end);
            emit(covered_start, covered_end, changed.plain, changed.accumulators);
            position = covered_end;
            if (e.end > end) emit(end, e.end, e.plain, e.accumulators);
            it = writers.erase(it);
        }
        if (position < end) {
            Entry fresh = change(nullptr, nullptr);
            emit(position, end, fresh.plain, fresh.accumulators);
        }
        for (size_t k = 0; k < n; ++k) writers.emplace_hint(it, pieces[k].start, pieces[k].entry);
        for (const Piece &piece : more) writers.emplace(piece.start, piece.entry);
    }

    void assign(uint64_t start, uint64_t end, const Chain *writer) {
        auto it = first_overlap(start);
        bool left = false, right = false;
        uint64_t left_start = 0, right_end = 0;
        Entry left_entry = {}, right_entry = {};
        while (it != writers.end() && it->first < end) {
            if (it->first < start) {
                left = true;
                left_start = it->first;
                left_entry = it->second;
                left_entry.end = start;
            }
            if (it->second.end > end) {
                right = true;
                right_end = it->second.end;
                right_entry = it->second;
            }
            it = writers.erase(it);
        }
        if (left) writers.emplace_hint(it, left_start, left_entry);
        writers.emplace_hint(it, start, Entry{end, writer, nullptr});
        if (right) {
            right_entry.end = right_end;
            writers.emplace_hint(it, end, right_entry);
        }
    }

    int64_t submit(int32_t kernel_index, int32_t nargs, const PtoArg *args,
                   std::vector<int64_t> &explicit_deps, int64_t blocks, int32_t flags = 0);
    int32_t current_scope() const { return open_scopes.back(); }
    bool retired(const Task &task) const {
        return task.finished && task.consumers == 0 && !scopes[size_t(task.scope)].open;
    }
    void reclaim(int32_t ring);
    void take_from(int32_t ring, int resource, int64_t amount);
    bool make_room(int32_t ring, int64_t slots, int64_t deps, int64_t bytes, int32_t kernel,
                   std::unique_lock<std::mutex> &guard);
    int32_t scope_begin();
    int32_t scope_end();
    int32_t alloc_tensor(PtoTensor *t, const char *name);
    bool take(Task *&task, int32_t &slot, bool &fresh);
    void execute(Task *task, int32_t slot, bool fresh);
    void finish(Task *task, int32_t slot);
    int64_t complete(Task *task);
};

/* Poison, as DeviceMemory.allocate: NaN for floats, 0xA5 bytes otherwise. */
void poison(const Program *program, uint8_t *out, size_t size, int32_t dtype) {
    if (dtype < 0 || dtype >= PNR_DTYPE_CODES || !program->is_float[dtype]) {
        memset(out, 0xA5, size);
        return;
    }
    size_t item = std::min(size, size_t(program->bits[dtype] / 8));
    memcpy(out, program->poison[dtype], item);
    for (size_t filled = item; filled < size; filled *= 2)
        memcpy(out + filled, out, std::min(filled, size - filled));
}

/* One copy (src set) or poison fill (src null, of dtype) of a call's device buffers. */
struct ByteJob {
    uint8_t *dst;
    const uint8_t *src;
    size_t size;
    int32_t dtype;
};

/* A call's copies and fills: past kSplitBytes in all, each job is cut into one share per
 * thread (at 64-byte boundaries, so a fill's pattern keeps its phase), the calling thread
 * taking one: one thread does not saturate memory bandwidth (measured on 2 cores: 64 MB
 * of copies and fills in 6.3 ms on one thread, 3.7 ms on two).  Bytes are the same
 * whichever thread moves them. */
constexpr size_t kSplitBytes = size_t(4) << 20;

void move_share(const Program *program, const std::vector<ByteJob> &jobs, int share, int shares) {
    for (const ByteJob &job : jobs) {
        size_t lo = job.size, hi = job.size;
        if (shares == 1 || job.size < kSplitBytes / 4) {
            if (share == 0) lo = 0;
        } else {
            lo = (job.size * size_t(share) / size_t(shares)) & ~size_t(63);
            hi = share + 1 == shares ? job.size : (job.size * size_t(share + 1) / size_t(shares)) & ~size_t(63);
        }
        if (lo >= hi) continue;
        if (job.src) memcpy(job.dst + lo, job.src + lo, hi - lo);
        else poison(program, job.dst + lo, hi - lo, job.dtype);
    }
}

void move_bytes(const Program *program, const std::vector<ByteJob> &jobs, int32_t cores) {
    static const int host = std::max(1, int(std::thread::hardware_concurrency()));
    size_t total = 0;
    for (const ByteJob &job : jobs) total += job.size;
    const int shares = total < kSplitBytes ? 1 : std::max(1, std::min({int(cores), host, 4}));
    std::vector<std::thread> helpers;
    int share = 1;
    try {
        for (; share < shares; ++share) helpers.emplace_back(move_share, program, std::cref(jobs), share, shares);
    } catch (const std::exception &) {  // no thread to be had: this one moves the rest
        for (; share < shares; ++share) move_share(program, jobs, share, shares);
    }
    move_share(program, jobs, 0, shares);
    for (std::thread &helper : helpers) helper.join();
}

struct Access {
    uint64_t start;
    uint64_t end;
    int32_t direction;
    bool tracked;
};

inline void collect(std::vector<int64_t> &into, const Chain *chain) {
    for (; chain != nullptr; chain = chain->next) into.push_back(chain->id);
}

inline void sort_unique(std::vector<int64_t> &ids) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

void Run::reclaim(int32_t ring) {
    while (finished_prefix < int64_t(tasks.size()) && tasks[size_t(finished_prefix)].finished)
        ++finished_prefix;
    std::deque<int64_t> &fifo = ring_tasks[ring];
    while (!fifo.empty() && retired(tasks[size_t(fifo.front())])) {
        used[0][ring] -= 1;
        used[2][ring] -= tasks[size_t(fifo.front())].ndeps;
        fifo.pop_front();
    }
    std::deque<Alloc> &allocs = ring_allocs[ring];
    while (!allocs.empty()) {
        const Scope &scope = scopes[size_t(allocs.front().scope)];
        if (scope.open || finished_prefix < scope.end_task) break;
        used[1][ring] -= allocs.front().bytes;
        allocs.pop_front();
    }
}

void Run::take_from(int32_t ring, int resource, int64_t amount) {
    used[resource][ring] += amount;
    for (int32_t id : open_scopes) {
        Scope &scope = scopes[size_t(id)];
        if (scope.ring == ring) scope.peak[resource] = std::max(scope.peak[resource], used[resource][ring]);
    }
}

/* Waits (running ready tasks meanwhile) until ring `ring` has `slots` task slots, `deps`
 * dependency entries and `bytes` heap bytes free.  Fails when they exceed the ring, or
 * when what holds them belongs to a scope still open: only the orchestration, which is
 * the one waiting, could close it. */
bool Run::make_room(int32_t ring, int64_t slots, int64_t deps, int64_t bytes, int32_t kernel,
                    std::unique_lock<std::mutex> &guard) {
    const int64_t need[3] = {slots, bytes, deps};
    const int32_t codes[3] = {ERR_RING_WINDOW, ERR_RING_HEAP, ERR_RING_DEP_POOL};
    for (;;) {
        reclaim(ring);
        int short_of = -1;
        for (int k = 0; k < 3; ++k)
            if (need[k] > 0 && used[k][ring] + need[k] > capacity[k][ring]) short_of = k;
        if (short_of < 0) return true;
        bool held_by_open_scope;
        if (short_of == 1) {
            held_by_open_scope = ring_allocs[ring].empty() ||
                                 scopes[size_t(ring_allocs[ring].front().scope)].open;
        } else {
            held_by_open_scope = ring_tasks[ring].empty() ||
                                 scopes[size_t(tasks[size_t(ring_tasks[ring].front())].scope)].open;
        }
        if (need[short_of] > capacity[short_of][ring] || held_by_open_scope) {
            if (error.code == ERR_NONE) error.pad = need[short_of] > capacity[short_of][ring] ? 0 : 1;
            fail(codes[short_of], kernel, ring, need[short_of], capacity[short_of][ring]);
            return false;
        }
        Task *task = nullptr;
        int32_t slot = -1;
        bool fresh = false;
        if (take(task, slot, fresh)) {
            guard.unlock();
            execute(task, slot, fresh);
            guard.lock();
            finish(task, slot);
            continue;
        }
        orchestrator_waiting = true;
        pool().progress.wait(guard);
        orchestrator_waiting = false;
    }
}

/* Scope records are the orchestrating thread's alone (workers never read them), as is
 * the task list's length: no lock. */
int32_t Run::scope_begin() {
    int32_t depth = int32_t(open_scopes.size()) - 1;
    int32_t ring = std::min(depth, kRings - 1);
    scopes.push_back({depth, ring, true, int64_t(tasks.size()), 0,
                      {used[0][ring], used[1][ring], used[2][ring]}});
    open_scopes.push_back(int32_t(scopes.size() - 1));
    return 0;
}

int32_t Run::scope_end() {
    if (open_scopes.size() <= 1) return fail(ERR_SCOPE_END, -1, 0, 0, 0), -1;
    Scope &scope = scopes[size_t(open_scopes.back())];
    scope.open = false;
    scope.end_task = int64_t(tasks.size());
    open_scopes.pop_back();
    return 0;
}

int64_t Run::submit(int32_t kernel_index, int32_t nargs, const PtoArg *args,
                    std::vector<int64_t> &explicit_deps, int64_t blocks, int32_t flags) {
    const int64_t task_id = int64_t(tasks.size());
    if (kernel_index < 0 || size_t(kernel_index) >= program->kernels.size())
        return fail(ERR_KERNEL_INDEX, kernel_index, 0, int64_t(program->kernels.size()), 0), -1;
    const std::vector<uint8_t> &signature = program->is_tensor[size_t(kernel_index)];
    if (nargs != int32_t(signature.size()))
        return fail(ERR_NARGS, kernel_index, 0, nargs, 0), -1;
    if (nargs > 0 && args == nullptr) return fail(ERR_NULL_ARRAY, kernel_index, 0, nargs, 0), -1;

    Access local[16];
    std::vector<Access> heap;
    Access *accesses = nargs <= 16 ? local : (heap.resize(size_t(nargs)), heap.data());
    int32_t naccesses = 0;
    for (int32_t position = 0; position < nargs; ++position) {
        const PtoArg &arg = args[position];
        bool is_tensor = arg.kind == PTO_ARG_TENSOR;
        if (is_tensor != bool(signature[size_t(position)]))
            return fail(ERR_ARG_KIND, kernel_index, position, 0, 0), -1;
        if (!is_tensor) continue;
        int32_t flags = arg.direction, ndim = arg.tensor.ndim, dtype = arg.tensor.dtype;
        int32_t direction = flags & PTO_DIRECTION_MASK;
        if (direction > PTO_ACCUM || (flags & ~(PTO_DIRECTION_MASK | PTO_NO_DEP | PTO_DUMP)) ||
            ndim < 0 || ndim > PTO_MAX_RANK)
            return fail(ERR_ARG_FLAGS, kernel_index, position, flags, ndim), -1;
        if (dtype < 0 || dtype >= PNR_DTYPE_CODES || program->bits[dtype] == 0)
            return fail(ERR_ARG_DTYPE, kernel_index, position, dtype, 0), -1;
        /* memory.byte_range, in 128 bits so an absurd view cannot wrap around. */
        __int128 low = 0, high = 0;
        bool empty = false;
        for (int32_t d = 0; d < ndim; ++d) {
            int64_t extent = arg.tensor.shape[d];
            if (extent <= 0) {
                empty = true;
                break;
            }
            __int128 span = __int128(arg.tensor.stride[d]) * (extent - 1);
            if (span < 0) low += span;
            else high += span;
        }
        if (empty) continue;
        /* memory.element_bytes: a 4-bit element shares its byte with its pair. */
        __int128 bits = program->bits[dtype];
        __int128 base = __int128(uintptr_t(arg.tensor.data));
        __int128 start = base + floor_div(low * bits, 8), end = base + ((high + 1) * bits + 7) / 8;
        if (start == end) continue;
        if (start < 0 || end > __int128(UINT64_MAX) || !contains(uint64_t(start), uint64_t(end)))
            return fail(ERR_ARG_OUTSIDE, kernel_index, position, int64_t(start), int64_t(end)),
                   -1;
        accesses[naccesses++] = {uint64_t(start), uint64_t(end), direction,
                                 !(flags & PTO_NO_DEP)};
    }

    if (!explicit_deps.empty()) {
        sort_unique(explicit_deps);
        int64_t lowest = explicit_deps.front(), highest = explicit_deps.back();
        if (lowest < 0 || highest >= task_id)
            return fail(ERR_DEP_FUTURE, kernel_index, 0, task_id, lowest < 0 ? lowest : highest),
                   -1;
    }
    if (blocks < 0) return fail(ERR_BLOCKS, kernel_index, 0, 0, 0), -1;

    /* Lookups (scheduler.Scheduler.submit). */
    std::vector<int64_t> raw, waw;
    for (int32_t k = 0; k < naccesses; ++k) {
        const Access &access = accesses[k];
        if (!access.tracked) continue;
        for (auto it = first_overlap(access.start);
             it != writers.end() && it->first < access.end; ++it) {
            const Entry &entry = it->second;
            if (access.direction == PTO_ACCUM) {
                collect(raw, entry.plain);
            } else if (access.direction == PTO_OUT) {
                collect(waw, entry.plain);
                collect(waw, entry.accumulators);
            } else {
                collect(raw, entry.plain);
                collect(raw, entry.accumulators);
            }
        }
    }
    size_t edges_before = edges.size();
    sort_unique(raw);
    sort_unique(waw);
    if (!raw.empty() || !waw.empty()) {
        std::vector<int64_t> only_waw;
        std::set_difference(waw.begin(), waw.end(), raw.begin(), raw.end(),
                            std::back_inserter(only_waw));
        for (int64_t src : raw) edges.push_back({src, task_id, 0, 0});
        for (int64_t src : only_waw) edges.push_back({src, task_id, 1, 0});
        raw.insert(raw.end(), only_waw.begin(), only_waw.end());
    }
    for (int64_t src : explicit_deps) edges.push_back({src, task_id, 2, 0});
    raw.insert(raw.end(), explicit_deps.begin(), explicit_deps.end());
    sort_unique(raw);
    int64_t pred_offset = int64_t(predecessors.size());
    predecessors.insert(predecessors.end(), raw.begin(), raw.end());

    if (blocks > 0) {
        /* Writers are registered only after every lookup: a task never waits on itself. */
        const Chain *writer = chain_ids(task_id, blocks, nullptr);
        for (int32_t k = 0; k < naccesses; ++k) {
            const Access &access = accesses[k];
            if (access.direction == PTO_IN) continue;
            if (access.direction == PTO_ACCUM) {
                update(access.start, access.end, [&](const Chain *plain, const Chain *acc) {
                    return Entry{0, plain, chain_ids(task_id, blocks, acc)};
                });
            } else if (access.tracked) {
                assign(access.start, access.end, writer);
            } else {
                update(access.start, access.end, [&](const Chain *plain, const Chain *acc) {
                    return Entry{0, chain_ids(task_id, blocks, plain), acc};
                });
            }
        }
    }
    if (blocks > 1) {
        /* Every block has the dispatch's predecessors; edges are per task. */
        std::vector<PnrEdge> once(edges.begin() + long(edges_before), edges.end());
        edges.resize(edges_before);
        for (int64_t i = task_id; i < task_id + blocks; ++i)
            for (PnrEdge edge : once) {
                edge.dst = i;
                edges.push_back(edge);
            }
    }
    const PtoArg *copied = copy_args(args, nargs);

    Pool &p = pool();
    std::unique_lock<std::mutex> guard(p.lock);
    const int32_t scope_id = current_scope();
    const int32_t ring = scopes[size_t(scope_id)].ring;
    if (blocks > 0 &&
        !make_room(ring, blocks, blocks * int64_t(raw.size()), 0, kernel_index, guard)) {
        /* The run stops here: what it recorded ends with the last task submitted. */
        edges.resize(edges_before);
        predecessors.resize(size_t(pred_offset));
        return -1;
    }
    int64_t released = 0;
    const bool gang = flags & PTO_TASK_GANG;
    for (int64_t b = 0; b < blocks; ++b) {
        tasks.emplace_back();
        Task &task = tasks.back();
        task.rider = gang && b > 0;
        task.kernel = program->kernels[size_t(kernel_index)];
        task.args = copied;
        task.block_idx = b;
        task.block_num = blocks;
        task.group = task_id;
        task.kernel_index = kernel_index;
        task.pred_offset = pred_offset;
        task.pred_count = int64_t(raw.size());
        task.flags = flags;
        task.ring = ring;
        task.scope = scope_id;
        task.ndeps = int64_t(raw.size());
        int64_t pending = 0;
        for (int64_t src : raw) {
            Task &before = tasks[size_t(src)];
            if (!before.finished) {
                ++pending;
                before.dependents.push_back(task_id + b);
                ++before.consumers;
                task.holds.push_back(src);
            }
        }
        ring_tasks[ring].push_back(task_id + b);
        take_from(ring, 0, 1);
        take_from(ring, 2, task.ndeps);
        task.pending = pending;
        if (pending == 0 && !task.rider) {
            ready.push_back(task_id + b);
            ++released;
        }
    }
    /* A lone task is left for the orchestrating thread, which runs ready tasks itself
     * once the orchestration returns: a one-task run then needs no thread hand-off. */
    if (attached && released && p.idle && tasks.size() > 1) {
        if (released >= p.idle) p.work.notify_all();
        else while (released--) p.work.notify_one();
    }
    return task_id;
}

int32_t Run::alloc_tensor(PtoTensor *t, const char *name) {
    int32_t ndim = t->ndim, dtype = t->dtype;
    /* Scratch tensors of byte-sized elements only (the parser refuses 4-bit ones). */
    bool valid = ndim >= 0 && ndim <= PTO_MAX_RANK && dtype >= 0 && dtype < PNR_DTYPE_CODES &&
                 program->bits[dtype] >= 8;
    if (ndim >= 0 && ndim <= PTO_MAX_RANK)
        for (int32_t d = 0; d < ndim; ++d) valid &= t->shape[d] >= 0;
    if (!valid) {
        if (error.code == ERR_NONE) {
            fail(ERR_ALLOC_INVALID, -1, 0, ndim, dtype);
            for (int32_t d = 0; d < PTO_MAX_RANK; ++d) error.shape[d] = t->shape[d];
        }
        return -1;
    }
    unsigned __int128 numel = 1;
    for (int32_t d = 0; d < ndim; ++d) {
        numel *= uint64_t(t->shape[d]);
        if (numel > (unsigned __int128)(INT64_MAX)) break;
    }
    unsigned __int128 bytes = numel * unsigned(program->bits[dtype] / 8);
    if (bytes > 0) {
        Pool &p = pool();
        std::unique_lock<std::mutex> guard(p.lock);
        int32_t scope_id = current_scope();
        int32_t ring = scopes[size_t(scope_id)].ring;
        int64_t size = bytes > (unsigned __int128)(INT64_MAX) ? INT64_MAX : int64_t(bytes);
        if (!make_room(ring, 0, 0, size, -1, guard)) return -1;
        ring_allocs[ring].push_back({scope_id, size});
        take_from(ring, 1, size);
    }
    void *data = nullptr;
    if (bytes > 0) {
        if (bytes > (unsigned __int128)(INT64_MAX) || posix_memalign(&data, 64, size_t(bytes)) != 0)
            return fail(ERR_ALLOC_FAILED, -1, 0, bytes > INT64_MAX ? INT64_MAX : int64_t(bytes), 0),
                   -1;
        scratch.push_back(data);
        size_t size = size_t(bytes);
        poison(program, static_cast<uint8_t *>(data), size, dtype);
        uint64_t start = uint64_t(uintptr_t(data));
        auto where = std::upper_bound(ranges.begin(), ranges.end(),
                                      std::make_pair(start, uint64_t(0)));
        ranges.insert(where, {start, start + uint64_t(size)});
    }
    t->data = data;
    scratch_names.emplace_back(name != nullptr ? name : "");
    PnrScratch record = {scratch_names.back().c_str(), data, ndim, dtype, {0, 0, 0, 0}};
    for (int32_t d = 0; d < ndim; ++d) record.shape[d] = t->shape[d];
    scratch_records.push_back(record);
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
        t->stride[d] = stride;
        stride *= std::max<int64_t>(t->shape[d], 1);
    }
    return 0;
}

bool Run::take(Task *&task, int32_t &slot, bool &fresh) {
    if (ready.empty() || free_cores.empty() || closing) return false;
    ++running;
    task = &tasks[size_t(ready.front())];
    ready.pop_front();
    slot = free_cores.back();
    free_cores.pop_back();
    fresh = !poisoned[size_t(slot)];
    poisoned[size_t(slot)] = 1;
    return true;
}

/* Runs `task` on core `slot` (outside the pool's lock: the core is this thread's). */
void Run::execute(Task *task, int32_t slot, bool fresh) {
    PtoCore *core = cores[size_t(slot)];
    if (fresh) {
        uint8_t *buffers[PNR_SPACES] = {core->vec,  core->mat,        core->left,       core->right,
                                        core->acc,  core->bias,       core->left_scale, core->right_scale};
        for (int k = 0; k < PNR_SPACES; ++k)
            if (on_chip[k]) memset(buffers[k], ON_CHIP_POISON, size_t(on_chip[k]));
    }
    task->core_id = core->core_id;
    core->block_idx = int32_t(task->block_idx);
    core->block_num = int32_t(task->block_num);
    task->start_ns = now_ns();
    task->kernel(core, task->args);
    task->end_ns = now_ns();
}

void Run::finish(Task *task, int32_t slot) {
    Pool &p = pool();
    --running;
    free_cores.push_back(slot);
    int64_t released = complete(task);
    if (task->flags & PTO_TASK_GANG) {
        /* Its call ran every block of the dispatch (pto/gang.hpp): they end with it. */
        for (int64_t b = 1; b < task->block_num; ++b) {
            Task &rider = tasks[size_t(task->group + b)];
            rider.core_id = task->core_id;
            rider.start_ns = task->start_ns;
            rider.end_ns = task->end_ns;
            released += complete(&rider);
        }
    }
    /* The thread that completed a task takes the next ready one itself. */
    if (released > 1 && attached && p.idle) {
        for (int64_t k = 1; k < released && k <= p.idle; ++k) p.work.notify_one();
    }
    if (completed == int64_t(tasks.size()) || (running == 0 && closing) || orchestrator_waiting)
        p.progress.notify_all();
}

/* Marks `task` finished and releases its dependents; returns how many became ready. */
int64_t Run::complete(Task *task) {
    task->finished = true;
    ++completed;
    for (int64_t held : task->holds) --tasks[size_t(held)].consumers;
    int64_t released = 0;
    /* allow_early_resolve: a consumer this task was the last to wait for was pre-staged;
     * it starts next, on the core this task frees (the front of the queue, ahead of tasks
     * that became ready earlier), its siblings in their submit order. */
    const bool early = task->flags & PTO_TASK_EARLY_RESOLVE;
    size_t staged = 0;
    for (int64_t dst : task->dependents) {
        if (--tasks[size_t(dst)].pending == 0 && !tasks[size_t(dst)].rider) {
            if (early) {
                tasks[size_t(dst)].staged = true;
                ready.insert(ready.begin() + long(staged++), dst);
            } else {
                ready.push_back(dst);
            }
            ++released;
        }
    }
    return released;
}

void Pool::attach(Run *run) {
    runs.push_back(run);
    run->attached = true;
    cores += int(run->cores.size());
    while (threads < cores) {
        ++threads;
        std::thread([this] { serve(); }).detach();
    }
}

void Pool::detach(Run *run) {
    runs.erase(std::find(runs.begin(), runs.end(), run));
    run->attached = false;
    cores -= int(run->cores.size());
}

void Pool::serve() {
    std::unique_lock<std::mutex> guard(lock);
    for (;;) {
        Run *owner = nullptr;
        Task *task = nullptr;
        int32_t slot = -1;
        bool fresh = false;
        for (Run *run : runs) {
            if (run->take(task, slot, fresh)) {
                owner = run;
                break;
            }
        }
        if (owner == nullptr) {
            ++idle;
            work.wait(guard);
            --idle;
            continue;
        }
        guard.unlock();
        owner->execute(task, slot, fresh);
        guard.lock();
        owner->finish(task, slot);
    }
}

int64_t api_submit(void *ctx, int32_t kernel_index, int32_t nargs, const PtoArg *args,
                   int32_t ndeps, const int64_t *deps) {
    Run *run = static_cast<Run *>(ctx);
    if (run->error.code != ERR_NONE) return -1;
    if (ndeps < 0) return run->fail(ERR_NDEPS, kernel_index, 0, ndeps, 0), -1;
    if (ndeps > 0 && deps == nullptr) return run->fail(ERR_NULL_ARRAY, -1, 1, ndeps, 0), -1;
    std::vector<int64_t> explicit_deps(deps, deps + ndeps);
    return run->submit(kernel_index, nargs, args, explicit_deps, 1);
}

int32_t api_scope_begin(void *ctx) {
    Run *run = static_cast<Run *>(ctx);
    if (run->error.code != ERR_NONE) return -1;
    return run->scope_begin();
}

int32_t api_scope_end(void *ctx) {
    Run *run = static_cast<Run *>(ctx);
    if (run->error.code != ERR_NONE) return -1;
    return run->scope_end();
}

int64_t api_dispatch(void *ctx, int32_t kernel_index, int32_t nargs, const PtoArg *args,
                     int32_t ndeps, const PtoTaskIds *deps, int64_t blocks, int32_t flags) {
    Run *run = static_cast<Run *>(ctx);
    if (run->error.code != ERR_NONE) return -1;
    if (ndeps < 0) return run->fail(ERR_NDEPS, kernel_index, 1, ndeps, 0), -1;
    if (ndeps > 0 && deps == nullptr) return run->fail(ERR_NULL_ARRAY, -1, 1, ndeps, 0), -1;
    std::vector<int64_t> explicit_deps;
    const int64_t submitted = int64_t(run->tasks.size());
    for (int32_t i = 0; i < ndeps; ++i) {
        int64_t first = deps[i].first, count = deps[i].count;
        if (count < 0) return run->fail(ERR_DEP_RANGE, kernel_index, 0, count, 0), -1;
        if (count == 0) continue;
        if (first < 0 || first + count > submitted) {
            /* Only its out-of-range end matters to the error (Run::submit reports it). */
            explicit_deps.push_back(first);
            explicit_deps.push_back(first + count - 1);
            continue;
        }
        for (int64_t id = first; id < first + count; ++id) explicit_deps.push_back(id);
    }
    return run->submit(kernel_index, nargs, args, explicit_deps, blocks, flags);
}

int32_t api_alloc_tensor(void *ctx, PtoTensor *t, const char *name) {
    Run *run = static_cast<Run *>(ctx);
    if (t == nullptr) return -1;
    return run->alloc_tensor(t, name);
}

int32_t run_call(Run *run, const PnrCall *call) {
    Pool &p = pool();
    std::vector<ByteJob> jobs;
    for (int32_t k = 0; k < call->ncopy_in; ++k) {
        const uint64_t *e = call->copy_in + 3 * k;
        if (e[2]) jobs.push_back({reinterpret_cast<uint8_t *>(e[0]), reinterpret_cast<const uint8_t *>(e[1]),
                                  size_t(e[2]), 0});
    }
    for (int32_t k = 0; k < call->nfill; ++k) {
        const uint64_t *e = call->fill + 3 * k;
        if (e[1]) jobs.push_back({reinterpret_cast<uint8_t *>(e[0]), nullptr, size_t(e[1]), int32_t(e[2])});
    }
    move_bytes(run->program, jobs, call->ncores);
    {
        std::lock_guard<std::mutex> guard(p.lock);
        p.attach(run);
    }
    run->status = call->orchestrate(&run->api, call->params);
    bool failed = run->error.code != ERR_NONE || run->status != 0;
    {
        std::unique_lock<std::mutex> guard(p.lock);
        if (failed) run->closing = true;
        /* The orchestrating thread runs ready tasks too instead of sleeping. */
        while (!(failed ? run->running == 0 : run->completed == int64_t(run->tasks.size()))) {
            Task *task = nullptr;
            int32_t slot = -1;
            bool fresh = false;
            if (!run->take(task, slot, fresh)) {
                p.progress.wait(guard);
                continue;
            }
            guard.unlock();
            run->execute(task, slot, fresh);
            guard.lock();
            run->finish(task, slot);
        }
        p.detach(run);
        run->scopes[0].end_task = int64_t(run->tasks.size());
        for (int32_t id : run->open_scopes) run->scopes[size_t(id)].open = false;
    }
    for (void *data : run->scratch) free(data);
    run->scratch.clear();
    if (run->error.code == ERR_NONE && run->status == 0) {
        jobs.clear();
        for (int32_t k = 0; k < call->ncopy_out; ++k) {
            const uint64_t *e = call->copy_out + 3 * k;
            if (e[2]) jobs.push_back({reinterpret_cast<uint8_t *>(e[0]), reinterpret_cast<const uint8_t *>(e[1]),
                                      size_t(e[2]), 0});
        }
        move_bytes(run->program, jobs, call->ncores);
    }
    run->writers.clear();
    run->chain_blocks.clear();
    if (run->error.code != ERR_NONE) return 2;
    return run->status != 0 ? 1 : 0;
}

}  // namespace

extern "C" {

int32_t pnr_version() { return PNR_VERSION * 1000 + PTO_ABI_VERSION; }

// The digest of the sources this library was built from (the package build defines it),
// so that the runtime refuses a library older than the sources beside it.
#ifndef PNR_SOURCE_DIGEST
#define PNR_SOURCE_DIGEST ""
#endif
const char *pnr_source_digest() { return PNR_SOURCE_DIGEST; }

void *pnr_program_new(int32_t nkernels, void *const *kernels, const int32_t *nargs,
                      const uint8_t *is_tensor, const int32_t *bits, const uint8_t *poison,
                      const int32_t *is_float) {
    Program *program = new Program();
    size_t offset = 0;
    for (int32_t k = 0; k < nkernels; ++k) {
        program->kernels.push_back(reinterpret_cast<PtoKernelFn>(kernels[k]));
        program->is_tensor.emplace_back(is_tensor + offset, is_tensor + offset + nargs[k]);
        offset += size_t(nargs[k]);
    }
    for (int d = 0; d < PNR_DTYPE_CODES; ++d) {
        program->bits[d] = bits[d];
        program->is_float[d] = is_float[d];
        memcpy(program->poison[d], poison + 8 * d, 8);
    }
    return program;
}

void pnr_program_free(void *program) { delete static_cast<Program *>(program); }

/* Runs one call: a new run (call->run) over call->cores and the device buffers in
 * call->ranges, the copies in and fills, the orchestration and every task it submits,
 * then the copies out.  Returns 0 when all ran, 1 when the orchestration returned
 * non-zero (pnr_run_status), 2 on a refused call (pnr_run_error).  After a failure no
 * further task starts; the ones already running finish first. */
int32_t pnr_run(void *program, PnrCall *call) {
    Run *run = new Run();
    call->run = run;
    run->program = static_cast<Program *>(program);
    run->cores.assign(call->cores, call->cores + call->ncores);
    for (int32_t i = call->ncores - 1; i >= 0; --i) run->free_cores.push_back(i);
    run->poisoned.assign(size_t(call->ncores), 0);
    memcpy(run->on_chip, call->on_chip, sizeof run->on_chip);
    for (int r = 0; r < kRings; ++r) {
        run->capacity[0][r] = call->ring_task_window[r];
        run->capacity[1][r] = call->ring_heap[r];
        run->capacity[2][r] = call->ring_dep_pool[r];
    }
    run->scopes.push_back({-1, 0, true, 0, 0, {0, 0, 0}});
    run->open_scopes.push_back(0);
    for (int64_t i = 0; i < call->nranges; ++i)
        if (call->ranges[2 * i + 1] > call->ranges[2 * i])
            run->ranges.push_back({call->ranges[2 * i], call->ranges[2 * i + 1]});
    std::sort(run->ranges.begin(), run->ranges.end());
    run->api.ctx = run;
    run->api.submit = api_submit;
    run->api.alloc_tensor = api_alloc_tensor;
    run->api.dispatch = api_dispatch;
    run->api.scope_begin = api_scope_begin;
    run->api.scope_end = api_scope_end;
    return run_call(run, call);
}

int32_t pnr_run_status(void *handle) { return static_cast<Run *>(handle)->status; }

void pnr_run_error(void *handle, PnrError *out) { *out = static_cast<Run *>(handle)->error; }

int64_t pnr_run_task_count(void *handle) { return int64_t(static_cast<Run *>(handle)->tasks.size()); }

int64_t pnr_run_edge_count(void *handle) { return int64_t(static_cast<Run *>(handle)->edges.size()); }

void pnr_run_tasks(void *handle, PnrTaskRecord *out) {
    Run *run = static_cast<Run *>(handle);
    for (size_t i = 0; i < run->tasks.size(); ++i) {
        const Task &task = run->tasks[i];
        out[i] = {int64_t(i), task.kernel_index, task.core_id, task.block_idx, task.block_num,
                  task.group, task.start_ns, task.end_ns, task.args, task.pred_offset,
                  task.pred_count, task.flags, int32_t(task.staged), task.ring, task.scope};
    }
}

void pnr_run_edges(void *handle, PnrEdge *out) {
    Run *run = static_cast<Run *>(handle);
    if (!run->edges.empty()) memcpy(out, run->edges.data(), sizeof(PnrEdge) * run->edges.size());
}

const int64_t *pnr_run_predecessors(void *handle) {
    return static_cast<Run *>(handle)->predecessors.data();
}

int64_t pnr_run_scratch_count(void *handle) {
    return int64_t(static_cast<Run *>(handle)->scratch_records.size());
}

void pnr_run_scratch(void *handle, PnrScratch *out) {
    Run *run = static_cast<Run *>(handle);
    for (size_t i = 0; i < run->scratch_records.size(); ++i) out[i] = run->scratch_records[i];
}

int64_t pnr_run_scope_count(void *handle) {
    return int64_t(static_cast<Run *>(handle)->scopes.size());
}

/* Scope samples, in the order the scopes opened (the implicit one first). */
void pnr_run_scopes(void *handle, PnrScope *out) {
    Run *run = static_cast<Run *>(handle);
    for (size_t i = 0; i < run->scopes.size(); ++i) {
        const Run::Scope &scope = run->scopes[i];
        int64_t end = scope.open ? int64_t(run->tasks.size()) : scope.end_task;
        out[i] = {scope.depth, scope.ring, end - scope.first_task, scope.first_task,
                  scope.peak[0], scope.peak[1], scope.peak[2]};
    }
}

void pnr_run_free(void *handle) { delete static_cast<Run *>(handle); }

int32_t pnr_sizes(int32_t which) {
    switch (which) {
        case 0: return int32_t(sizeof(PnrError));
        case 1: return int32_t(sizeof(PnrTaskRecord));
        case 2: return int32_t(sizeof(PnrEdge));
        case 3: return int32_t(sizeof(PnrCall));
        case 4: return int32_t(sizeof(PnrScratch));
        case 5: return int32_t(sizeof(PnrScope));
        default: return -1;
    }
}

}  // extern "C"
