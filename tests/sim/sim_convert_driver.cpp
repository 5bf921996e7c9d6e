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

}  // extern "C"
