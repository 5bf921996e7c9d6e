/*
 * The cross-core pipe of a pl.FunctionType.Group task (pto-isa TPUSH / TPOP / TFREE):
 * the cube function runs on one thread and the vector function on two, one per lane
 * (lane_subblock() 0 / 1), all three at once, handing tiles through FIFO rings of
 * `slot_num` slots of `slot_size` bytes, one ring per pipe id and direction.
 *
 * A ring's k-th tile goes to slot k % slot_num.  A producer's push of tile k waits until
 * every consumer has freed tile k - slot_num (the slot is free); a consumer's pop of
 * tile k waits until every producer has pushed its part of it; a free returns the
 * consumer's oldest popped slot.  Producers and consumers by direction and split:
 *   C2V (cube -> vector): the cube pushes whole tiles; split 1 / 2: both lanes pop, lane i
 *     its half (rows / columns); split 0: lane 0 pops the tile, and lane 1 takes no part
 *     (its pops are tiles of zeros at once, its frees do nothing: pto-isa's CPU model);
 *   V2C (vector -> cube): split 1 / 2: each lane pushes its half of the tile the cube pops
 *     whole; split 0: lane 0's push is the tile and lane 1's pushes are dropped (as there).
 * The values a program computes are fixed by this FIFO order, whatever order the threads
 * run in, when its lanes share data only through the pipe.
 *
 * Deadlock is detected, never waited out: a lane about to wait first checks whether every
 * lane is either finished or waiting on a condition that is false; then no lane can ever
 * move, the group records a fault naming each waiting lane's operator and line, and every
 * lane stops (Abort).  After the lanes end, a ring holding tiles pushed and never popped,
 * or popped and never freed, is a fault too.  pypto.runtime raises the fault as a
 * KernelError naming the kernel (bounds.hpp's record).
 */
#ifndef PTO_PIPE_HPP
#define PTO_PIPE_HPP

#include <stdarg.h>
#include <stdio.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "isa.hpp"
#include "lane.hpp"

namespace pto {
namespace pipe {

enum Lane { AIC = 0, AIV0 = 1, AIV1 = 2, LANES = 3 };
enum State { RUNNING, WAITING, FINISHED };
inline const char *lane_name(int lane) {
    return lane == AIC ? "the cube (AIC)" : lane == AIV0 ? "vector lane 0" : "vector lane 1";
}

struct Abort {};  // thrown into a lane when the group stops

/* A no-split ring both lanes take part in (a pl.split_aiv NONE region's): each lane pops
 * the whole tile; both push, and the slot holds lane 0's tile. */
const int BOTH_LANES = 3;

struct Ring {
    int id;
    bool c2v;
    int split;  // 0 none, 1 up-down, 2 left-right, BOTH_LANES
    int slot_num;
    int64_t slot_size;
    std::vector<uint8_t> data;
    int64_t pushed[LANES] = {0, 0, 0};
    int64_t popped[LANES] = {0, 0, 0};
    int64_t freed[LANES] = {0, 0, 0};

    Ring(int id_, bool c2v_, int split_, int slot_num_, int64_t slot_size_)
        : id(id_), c2v(c2v_), split(split_), slot_num(slot_num_), slot_size(slot_size_),
          data(size_t(slot_num_) * size_t(slot_size_)) {}
    bool producer(int lane) const {
        return c2v ? lane == AIC : (lane == AIV0 || (split != 0 && lane == AIV1));
    }
    bool consumer(int lane) const {
        return c2v ? (lane == AIV0 || (split != 0 && lane == AIV1)) : lane == AIC;
    }
    const char *name() const { return c2v ? "cube-to-vector" : "vector-to-cube"; }
};

struct Group {
    std::mutex m;
    std::condition_variable cv;
    std::vector<Ring> rings;
    State state[LANES] = {RUNNING, RUNNING, RUNNING};
    const char *op[LANES] = {nullptr, nullptr, nullptr};
    int line[LANES] = {0, 0, 0};
    const std::function<bool()> *ready[LANES] = {nullptr, nullptr, nullptr};
    bool stopped = false;

    Ring &ring(int id, bool c2v) {
        for (Ring &r : rings)
            if (r.id == id && r.c2v == c2v) return r;
        return rings.front();  // unreachable: the checks of passes/cross_core_pipe.py
    }
};

inline Group *&current_group() {
    static thread_local Group *group = nullptr;
    return group;
}
inline int &current_lane() {
    static thread_local int lane = AIC;
    return lane;
}

/* Records the group's fault (the first fault of the kernel is the one kept). */
inline void fault(const char *fmt, ...) {
    if (__atomic_fetch_add(&pto_sim_fault_count, 1, __ATOMIC_ACQ_REL) != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pto_sim_fault, sizeof pto_sim_fault, fmt, ap);
    va_end(ap);
}

/* No lane can move: each is finished or waits on a condition that is false. */
inline bool deadlocked(Group &g) {
    for (int l = 0; l < LANES; ++l)
        if (g.state[l] == RUNNING || (g.state[l] == WAITING && (*g.ready[l])())) return false;
    return true;
}

inline void report_deadlock(Group &g) {
    char text[240];
    size_t n = 0;
    for (int l = 0; l < LANES && n < sizeof text; ++l) {
        if (g.state[l] == WAITING)
            n += size_t(snprintf(text + n, sizeof text - n, "%s%s waits in pl.%s (line %d)",
                                 n ? ", " : "", lane_name(l), g.op[l], g.line[l]));
        else
            n += size_t(snprintf(text + n, sizeof text - n, "%s%s has finished",
                                 n ? ", " : "", lane_name(l)));
    }
    fault("cross-core pipe deadlock: %s", text);
}

/* Waits (the group's lock held) until `ready()`; stops the group on a deadlock. */
inline void wait(std::unique_lock<std::mutex> &lock, Group &g, const char *op, int line,
                 const std::function<bool()> &ready) {
    const int lane = current_lane();
    g.state[lane] = WAITING;
    g.op[lane] = op;
    g.line[lane] = line;
    g.ready[lane] = &ready;
    while (!ready()) {
        if (!g.stopped && deadlocked(g)) {
            report_deadlock(g);
            g.stopped = true;
            g.cv.notify_all();
        }
        if (g.stopped) {
            g.state[lane] = RUNNING;
            throw Abort{};
        }
        g.cv.wait(lock);
    }
    g.state[lane] = RUNNING;
    g.ready[lane] = nullptr;
}

/* The part of a [rows, cols] tile lane `lane` holds under `split` (0: all of it). */
struct Part {
    int32_t r0, c0, rows, cols;
};
inline Part part(int split, int lane, int32_t rows, int32_t cols) {
    const int32_t half = lane == AIV1 ? 1 : 0;
    if (split == 1) return {half * (rows / 2), 0, rows / 2, cols};
    if (split == 2) return {0, half * (cols / 2), rows, cols / 2};
    return {0, 0, rows, cols};
}

/* Copies `part` between the tile `t` (dense, the part's shape when `whole` is false) and
 * the slot holding the whole [rows, cols] tile. */
template <class T>
inline void copy_part(T *slot, int32_t cols, Part p, Tile<T> t, bool into_slot) {
    for (int32_t r = 0; r < p.rows; ++r) {
        T *row = slot + size_t(p.r0 + r) * size_t(cols) + size_t(p.c0);
        T *mine = t.data + size_t(r) * size_t(t.cols);
        if (into_slot)
            memcpy(row, mine, size_t(p.cols) * sizeof(T));
        else
            memcpy(mine, row, size_t(p.cols) * sizeof(T));
    }
}

/* Copies lane `lane`'s tile `t` into (or out of) slot k % slot_num of `r`, which holds the
 * whole tile: `t` itself, or with `halved` the lane's half of a tile twice its size along
 * the ring's split. */
template <class T>
inline void transfer(Ring &r, int64_t k, int lane, Tile<T> t, bool halved, bool into_slot) {
    const int32_t rows = halved && r.split == 1 ? t.rows * 2 : t.rows;
    const int32_t cols = halved && r.split == 2 ? t.cols * 2 : t.cols;
    T *slot = reinterpret_cast<T *>(r.data.data() + size_t(k % r.slot_num) * size_t(r.slot_size));
    copy_part(slot, cols, halved ? part(r.split, lane, rows, cols) : Part{0, 0, rows, cols}, t,
              into_slot);
}

/* pl.tpush_to_aiv / pl.tpush_to_aic of `t`: the lane's part of the ring's next tile, the
 * whole tile being [rows, cols] (t's shape, doubled along the split on a vector lane). */
template <class T>
inline void push(int id, bool c2v, Tile<T> t, const char *op, int line) {
    Group &g = *current_group();
    const int lane = current_lane();
    std::unique_lock<std::mutex> lock(g.m);
    Ring &r = g.ring(id, c2v);
    if (!r.producer(lane)) return;  // lane 1 of a no-split V2C pipe takes no part
    const int64_t k = r.pushed[lane];
    const std::function<bool()> ready = [&r, k]() {
        for (int c = 0; c < LANES; ++c)
            if (r.consumer(c) && r.freed[c] < k - r.slot_num + 1) return false;
        return true;
    };
    wait(lock, g, op, line, ready);
    if (!(r.split == BOTH_LANES && lane == AIV1))  // the cube gets lane 0's tile
        transfer(r, k, lane, t, !c2v && r.split != 0, true);
    r.pushed[lane] = k + 1;
    g.cv.notify_all();
}

/* pl.tpop_from_aic / pl.tpop_from_aiv into `t`: the lane's part of the ring's next tile. */
template <class T>
inline void pop(int id, bool c2v, Tile<T> t, const char *op, int line) {
    Group &g = *current_group();
    const int lane = current_lane();
    std::unique_lock<std::mutex> lock(g.m);
    Ring &r = g.ring(id, c2v);
    if (!r.consumer(lane)) {  // lane 1 of a no-split C2V pipe: a tile of zeros
        for (int32_t i = 0; i < t.rows * t.cols; ++i) t.data[i] = pad_zero<T>();
        return;
    }
    const int64_t k = r.popped[lane];
    const std::function<bool()> ready = [&r, k]() {
        for (int p = 0; p < LANES; ++p)
            if (r.producer(p) && r.pushed[p] < k + 1) return false;
        return true;
    };
    wait(lock, g, op, line, ready);
    transfer(r, k, lane, t, c2v && r.split != 0, false);
    r.popped[lane] = k + 1;
}

/* pl.tfree_to_aic / pl.tfree_to_aiv: the lane's oldest popped slot goes back. */
inline void free_slot(int id, bool c2v, const char *op, int line) {
    Group &g = *current_group();
    const int lane = current_lane();
    std::unique_lock<std::mutex> lock(g.m);
    Ring &r = g.ring(id, c2v);
    if (!r.consumer(lane)) return;
    if (r.freed[lane] >= r.popped[lane]) {
        fault("cross-core pipe: %s frees a slot of the %s ring of pipe %d in pl.%s (line %d) "
              "with no popped tile held", lane_name(lane), r.name(), r.id, op, line);
        g.stopped = true;
        g.cv.notify_all();
        throw Abort{};
    }
    r.freed[lane] += 1;
    g.cv.notify_all();
}

/* What the rings hold once every lane has ended: each tile pushed was popped and freed. */
inline void check_drained(Group &g) {
    if (g.stopped) return;
    for (Ring &r : g.rings) {
        int64_t tiles = -1;
        for (int p = 0; p < LANES; ++p)
            if (r.producer(p)) tiles = tiles < 0 ? r.pushed[p] : (r.pushed[p] < tiles ? r.pushed[p] : tiles);
        for (int c = 0; c < LANES; ++c) {
            if (!r.consumer(c)) continue;
            if (r.popped[c] < tiles) {
                fault("cross-core pipe: %lld tile(s) pushed into the %s ring of pipe %d were "
                      "never popped by %s, which has finished", (long long)(tiles - r.popped[c]),
                      r.name(), r.id, lane_name(c));
                return;
            }
            if (r.freed[c] < r.popped[c]) {
                fault("cross-core pipe: %s popped %lld tile(s) from the %s ring of pipe %d and "
                      "freed %lld: each pop needs its tfree", lane_name(c),
                      (long long)r.popped[c], r.name(), r.id, (long long)r.freed[c]);
                return;
            }
        }
        for (int p = 0; p < LANES; ++p)
            if (r.producer(p) && r.pushed[p] != tiles) {
                fault("cross-core pipe: the two vector lanes pushed %lld and %lld halves into "
                      "the %s ring of pipe %d", (long long)r.pushed[AIV0],
                      (long long)r.pushed[AIV1], r.name(), r.id);
                return;
            }
    }
}

/* Runs `lane` of the group on this thread. */
template <class F>
inline void run_lane(Group &g, int lane, F body) {
    current_group() = &g;
    current_lane() = lane;
    lane_subblock() = lane == AIV1 ? 1 : 0;
    try {
        body();
    } catch (const Abort &) {
    }
    std::lock_guard<std::mutex> lock(g.m);
    g.state[lane] = FINISHED;
    g.ready[lane] = nullptr;
    g.cv.notify_all();
}

/* Runs the cube function and the vector function's two lanes at once; returns when all
 * three have ended. */
template <class Cube, class Vector>
inline void run_group(Group &g, Cube cube, Vector vector) {
    std::thread lane0([&g, &vector]() { run_lane(g, AIV0, [&vector]() { vector(); }); });
    std::thread lane1([&g, &vector]() { run_lane(g, AIV1, [&vector]() { vector(); }); });
    run_lane(g, AIC, [&cube]() { cube(); });
    lane0.join();
    lane1.join();
    current_group() = nullptr;
    current_lane() = AIC;
    lane_subblock() = 0;
    check_drained(g);
}

}  // namespace pipe
}  // namespace pto

#endif
