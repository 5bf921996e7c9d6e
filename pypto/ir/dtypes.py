"""Element data types.  The numbering matches `PtoDType` in pypto/sim/include/pto/abi.h."""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True)
class DTypeInfo:
    code: int
    bits: int
    is_float: bool
    is_signed: bool
    mantissa_bits: int  # significand bits incl. the implicit one (floats); value bits (ints)
    exponent_bits: int  # 0 for integers
    torch_name: str | None  # attribute of the torch module, None when torch has none
    cpp_type: str  # element type in the simulator's C++
    torch_storage: str | None = None  # a torch dtype holding its bits, where torch has none
    # A 4-bit type packs two elements into each byte, the even element (of the last axis)
    # in the low nibble: its torch tensors hold bytes, their last dimension halved.


class DataType(enum.Enum):
    """An element type of tensors, tiles and scalars (`pl.FP16`, ...)."""

    BOOL = DTypeInfo(0, 8, False, False, 1, 0, "bool", "bool")
    INT8 = DTypeInfo(1, 8, False, True, 7, 0, "int8", "int8_t")
    INT16 = DTypeInfo(2, 16, False, True, 15, 0, "int16", "int16_t")
    INT32 = DTypeInfo(3, 32, False, True, 31, 0, "int32", "int32_t")
    INT64 = DTypeInfo(4, 64, False, True, 63, 0, "int64", "int64_t")
    UINT8 = DTypeInfo(5, 8, False, False, 8, 0, "uint8", "uint8_t")
    UINT16 = DTypeInfo(6, 16, False, False, 16, 0, "uint16", "uint16_t")
    UINT32 = DTypeInfo(7, 32, False, False, 32, 0, "uint32", "uint32_t")
    FP16 = DTypeInfo(8, 16, True, True, 11, 5, "float16", "pto::f16")
    BF16 = DTypeInfo(9, 16, True, True, 8, 8, "bfloat16", "pto::bf16")
    FP32 = DTypeInfo(10, 32, True, True, 24, 8, "float32", "float")
    FP8E4M3FN = DTypeInfo(11, 8, True, True, 4, 4, "float8_e4m3fn", "pto::fp8e4m3fn")
    FP8E5M2 = DTypeInfo(12, 8, True, True, 3, 5, "float8_e5m2", "pto::fp8e5m2")
    # HiFloat8 (docs/numerics.md): up to 4 significant bits, binades 2^-22 .. 2^15.  torch has
    # no such dtype: its tensors are torch.uint8 holding the codes, as upstream passes them.
    HF8 = DTypeInfo(13, 8, True, True, 4, 5, None, "pto::hf8", "uint8")
    # OCP MX scale 2^(e - 127): one significant bit, no sign (torch.float8_e8m0fnu).
    FP8E8M0 = DTypeInfo(14, 8, True, False, 1, 8, "float8_e8m0fnu", "pto::fp8e8m0")
    UINT64 = DTypeInfo(15, 64, False, False, 64, 0, "uint64", "uint64_t")
    # The 4-bit types (docs/numerics.md), two to a byte.  FP4 is OCP MX's E2M1 (+-0 .. 6, no
    # inf or NaN): torch.float4_e2m1fn_x2 holds two of them per element (torch.uint8 bytes
    # too).  HF4 is HiFloat4's element, S1E1M2 with the values k / 4 (+-0 .. 1.75); INT4 and
    # UINT4 are integers: torch has none of the three, their tensors are torch.uint8 bytes.
    FP4 = DTypeInfo(16, 4, True, True, 2, 2, "float4_e2m1fn_x2", "pto::fp4e2m1", "uint8")
    HF4 = DTypeInfo(17, 4, True, True, 3, 1, None, "pto::hf4", "uint8")
    INT4 = DTypeInfo(18, 4, False, True, 3, 0, None, "pto::int4", "uint8")
    UINT4 = DTypeInfo(19, 4, False, False, 4, 0, None, "pto::uint4", "uint8")

    @property
    def code(self) -> int:
        return self.value.code

    @property
    def bits(self) -> int:
        return self.value.bits

    @property
    def itemsize(self) -> int:
        """Bytes of one element; a 4-bit type has none of its own (`nbytes`, `packed`)."""
        if self.value.bits < 8:
            raise TypeError(f"{self.name} elements are {self.value.bits} bits, two to a byte: "
                            "count bytes with nbytes(numel)")
        return self.value.bits // 8

    @property
    def packed(self) -> bool:
        """Two elements to a byte (the 4-bit types)."""
        return self.value.bits == 4

    def nbytes(self, numel: int) -> int:
        """Bytes of `numel` elements (rounded up to a whole byte for the 4-bit types)."""
        return (numel * self.value.bits + 7) // 8

    def torch_shape(self, shape) -> tuple:
        """The shape of the torch tensor holding a tensor of `shape`: its last dimension
        halved for the 4-bit types (one byte, or one float4_e2m1fn_x2, per two elements)."""
        shape = tuple(shape)
        if self.packed and shape:
            return (*shape[:-1], shape[-1] // 2)
        return shape

    def logical_shape(self, torch_shape) -> tuple:
        """The shape of the elements a torch tensor of `torch_shape` holds (`torch_shape`'s
        inverse)."""
        shape = tuple(torch_shape)
        if self.packed and shape:
            return (*shape[:-1], shape[-1] * 2)
        return shape

    @property
    def is_float(self) -> bool:
        return self.value.is_float

    @property
    def is_int(self) -> bool:
        return not self.value.is_float and self is not DataType.BOOL

    @property
    def is_signed(self) -> bool:
        return self.value.is_signed

    @property
    def cpp_type(self) -> str:
        return self.value.cpp_type

    @property
    def int_range(self) -> tuple[int, int]:
        """The smallest and the largest value of an integer type (BOOL: 0 and 1)."""
        if self.is_float:
            raise TypeError(f"{self.name} is not an integer type")
        if self is DataType.BOOL:
            return 0, 1
        if self.is_signed:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1

    def to_torch(self):
        """The torch dtype of the same name, or the one holding the bits of a dtype torch
        lacks (HF8 and the 4-bit integers and HF4: torch.uint8); FP4: float4_e2m1fn_x2, two
        elements to one of its elements; imports torch lazily."""
        import torch

        name = self.value.torch_name or self.value.torch_storage
        if name is None:
            raise TypeError(f"{self.name} has no torch equivalent")
        return getattr(torch, name)

    def __repr__(self) -> str:
        return f"pl.{self.name}"


_BY_CODE = {dt.code: dt for dt in DataType}
_BY_TORCH_NAME = {dt.value.torch_name: dt for dt in DataType if dt.value.torch_name}


def from_code(code: int) -> DataType:
    return _BY_CODE[code]


def from_name(name: str) -> DataType:
    """`"FP16"` / `"fp16"` → DataType.FP16; raises KeyError on unknown names."""
    return DataType[name.upper()]


def stands_for(found: DataType, declared: DataType) -> bool:
    """Does a tensor whose torch dtype reads as `found` hold `declared`'s elements?  Its
    own dtype, or the torch dtype storing one torch lacks (UINT8 for HF8's codes, and for
    the bytes of each 4-bit type, FP4's included)."""
    storage = declared.value.torch_storage
    return found is declared or (storage is not None and found.value.torch_name == storage)


def from_torch(torch_dtype) -> DataType:
    """torch.float16 → DataType.FP16; raises TypeError for dtypes pypto lacks."""
    name = str(torch_dtype).removeprefix("torch.")
    try:
        return _BY_TORCH_NAME[name]
    except KeyError:
        raise TypeError(f"torch dtype {torch_dtype} has no pypto equivalent") from None


# (lowest payload, width of the dot field, exponent width D, mantissa width), by payload
_HF8_DOT_FIELDS = ((0x60, 2, 4, 1), (0x40, 2, 3, 2), (0x20, 2, 2, 3), (0x10, 3, 1, 3),
                   (0x08, 4, 0, 3))


def hf8_value(code: int) -> float:
    """The value of one HiFloat8 code (NaN for 0x80, +-inf for 0x6F / 0xEF)."""
    sign = -1.0 if code & 0x80 else 1.0
    p = code & 0x7F
    if p < 0x08:
        if p == 0:
            return float("nan") if code & 0x80 else 0.0
        return sign * 2.0 ** (p - 23)
    width, d, mb = next(f for low, *f in _HF8_DOT_FIELDS if p >= low)
    field = p & ((1 << (7 - width)) - 1)
    m, e_bits = field & ((1 << mb) - 1), field >> mb
    e = 0
    if d:
        mag = (1 << (d - 1)) | (e_bits & ((1 << (d - 1)) - 1))
        e = -mag if e_bits >> (d - 1) else mag
    if e == 15 and m == 1:
        return sign * float("inf")
    return sign * 2.0**e * (1 + m / (1 << mb))


def e8m0_value(code: int) -> float:
    """The value of one FP8E8M0 code: 2^(code - 127), NaN for 0xFF."""
    return float("nan") if code == 0xFF else 2.0 ** (code - 127)


def fp4_value(code: int) -> float:
    """The value of one FP4 (OCP MX E2M1) code: sign, 2 exponent bits (bias 1), 1 mantissa
    bit; exponent 0 is subnormal (0 and 0.5).  Every code is finite: +-0, 0.5, 1, 1.5, 2, 3,
    4, 6."""
    sign = -1.0 if code & 0x8 else 1.0
    e, m = (code >> 1) & 0x3, code & 0x1
    return sign * (m * 0.5 if e == 0 else 2.0 ** (e - 1) * (1 + m / 2))


def hf4_value(code: int) -> float:
    """The value of one HF4 code (HiFloat4's element, S1E1M2): sign, 1 exponent bit, 2
    mantissa bits with an implicit 0 when the exponent bit is clear and a 1 when it is set,
    so the magnitudes are k / 4 for the 3 low bits k: +-0 .. 1.75."""
    sign = -1.0 if code & 0x8 else 1.0
    return sign * (code & 0x7) / 4


def int4_value(code: int) -> int:
    """The value of one INT4 code (two's complement: -8 .. 7)."""
    return code - 16 if code & 0x8 else code
