/*
 * The cross-block barrier of a gang kernel (pto-isa SYNCALL; ir/ops/barrier.py): a kernel
 * holding a pl.system.syncall runs the blocks of its launch at once, one thread each, so a
 * block that reaches the barrier can wait for the others.  The runtime calls such a kernel
 * once per launch (PTO_TASK_GANG, abi.h), with block 0 of block_num; `run` starts the other
 * blocks on threads of their own, each on a core whose on-chip buffers are its own
 * (poisoned as the runtime poisons a core's), and returns when all have ended.
 *
 * The barriers:
 *  - hard (FFTS): every block of the launch arrives, then all go on.  It needs the launch
 *    to fill the cores of the kernel's type, one block each (CheckCrossBlockBarriers
 *    refuses a partial launch it can see; one sized at run time is refused here);
 *  - soft: pto-isa's counter in the workspace's first INT32: a block adds 1 and waits until
 *    the counter reaches the end of its round, (before / used + 1) * used; used_cores 0 is
 *    every block of the launch.  The counter stays in global memory, as on the device.
 *
 * Deadlock is detected, never waited out: a block about to wait first checks whether
 * every block is either finished or waiting on a condition that is false; then none can
 * ever move, the gang records a fault naming where each block waits, and every block
 * stops (Abort).
 *
 * The global-memory protocol around a barrier is checked per cache line (line_bytes, the
 * backend's gm_cache_line) and byte: through PTO_OBSERVE_WINDOW (bounds.hpp) every tload,
 * tstore and tstore_atomic_add of a block is seen, with the statement pto::gang::at names.
 * Two blocks' accesses of the same bytes, one a write, with no barrier between them are a
 * race (two atomic adds are not).  A block reading bytes another block wrote before a
 * barrier needs the writer to have called cacheinvalid() (all of global memory, or the
 * line) and then fence() after the write and before the barrier, and itself cacheinvalid()
 * after the barrier and before the read (upstream's publish / consume protocol).  A
 * violation is a fault naming both blocks and lines.  The check assumes every block takes
 * part in every barrier (a block's barriers passed so far order its accesses).
 *
 * pypto.runtime raises a fault as a KernelError naming the kernel (bounds.hpp's record);
 * debug/torch_gang.py is the same model for the torch semantics, with the same messages.
 */
#ifndef PTO_GANG_HPP
#define PTO_GANG_HPP

#include <stdarg.h>
#include <stdio.h>

#include <functional>
#include <memory>
#include <mutex>
#include <condition_variable>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "isa.hpp"

namespace pto {
namespace gang {

struct Abort {};  // thrown into a block when the gang stops

enum State { RUNNING, WAITING, FINISHED };

/* One block's writes (or reads) of one cache line in one barrier interval. */
struct Access {
    int32_t block;
    int64_t epoch;  // the barriers the block had passed
    int64_t step;   // the block's step counter at the (latest) access
    int32_t line;   // the statement's line
    uint64_t mask;  // the bytes of the line (one bit per line_bytes / 64 bytes)
    bool atomic;
};

struct Block {
    State state = RUNNING;
    int32_t wait_line = 0;
    int64_t wait_target = 0;             // soft: the counter value the block waits for
    const int32_t *wait_counter = nullptr;  // soft: the counter
    bool wait_soft = false;
    const std::function<bool()> *ready = nullptr;
    int64_t epoch = 0;                // barriers passed
    int64_t step = 0;                 // events (accesses, cacheinvalid, fence, barriers)
    std::vector<int64_t> arrived;     // step of the arrival at barrier k + 1
    std::vector<int64_t> passed;      // step of passing barrier k + 1
    std::vector<int64_t> fences;      // steps of fence()
    std::vector<int64_t> flushed;     // steps of cacheinvalid() (all of global memory)
    std::unordered_map<uint64_t, std::vector<int64_t>> flushed_line;  // cacheinvalid(t, ...)
    int32_t at_line = 0;              // the running statement (pto::gang::at)
    const char *at_name = "";
};

struct Gang {
    std::mutex m;
    std::condition_variable cv;
    int32_t n;
    int64_t line_bytes;
    std::vector<Block> blocks;
    int64_t hard_arrived = 0;
    int64_t hard_round = 0;
    bool stopped = false;
    std::unordered_map<uint64_t, std::vector<Access>> writes;  // line -> writes
    std::unordered_map<uint64_t, std::vector<Access>> reads;   // line -> reads

    Gang(int32_t n_, int64_t line_bytes_) : n(n_), line_bytes(line_bytes_), blocks(size_t(n_)) {}
};

inline Gang *&current() {
    static thread_local Gang *gang = nullptr;
    return gang;
}
inline int32_t &current_block() {
    static thread_local int32_t block = 0;
    return block;
}

/* Records the gang's fault (the kernel's first fault is the one kept) and stops it. */
inline void stop(Gang &g, const char *fmt, ...) {
    if (!g.stopped && __atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(pto_sim_fault, sizeof pto_sim_fault, fmt, ap);
        va_end(ap);
    }
    g.stopped = true;
    g.cv.notify_all();
}

/* "block 3" / "blocks 0, 2-5": a sorted list of block numbers, runs joined. */
inline std::string block_list(const std::vector<int32_t> &b) {
    std::string out = b.size() == 1 ? "block " : "blocks ";
    for (size_t i = 0; i < b.size();) {
        size_t j = i;
        while (j + 1 < b.size() && b[j + 1] == b[j] + 1) ++j;
        if (i) out += ", ";
        out += std::to_string(b[i]);
        if (j > i) out += "-" + std::to_string(b[j]);
        i = j + 1;
    }
    return out;
}

/* No block can move: each is finished or waits on a condition that is false. */
inline bool deadlocked(Gang &g) {
    for (Block &b : g.blocks)
        if (b.state == RUNNING || (b.state == WAITING && (*b.ready)())) return false;
    return true;
}

inline void report_deadlock(Gang &g) {
    std::string text = "cross-block barrier deadlock: ";
    std::vector<int32_t> finished;
    std::vector<bool> told(g.blocks.size(), false);
    bool first = true;
    for (size_t i = 0; i < g.blocks.size(); ++i) {
        const Block &b = g.blocks[i];
        if (b.state == FINISHED) finished.push_back(int32_t(i));
        if (b.state != WAITING || told[i]) continue;
        std::vector<int32_t> same;
        for (size_t j = i; j < g.blocks.size(); ++j) {
            const Block &o = g.blocks[j];
            if (o.state == WAITING && o.wait_line == b.wait_line && o.wait_soft == b.wait_soft &&
                o.wait_target == b.wait_target && o.wait_counter == b.wait_counter) {
                same.push_back(int32_t(j));
                told[j] = true;
            }
        }
        text += (first ? "" : "; ") + block_list(same) + (same.size() == 1 ? " waits" : " wait") +
                " in pl.system.syncall (line " + std::to_string(b.wait_line) + ")";
        if (b.wait_soft)
            text += " for its counter to reach " + std::to_string(b.wait_target) + " (it holds " +
                    std::to_string(*b.wait_counter) + ")";
        first = false;
    }
    if (!finished.empty())
        text += "; " + block_list(finished) + (finished.size() == 1 ? " has" : " have") +
                " finished";
    stop(g, "%s", text.c_str());
}

/* Waits (the gang's lock held) until `ready()`; stops the gang on a deadlock. */
inline void wait(std::unique_lock<std::mutex> &lock, Gang &g, Block &b, int32_t line,
                 const int32_t *counter, int64_t target, const std::function<bool()> &ready) {
    b.state = WAITING;
    b.wait_line = line;
    b.wait_soft = counter != nullptr;
    b.wait_target = target;
    b.wait_counter = counter;
    b.ready = &ready;
    while (!ready()) {
        if (!g.stopped && deadlocked(g)) report_deadlock(g);
        if (g.stopped) {
            b.state = RUNNING;
            b.ready = nullptr;
            throw Abort{};
        }
        g.cv.wait(lock);
    }
    b.state = RUNNING;
    b.ready = nullptr;
}

inline void arrive(Block &b) { b.arrived.push_back(++b.step); }
inline void pass(Block &b) {
    b.passed.push_back(++b.step);
    ++b.epoch;
}

/* pl.system.syncall(): every block of the launch arrives before any goes on.  `required`:
 * the blocks the launch must have (the cores of the kernel's type, `cores` names them). */
inline void syncall_hard(int64_t required, const char *cores, int32_t line) {
    Gang &g = *current();
    std::unique_lock<std::mutex> lock(g.m);
    if (g.stopped) throw Abort{};
    if (g.n != required) {
        stop(g, "cross-block barrier: the hard pl.system.syncall (line %d) needs a launch of %lld "
                "blocks (%s), this one has %d", line, (long long)required, cores, g.n);
        throw Abort{};
    }
    Block &b = g.blocks[size_t(current_block())];
    arrive(b);
    const int64_t round = g.hard_round;
    if (++g.hard_arrived == g.n) {
        g.hard_arrived = 0;
        ++g.hard_round;
        g.cv.notify_all();
    } else {
        const std::function<bool()> ready = [&g, round]() { return g.hard_round != round; };
        wait(lock, g, b, line, nullptr, 0, ready);
    }
    pass(b);
}

/* pl.system.syncall(mode="soft"): pto-isa's counter in `ws`'s first INT32. */
inline void syncall_soft(const PtoTensor &ws, int64_t used, int32_t line) {
    Gang &g = *current();
    std::unique_lock<std::mutex> lock(g.m);
    if (g.stopped) throw Abort{};
    const int64_t total = used != 0 ? used : g.n;
    if (total < 0) {
        stop(g, "cross-block barrier: pl.system.syncall(mode=\"soft\") (line %d) has used_cores "
                "%lld", line, (long long)used);
        throw Abort{};
    }
    Block &b = g.blocks[size_t(current_block())];
    arrive(b);
    int32_t *counter = static_cast<int32_t *>(ws.data);
    const int32_t before = *counter;
    *counter = int32_t(uint32_t(before) + 1u);
    // int32 arithmetic, as pto-isa's (before / used + 1) * used; C++ truncates the quotient.
    const int32_t target = int32_t(uint32_t(int64_t(before) / total + 1) * uint32_t(total));
    g.cv.notify_all();
    const std::function<bool()> ready = [counter, target]() { return *counter >= target; };
    wait(lock, g, b, line, counter, target, ready);
    pass(b);
}

inline void fence() {
    Gang &g = *current();
    std::lock_guard<std::mutex> lock(g.m);
    Block &b = g.blocks[size_t(current_block())];
    b.fences.push_back(++b.step);
}

/* cacheinvalid(): every line; cacheinvalid_line(address): the line holding it. */
inline void cacheinvalid() {
    Gang &g = *current();
    std::lock_guard<std::mutex> lock(g.m);
    Block &b = g.blocks[size_t(current_block())];
    b.flushed.push_back(++b.step);
}

inline void cacheinvalid_line(const void *address) {
    Gang &g = *current();
    std::lock_guard<std::mutex> lock(g.m);
    Block &b = g.blocks[size_t(current_block())];
    b.flushed_line[uint64_t(uintptr_t(address)) / uint64_t(g.line_bytes)].push_back(++b.step);
}

/* The statement running: its line and the tensor it accesses (messages). */
inline void at(int32_t line, const char *name) {
    Block &b = current()->blocks[size_t(current_block())];
    b.at_line = line;
    b.at_name = name;
}

/* The first step in `steps` after `after` (-1: none). */
inline int64_t first_after(const std::vector<int64_t> &steps, int64_t after) {
    for (int64_t s : steps)
        if (s > after) return s;
    return -1;
}

/* The first cacheinvalid of `b` covering `line` after step `after` (-1: none). */
inline int64_t flushed_after(const Block &b, uint64_t line, int64_t after) {
    int64_t best = first_after(b.flushed, after);
    auto it = b.flushed_line.find(line);
    if (it != b.flushed_line.end()) {
        int64_t s = first_after(it->second, after);
        if (s >= 0 && (best < 0 || s < best)) best = s;
    }
    return best;
}

/* Checks a read of `mask` of `line` by block `r` against the line's writes. */
inline void check_read(Gang &g, int32_t r, uint64_t line, uint64_t mask) {
    auto found = g.writes.find(line);
    if (found == g.writes.end()) return;
    Block &reader = g.blocks[size_t(r)];
    for (const Access &w : found->second) {
        if (w.block == r || !(w.mask & mask)) continue;
        const Block &writer = g.blocks[size_t(w.block)];
        const int64_t k = w.epoch;  // the barrier that orders them is barrier k + 1
        if (reader.epoch <= k || int64_t(writer.arrived.size()) <= k) {
            stop(g, "cross-block barrier: block %d reads `%s` at line %d, bytes block %d writes at "
                    "line %d with no pl.system.syncall between the two", r, reader.at_name,
                 reader.at_line, w.block, w.line);
            throw Abort{};
        }
        const int64_t flushed = flushed_after(writer, line, w.step);
        const int64_t fenced = flushed < 0 ? -1 : first_after(writer.fences, flushed);
        if (fenced < 0 || fenced > writer.arrived[size_t(k)]) {
            stop(g, "cross-block barrier: block %d reads `%s` at line %d, bytes block %d wrote at "
                    "line %d and did not publish before the barrier (pl.system.cacheinvalid() "
                    "then pl.system.fence())", r, reader.at_name, reader.at_line, w.block, w.line);
            throw Abort{};
        }
        if (flushed_after(reader, line, reader.passed[size_t(k)]) < 0) {
            stop(g, "cross-block barrier: block %d reads `%s` at line %d, bytes block %d wrote at "
                    "line %d, with no pl.system.cacheinvalid() since the barrier", r,
                 reader.at_name, reader.at_line, w.block, w.line);
            throw Abort{};
        }
    }
}

/* Checks a write of `mask` of `line` by block `b` against the other blocks' unordered
 * reads and writes of those bytes. */
inline void check_write(Gang &g, int32_t b, uint64_t line, uint64_t mask, bool atomic) {
    Block &writer = g.blocks[size_t(b)];
    for (auto *table : {&g.reads, &g.writes}) {
        auto found = table->find(line);
        if (found == table->end()) continue;
        for (const Access &a : found->second) {
            if (a.block == b || !(a.mask & mask)) continue;
            if (writer.epoch > a.epoch && int64_t(g.blocks[size_t(a.block)].arrived.size()) > a.epoch)
                continue;  // a barrier the other block reached after its access orders them
            if (table == &g.writes && atomic && a.atomic) continue;  // atomic adds commute
            stop(g, "cross-block barrier: block %d writes `%s` at line %d, bytes block %d %s at "
                    "line %d with no pl.system.syncall between the two", b, writer.at_name,
                 writer.at_line, a.block, table == &g.reads ? "reads" : "writes", a.line);
            throw Abort{};
        }
    }
}

/* Adds an access of `mask` of `line` to `table`: a block keeps one record per line and
 * barrier interval; its older records lose the bytes a write replaces. */
inline void record(Gang &g, std::unordered_map<uint64_t, std::vector<Access>> &table, int32_t b,
                   uint64_t line, uint64_t mask, bool atomic, bool write) {
    Block &blk = g.blocks[size_t(b)];
    std::vector<Access> &list = table[line];
    bool merged = false;
    for (size_t i = 0; i < list.size();) {
        Access &a = list[i];
        if (a.block == b && a.epoch == blk.epoch && a.atomic == atomic) {
            a.mask |= mask;
            a.step = blk.step;
            a.line = blk.at_line;
            merged = true;
        } else if (write && a.block == b && (a.mask &= ~mask) == 0) {
            list.erase(list.begin() + long(i));
            continue;
        }
        ++i;
    }
    if (!merged) list.push_back({b, blk.epoch, blk.step, blk.at_line, mask, atomic});
}

/* The bytes [start, end) of global memory, line by line: `fn(line, mask)`. */
template <class F>
inline void for_lines(int64_t line_bytes, uint64_t start, uint64_t end, F fn) {
    const uint64_t L = uint64_t(line_bytes), unit = L >= 64 ? L / 64 : 1;
    for (uint64_t line = start / L; line * L < end; ++line) {
        const uint64_t lo = (start > line * L ? start - line * L : 0) / unit;
        const uint64_t hi = ((end < (line + 1) * L ? end - line * L : L) - 1) / unit;
        const uint64_t upper = hi >= 63 ? ~uint64_t(0) : ((uint64_t(1) << (hi + 1)) - 1);
        fn(line, upper & ~((uint64_t(1) << lo) - 1));
    }
}

/* The window observer of a block's thread (bounds.hpp): checks, then records. */
inline void observe(bool write, bool atomic, const void *base, int64_t row_stride,
                    int64_t col_stride, int32_t rows, int32_t cols, int32_t elem) {
    Gang &g = *current();
    const int32_t b = current_block();
    std::lock_guard<std::mutex> lock(g.m);
    if (g.stopped) throw Abort{};
    Block &blk = g.blocks[size_t(b)];
    ++blk.step;
    const uint64_t origin = uint64_t(uintptr_t(base));
    for (int32_t r = 0; r < rows; ++r) {
        const uint64_t row = origin + uint64_t(int64_t(r) * row_stride);
        const int32_t runs = col_stride == elem ? 1 : cols;
        const uint64_t run_bytes = uint64_t(col_stride == elem ? int64_t(cols) * elem : elem);
        for (int32_t c = 0; c < runs && cols > 0; ++c) {
            const uint64_t start = row + uint64_t(int64_t(c) * col_stride);
            for_lines(g.line_bytes, start, start + run_bytes, [&](uint64_t line, uint64_t mask) {
                if (write) {
                    check_write(g, b, line, mask, atomic);
                    record(g, g.writes, b, line, mask, atomic, true);
                } else {
                    check_read(g, b, line, mask);
                    record(g, g.reads, b, line, mask, false, false);
                }
            });
        }
    }
}

/* Runs block `b` on this thread. */
template <class Fn>
inline void run_block(Gang &g, int32_t b, PtoCore *core, const PtoArg *args, Fn fn) {
    current() = &g;
    current_block() = b;
    detail::window_observer() = observe;
    try {
        fn(core, args);
    } catch (const Abort &) {
    }
    detail::window_observer() = nullptr;
    current() = nullptr;
    current_block() = 0;
    std::lock_guard<std::mutex> lock(g.m);
    g.blocks[size_t(b)].state = FINISHED;
    g.cv.notify_all();
}

/* The on-chip spaces of a core, in PtoCore's order (and codegen's `_SPACE`). */
constexpr int kSpaces = 8;

/* Runs the launch's block_num blocks of `fn` at once (at most `max_blocks`, `core_kind`:
 * the cores of the kernel's type): block 0 on this thread and `core`,
 * the others each on a thread and a core of their own, whose on-chip buffers hold
 * `capacity[k]` bytes of each space (vec, mat, left, right, acc, bias, left_scale,
 * right_scale), the first `poison[k]` poisoned as the runtime poisons a core's (0xFF: NaN
 * in every float format). */
template <class Fn>
inline void run(PtoCore *core, const PtoArg *args, Fn fn, int64_t line_bytes,
                const int64_t capacity[kSpaces], const int64_t poison[kSpaces], int64_t max_blocks,
                const char *core_kind) {
    const int32_t n = core->block_num > 0 ? core->block_num : 1;
    if (n > max_blocks) {  // CheckCrossBlockBarriers refuses such a launch it can see
        if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) == 0)
            snprintf(pto_sim_fault, sizeof pto_sim_fault,
                     "cross-block barrier: a launch of %d blocks of a kernel with a "
                     "pl.system.syncall, more than %s (%lld): on the device the rest would run "
                     "in a later wave, which a barrier across waves never lets start", n,
                     core_kind, (long long)max_blocks);
        return;
    }
    Gang g(n, line_bytes);
    std::vector<PtoCore> cores(size_t(n), *core);
    // One allocation holds every further core's buffers, each 64-byte aligned: its pages
    // are mapped as they are touched, so a core costs the bytes its kernel poisons.
    size_t per_core = 0;
    for (int k = 0; k < kSpaces; ++k)
        per_core += (size_t(capacity[k] > 0 ? capacity[k] : 1) + 63) & ~size_t(63);
    std::unique_ptr<uint8_t[]> storage(new uint8_t[per_core * size_t(n > 1 ? n - 1 : 1) + 64]);
    uint8_t *next = reinterpret_cast<uint8_t *>((uintptr_t(storage.get()) + 63) & ~uintptr_t(63));
    for (int32_t b = 1; b < n; ++b) {
        PtoCore &c = cores[size_t(b)];
        uint8_t **spaces[kSpaces] = {&c.vec, &c.mat, &c.left, &c.right, &c.acc, &c.bias,
                                     &c.left_scale, &c.right_scale};
        for (int k = 0; k < kSpaces; ++k) {
            memset(next, 0xFF, size_t(poison[k]));
            *spaces[k] = next;
            next += (size_t(capacity[k] > 0 ? capacity[k] : 1) + 63) & ~size_t(63);
        }
        cores[size_t(b)].block_idx = b;
    }
    std::vector<std::thread> threads;
    int32_t started = 1;
    try {
        for (; started < n; ++started)
            threads.emplace_back([&g, &cores, args, fn, started]() {
                run_block(g, started, &cores[size_t(started)], args, fn);
            });
    } catch (const std::exception &) {  // no thread to be had: the launch cannot run
        std::unique_lock<std::mutex> lock(g.m);
        stop(g, "cross-block barrier: could not start a thread for each of the %d blocks of the "
                "launch (%d started)", n, started);
        for (int32_t b = started; b < n; ++b) g.blocks[size_t(b)].state = FINISHED;
    }
    run_block(g, 0, core, args, fn);
    for (std::thread &t : threads) t.join();
}

}  // namespace gang
}  // namespace pto

#endif
