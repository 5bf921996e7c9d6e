"""C++ identifiers for the names of a user's program.

Every name a generated C++ source takes from the program (kernels, parameters, tiles,
scalars, loop variables, orchestration locals) is spelled by `ident`, and a kernel's
exported (`extern "C"`) symbol by `symbol`, so that a program whose names are C++
keywords, the generated code's own names or the C library's (`double`, `new`, `main`,
`args`, `pypto_view`, `PtoTensor`, `TADD`, `memcpy`) builds on every platform.  The mapping:
- is the name itself unless it could collide: a suffix only where needed, so ordinary
  names (and the shipped library's sources) read as the program wrote them;
- appends `_` otherwise (`double` -> `double_`): deterministic, readable;
- is one-to-one: whether a name needs the suffix depends only on the name without its
  trailing `_`s, or on a part of it that appending `_` keeps (a prefix, a `__`), so a
  name that needs it still needs it with more `_`s: `int` -> `int_`, a user's own `int_`
  -> `int__`, never the same;
- never yields a reserved name, nor one of the names codegen makes up beside the user's:
  those contain `__` and end in a digit (`x__1`), which no result does (a name holding
  `__` gets the suffix, and a result with the suffix ends in `_`).
"""

from __future__ import annotations

import re

from ..ir.nodes import Function
from ..ir.types import TileType
from ..ir.visitor import defs
from . import c_library

# C++20 keywords and alternative tokens.
_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class co_await co_return co_yield compl concept const const_cast
    consteval constexpr constinit continue decltype default delete do double dynamic_cast
    else enum explicit export extern false float for friend goto if import inline int long
    module mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try
    typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
    xor_eq
    """.split())

# Names the templates give their own things, or use unqualified, in the scopes the user's
# names live in: the ABI's parameters, namespaces and integer types, the device sources'
# helpers and entry point, and the pto-isa names they reach through `using namespace pto`
# (element types the device sources spell: `half`, `bfloat16_t`, ...).
_GENERATED = frozenset("""
    api args core params pto std main NULL
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t
    intptr_t uintptr_t intmax_t uintmax_t
    kernel_entry row_stride col_stride tensor_at scalar_f64 saturate col_sum_tree
    Tile TileType TileConfig GlobalTensor Shape Stride Layout BLayout SLayout PadValue
    RoundMode CmpMode DYNAMIC set_flag wait_flag pipe_barrier get_block_idx get_block_num
    half bfloat16_t float8_e4m3_t float8_e5m2_t hifloat8_t float8_e8m0_t TRandomKey TRandomCounter
    """.split())

# Prefixes of generated names: the templates' helpers and locals (`pypto_`), the ABI's
# types and macros (`Pto`, `PTO`), pto-isa's pipes and events.
_PREFIXES = ("pypto_", "Pto", "PTO", "PIPE_", "EVENT_ID")

# Names of macros and instructions: pto-isa's instructions (`TADD`, `TMATMUL_ACC`) and the
# limit and constant macros of <stdint.h> (`INT64_MAX`, `INT64_C`); and the names C++
# reserves to the implementation (`_Upper...`; a `__` anywhere, tested apart).
_SHAPES = re.compile(r"T[A-Z][A-Z0-9_]*|[A-Z][A-Z0-9_]*_(MAX|MIN|WIDTH|C)|_[A-Z].*")

_LOCAL = _KEYWORDS | _GENERATED
_SIM_SYMBOLS = _LOCAL | c_library.SIM
_DEVICE_SYMBOLS = _LOCAL | c_library.DEVICE


def _reserved(name: str, names: frozenset) -> bool:
    stem = name.rstrip("_")
    return (stem in names or "__" in name or name.startswith(_PREFIXES)
            or _SHAPES.fullmatch(stem) is not None)


def ident(name: str) -> str:
    """The C++ identifier of a user's name: the name, or with `_` appended where the name
    could collide with C++ or with the generated code (see the module's docstring)."""
    return name + "_" if _reserved(name, _LOCAL) else name


def symbol(name: str, device_code: bool = False) -> str:
    """The exported symbol of a kernel named `name`: as `ident`, and also away from the C
    library's functions the kernel's headers declare: the simulators' (`memcpy` ->
    `memcpy_`), or with `device_code` pto-isa's and the C++ library's (`exp` -> `exp_`)."""
    return name + "_" if _reserved(name, _DEVICE_SYMBOLS if device_code else _SIM_SYMBOLS) \
        else name


def value_idents(fn: Function) -> set[str]:
    """The C++ names of a kernel's values other than tiles (parameters, scalars, loop
    variables): the names codegen gives tiles and the views it makes up must avoid them."""
    return {ident(v.name) for v in (*(p.var for p in fn.params), *defs(fn.body).values())
            if not isinstance(v.type, TileType)}
