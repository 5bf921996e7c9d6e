/*
 * Sorting: tsort32 (pl.tile.sort32, the PTO instruction TSORT32) and tmrgsort
 * (pl.tile.mrgsort, TMRGSORT), as pto-isa's CPU model (cpu/TSort32.hpp, cpu/TMrgSort.hpp)
 * computes them.
 *
 * A sorted element is an 8-byte value-index pair: an FP32 tile holds it as two elements
 * [value, index bits], an FP16 tile as four [value, 0, index bits low, index bits high].
 *
 *  - tsort32 sorts each row's valid columns in blocks of 32 (the last may be shorter: it
 *    is sorted alone), descending by value, a tie by the smaller index first.  The order
 *    is the one libstdc++'s std::stable_sort gives with that comparison (`stable_sort`
 *    below follows it step for step), which decides where a NaN goes: a NaN compares
 *    neither greater nor less than anything, so it is treated as equal to every value and
 *    its place depends on the merge order.  -0.0 and +0.0 are equal values.
 *  - tmrgsort merges runs of pairs: at each step the first run whose head compares
 *    strictly greater than the best head so far wins (ties go to the earlier run; a NaN
 *    head is never beaten once taken, and never beats).  The single-list form merges every
 *    group of 4 consecutive runs of block_len elements; the multi-list form merges 2 to 4
 *    tiles into dst.
 */
#ifndef PTO_SORT_HPP
#define PTO_SORT_HPP

#include <stdint.h>
#include <string.h>

namespace pto {
namespace detail {

struct SortPair {
    float key;        // the value, compared as a float
    uint32_t index;
    uint8_t raw[8];   // the pair's 8 bytes, as written to the tile
};

// The comparison of pto-isa's CPU model: greater values first, equal ones by index.
inline bool sorts_before(const SortPair &a, const SortPair &b) {
    if (a.key != b.key) return a.key > b.key;
    return a.index < b.index;
}

// libstdc++'s std::stable_sort on n <= 32 elements (a buffer of (n + 1) / 2 always fits):
// each half by __merge_sort_with_buffer (insertion sort of chunks of 7, then merge passes
// through the buffer and back), then __merge_adaptive of the halves (forward when they
// are equal, backward when the first is longer).
inline void insertion_sort(SortPair *a, int n) {
    for (int i = 1; i < n; ++i) {
        const SortPair v = a[i];
        if (sorts_before(v, a[0])) {
            memmove(a + 1, a, sizeof(SortPair) * i);
            a[0] = v;
            continue;
        }
        int j = i;
        while (sorts_before(v, a[j - 1])) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = v;
    }
}

inline SortPair *move_merge(const SortPair *x, int nx, const SortPair *y, int ny, SortPair *out) {
    int i = 0, j = 0;
    while (i < nx && j < ny) *out++ = sorts_before(y[j], x[i]) ? y[j++] : x[i++];
    while (i < nx) *out++ = x[i++];
    while (j < ny) *out++ = y[j++];
    return out;
}

inline void merge_sort_loop(const SortPair *a, int n, SortPair *out, int step) {
    int i = 0;
    for (; n - i >= 2 * step; i += 2 * step) out = move_merge(a + i, step, a + i + step, step, out);
    const int s = n - i < step ? n - i : step;
    move_merge(a + i, s, a + i + s, n - i - s, out);
}

inline void merge_sort_with_buffer(SortPair *a, int n, SortPair *buffer) {
    int i = 0;
    for (; n - i >= 7; i += 7) insertion_sort(a + i, 7);
    insertion_sort(a + i, n - i);
    for (int step = 7; step < n; step *= 4) {
        merge_sort_loop(a, n, buffer, step);
        merge_sort_loop(buffer, n, a, 2 * step);
    }
}

inline void stable_sort(SortPair *a, int n) {
    if (n == 0) return;
    SortPair buffer[32];
    const int half = (n + 1) / 2, rest = n - half;
    merge_sort_with_buffer(a, half, buffer);
    merge_sort_with_buffer(a + half, rest, buffer);
    if (half <= rest) {
        memcpy(buffer, a, sizeof(SortPair) * half);
        move_merge(buffer, half, a + half, rest, a);
        return;
    }
    // Backward: the second half in the buffer, merged from the back into a.
    memcpy(buffer, a + half, sizeof(SortPair) * rest);
    if (rest == 0) return;
    int l1 = half - 1, l2 = rest - 1, out = n;
    while (true) {
        if (sorts_before(buffer[l2], a[l1])) {
            a[--out] = a[l1];
            if (l1 == 0) {
                while (l2 >= 0) a[--out] = buffer[l2--];
                return;
            }
            --l1;
        } else {
            a[--out] = buffer[l2];
            if (l2 == 0) return;
            --l2;
        }
    }
}

// Elements of T per 8-byte pair.
template <class T> constexpr int kPairElems = int(8 / sizeof(T));

template <class T> inline float pair_key(const T *pair) { return Num<T>::load(pair[0]); }

// Merges runs (heads[k] .. ends[k], pair pointers) into out, `count` pairs at most.
template <class T> inline void merge_runs(T *out, const T **heads, const T **ends, int runs, int64_t count) {
    constexpr int E = kPairElems<T>;
    for (int64_t o = 0; o < count; ++o) {
        int pick = -1;
        for (int k = 0; k < runs; ++k) {
            if (heads[k] >= ends[k]) continue;
            if (pick < 0 || pair_key(heads[k]) > pair_key(heads[pick])) pick = k;
        }
        if (pick < 0) return;
        memcpy(out + o * E, heads[pick], 8);
        heads[pick] += E;
    }
}

}  // namespace detail

/* dst[r] holds row r's valid columns sorted in blocks of 32, as value-index pairs. */
template <class T> inline void tsort32(Tile<T> d, Tile<T> src, Tile<uint32_t> idx) {
    constexpr int E = detail::kPairElems<T>;
    detail::SortPair block[32];
    for (int32_t r = 0; r < src.vrows; ++r) {
        for (int32_t j = 0; j < src.vcols; j += 32) {
            const int n = src.vcols - j < 32 ? src.vcols - j : 32;
            for (int k = 0; k < n; ++k) {
                const T v = detail::at(src, r, j + k);
                const uint32_t i = detail::at(idx, r, j + k);
                detail::SortPair &p = block[k];
                p.key = detail::Num<T>::load(v);
                p.index = i;
                memset(p.raw, 0, sizeof p.raw);
                memcpy(p.raw, &v, sizeof(T));
                memcpy(p.raw + 4, &i, 4);
            }
            detail::stable_sort(block, n);
            for (int k = 0; k < n; ++k) memcpy(&detail::ref(d, r, (j + k) * E), block[k].raw, 8);
        }
    }
}

/* The form with a tmp tile (TSORT32's scratch for a partial last block): the same sort;
 * tmp is left as it was. */
template <class T> inline void tsort32(Tile<T> d, Tile<T> src, Tile<uint32_t> idx, Tile<T>) {
    tsort32(d, src, idx);
}

/* The single-list form: each group of 4 runs of block_len elements (of src's one row)
 * merged into the same columns of dst. */
template <class T> inline void tmrgsort(Tile<T> d, Tile<T> src, int32_t block_len) {
    constexpr int E = detail::kPairElems<T>;
    for (int32_t c = 0; c + 4 * block_len <= d.vcols; c += 4 * block_len) {
        const T *heads[4], *ends[4];
        for (int k = 0; k < 4; ++k) {
            heads[k] = src.data + c + k * block_len;
            ends[k] = heads[k] + block_len;
        }
        detail::merge_runs(d.data + c, heads, ends, 4, 4 * block_len / E);
    }
}

/* The multi-list form: 2 to 4 tiles of one row, each a sorted run, merged into dst
 * (tmp is the instruction's staging buffer: its contents afterwards are undefined). */
template <class T, class... S> inline void tmrgsort(Tile<T> d, Tile<T>, Tile<T> s0, S... rest) {
    constexpr int E = detail::kPairElems<T>;
    const Tile<T> runs[] = {s0, rest...};
    constexpr int n = 1 + int(sizeof...(rest));
    const T *heads[n], *ends[n];
    for (int k = 0; k < n; ++k) {
        heads[k] = runs[k].data;
        ends[k] = runs[k].data + runs[k].vcols / E * E;
    }
    detail::merge_runs(d.data, heads, ends, n, d.vcols / E);
}

}  // namespace pto

#endif /* PTO_SORT_HPP */
