/*
 * Mask instructions (included at the end of isa.hpp): ttri (pl.tile.tri, the PTO
 * instruction TTRI) and tsels (pl.tile.sels, TSELS).
 *
 *  - ttri writes ones and zeros of the element type over dst's valid region only: element
 *    (r, c) is one where c - r <= diagonal (lower) or c - r >= diagonal (Upper), as
 *    pto-isa's CPU model (cpu/TTRI.hpp) fills it.  The comparison is of c - r, which
 *    cannot overflow, so every int64_t diagonal means what it says (the CPU model computes
 *    diagonal + r + 1 in int; device code clamps the diagonal to the tile's extents).
 *  - tsels is tsel with a scalar for the second tile: src where the BOOL mask holds, the
 *    scalar (rounded once to the element type, saturating) elsewhere.
 */
#ifndef PTO_MASK_HPP
#define PTO_MASK_HPP

#include <stdint.h>

namespace pto {

template <bool Upper, class T> inline void ttri(Tile<T> dst, int64_t diagonal) {
    const T one = convert<T>(int32_t(1)), zero = convert<T>(int32_t(0));
    for (int32_t r = 0; r < dst.vrows; ++r)
        for (int32_t c = 0; c < dst.vcols; ++c) {
            const int64_t offset = int64_t(c) - r;
            detail::ref(dst, r, c) = (Upper ? offset >= diagonal : offset <= diagonal) ? one : zero;
        }
}

template <class T, class S> inline void tsels(Tile<T> d, Tile<bool> mask, Tile<T> src, S s) {
    const T st = convert<T>(s, RoundMode::Rint);
    detail::for_each(d, [&](int32_t r, int32_t c) { return detail::at(mask, r, c) ? detail::at(src, r, c) : st; });
}

}  // namespace pto

#endif /* PTO_MASK_HPP */
