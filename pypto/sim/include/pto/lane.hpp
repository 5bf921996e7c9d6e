/*
 * The vector lane (sub-block) running the calling thread: 0 or 1 on the two vector lanes
 * of a pl.FunctionType.Group task (pipe.hpp runs each lane on a thread of its own), 0 on
 * every other thread.  pl.tensor.get_subblock_idx() reads it.
 */
#ifndef PTO_LANE_HPP
#define PTO_LANE_HPP

#include <stdint.h>

namespace pto {
inline int32_t &lane_subblock() {
    static thread_local int32_t idx = 0;
    return idx;
}
}  // namespace pto

#endif
