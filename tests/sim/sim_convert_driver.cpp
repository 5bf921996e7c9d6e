// Test driver: exposes convert<D, S> for every pair of element types so
// tests/sim/test_sim_numerics.py can call it through ctypes.  A translation unit
// of its own because its 169 instantiations dominate the drivers' compile time.
#include "sim_types.hpp"

namespace {

template <class D, class S> void convert_array(const void *in, void *out, int64_t n, RoundMode m) {
    const S *src = static_cast<const S *>(in);
    D *dst = static_cast<D *>(out);
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i], m);
}

}  // namespace

extern "C" {

// out[i] = convert<dst, src>(in[i], mode); returns -1 for an unknown dtype code.
int sim_convert(int dst_code, int src_code, const void *in, void *out, int64_t n, int mode) {
    int rc = 0;
    const int outer = with_type(src_code, [&](auto s) {
        rc = with_type(dst_code, [&](auto d) {
            convert_array<decltype(d), decltype(s)>(in, out, n, RoundMode(mode));
        });
    });
    return outer ? outer : rc;
}

// The inline FP16 path the tile instructions use: widen[i] = f16_widen(halves[i]) and
// rounded[i] = f16_round(floats[i]).
void sim_f16_inline(const uint16_t *halves, float *widen, int64_t n_halves, const float *floats,
                    uint16_t *rounded, int64_t n_floats) {
    for (int64_t i = 0; i < n_halves; ++i) widen[i] = pto::detail::f16_widen(pto::f16{halves[i]});
    for (int64_t i = 0; i < n_floats; ++i) rounded[i] = pto::detail::f16_round(floats[i]).bits;
}

// The fast FP16 (dtype PTO_FP16) or BF16 (PTO_BF16) conversions, scalar and over arrays:
// widen_s[i] / widen_v[i] = halves[i] widened, round_s[i] / round_v[i] = floats[i] rounded.
// f16c = 0 keeps the FP16 arrays on the portable loop where the CPU has F16C.
int sim_fast_narrow(int dtype, int f16c, const uint16_t *halves, float *widen_s, float *widen_v, int64_t n_halves,
                    const float *floats, uint16_t *round_s, uint16_t *round_v, int64_t n_floats) {
    using namespace pto::detail;
    auto run = [&](auto z, auto widen, auto round, auto widen_n, auto round_n) {
        typedef decltype(z) T;
        const T *h = reinterpret_cast<const T *>(halves);
        for (int64_t i = 0; i < n_halves; ++i) widen_s[i] = widen(h[i]);
        widen_n(widen_v, h, n_halves);
        for (int64_t i = 0; i < n_floats; ++i) round_s[i] = round(floats[i]).bits;
        round_n(reinterpret_cast<T *>(round_v), floats, n_floats);
    };
    const bool fast = f16c != 0;
    if (dtype == PTO_FP16)
        run(pto::f16(), f16_widen, f16_round,
            [fast](float *d, const pto::f16 *x, int64_t n) { f16_widen_n(d, x, n, fast); },
            [fast](pto::f16 *d, const float *x, int64_t n) { f16_round_n(d, x, n, fast); });
    else if (dtype == PTO_BF16)
        run(pto::bf16(), bf16_widen, bf16_round, bf16_widen_n, bf16_round_n);
    else
        return -1;
    return 0;
}

}  // extern "C"
