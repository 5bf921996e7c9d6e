/*
 * pl.tile.random: TRANDOM, the counter-based generator of the PTO ISA (included at the end
 * of isa.hpp).
 *
 * A Philox-4x32 block of `Rounds` rounds (7 or 10) maps a 128-bit counter and a 64-bit key
 * to four 32-bit words.  Each pass over 256 columns of a valid row gives lane l (0..63) the
 * counter c + l and writes its four words at columns l, l + 64, l + 128 and l + 192 of the
 * pass; c then steps by row_stride / 4, row_stride being the tile's on-chip row length in
 * elements (pypto.ir.layout), as the instruction steps it.  Only the valid region is
 * written.  torch_runtime.random_words is the same rule in numpy.
 */
#ifndef PTO_RANDOM_HPP
#define PTO_RANDOM_HPP

#include <stdint.h>

namespace pto {

namespace detail {
struct Words4 { uint32_t w[4]; };

inline Words4 counter_plus(Words4 c, uint64_t n) {
    for (int i = 0; i < 4 && n != 0; ++i) {
        n += c.w[i];
        c.w[i] = uint32_t(n);
        n >>= 32;
    }
    return c;
}

template <int Rounds> inline Words4 philox(Words4 c, uint32_t k0, uint32_t k1) {
    for (int i = 0; i < Rounds; ++i) {
        const uint64_t m0 = uint64_t(c.w[0]) * 0xD2511F53u;
        const uint64_t m1 = uint64_t(c.w[2]) * 0xCD9E8D57u;
        c = Words4{{uint32_t(m1 >> 32) ^ c.w[1] ^ k0, uint32_t(m1), uint32_t(m0 >> 32) ^ c.w[3] ^ k1,
                    uint32_t(m0)}};
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}
}  // namespace detail

template <int Rounds, class T>
inline void trandom(Tile<T> dst, int64_t key0, int64_t key1, int64_t c0, int64_t c1, int64_t c2, int64_t c3,
                    int64_t row_stride) {
    static_assert(sizeof(T) == 4, "TRANDOM writes 32-bit words");
    static_assert(Rounds == 7 || Rounds == 10, "TRANDOM runs 7 or 10 rounds");
    constexpr int32_t lanes = 64, repeats = 4, span = lanes * repeats;
    detail::Words4 base = {{uint32_t(c0), uint32_t(c1), uint32_t(c2), uint32_t(c3)}};
    const int32_t passes = (dst.vcols + span - 1) / span;
    for (int32_t r = 0; r < dst.vrows; ++r)
        for (int32_t p = 0; p < passes; ++p) {
            for (int32_t lane = 0; lane < lanes; ++lane) {
                const detail::Words4 out =
                    detail::philox<Rounds>(detail::counter_plus(base, uint64_t(lane)), uint32_t(key0), uint32_t(key1));
                for (int32_t k = 0; k < repeats; ++k) {
                    const int32_t c = p * span + k * lanes + lane;
                    if (c < dst.vcols) detail::ref(dst, r, c) = T(out.w[k]);
                }
            }
            base = detail::counter_plus(base, uint64_t(row_stride / repeats));
        }
}

}  // namespace pto

#endif /* PTO_RANDOM_HPP */
