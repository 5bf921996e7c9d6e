/*
 * Whether the simulator takes its SIMD paths: the vector loops of element-wise
 * instructions, the FP16/BF16 array conversions (portable vectors, F16C) and the
 * register-tiled matmul (portable vectors, AVX2, AVX-512F).  Each computes the same IEEE
 * operations as the scalar definition, so the choice changes no bit; PYPTO_SIM_SIMD=0 in
 * the environment of the process that runs kernels turns them all off (every element
 * through elem<> and convert<>, the matmul one float at a time), which is how
 * tests/kernels shows it on the whole library.  Read once per kernel binary.
 */
#ifndef PTO_SIMD_HPP
#define PTO_SIMD_HPP

// <stdlib.h>'s, declared alone: kernels' compile time stays down.
extern "C" char *getenv(const char *) noexcept;

namespace pto {
namespace detail {

inline bool simd_enabled() {
    static const bool enabled = [] {
        const char *v = getenv("PYPTO_SIM_SIMD");
        return !(v != nullptr && v[0] == '0' && v[1] == '\0');
    }();
    return enabled;
}

}  // namespace detail
}  // namespace pto

#endif /* PTO_SIMD_HPP */
