// Shared by the test drivers: dispatch from a PtoDType code to its element type.
#ifndef SIM_TYPES_HPP
#define SIM_TYPES_HPP

#include "pto/isa.hpp"

using namespace pto;

// Calls f(T()) with T the element type of dtype code `code`; returns -1 for unknown codes.
template <class F> inline int with_type(int code, F f) {
    switch (code) {
    case PTO_BOOL: f(bool()); return 0;
    case PTO_INT8: f(int8_t()); return 0;
    case PTO_INT16: f(int16_t()); return 0;
    case PTO_INT32: f(int32_t()); return 0;
    case PTO_INT64: f(int64_t()); return 0;
    case PTO_UINT8: f(uint8_t()); return 0;
    case PTO_UINT16: f(uint16_t()); return 0;
    case PTO_UINT32: f(uint32_t()); return 0;
    case PTO_FP16: f(f16()); return 0;
    case PTO_BF16: f(bf16()); return 0;
    case PTO_FP32: f(float()); return 0;
    case PTO_FP8E4M3FN: f(fp8e4m3fn()); return 0;
    case PTO_FP8E5M2: f(fp8e5m2()); return 0;
    case PTO_HF8: f(hf8()); return 0;
    case PTO_FP8E8M0: f(fp8e8m0()); return 0;
    case PTO_UINT64: f(uint64_t()); return 0;
    case PTO_FP4: f(fp4e2m1()); return 0;
    case PTO_HF4: f(hf4()); return 0;
    case PTO_INT4: f(int4()); return 0;
    case PTO_UINT4: f(uint4()); return 0;
    default: return -1;
    }
}

#endif
