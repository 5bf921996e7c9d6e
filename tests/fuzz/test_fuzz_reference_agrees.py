"""The fuzzer's reference (`fuzz_reference`, written from docs/numerics.md alone and kept
free of pypto) is checked against the registry's torch semantics
(`pypto.debug.torch_runtime.reference`), op by op: every operator it models is a
registered one of that dtype class, and on the values where implementations part they
compute the same bits (exp and log within the one ulp the reference allows itself)."""

from __future__ import annotations

import fuzz_reference as ref
import pytest
import torch

from pypto.debug.torch_runtime import reference
from pypto.ir.dtypes import DataType
from pypto.ir.ops import all_ops

DTYPES = {"float": ref.FLOATS, "int": ref.INTS}
TABLES = {"float": (ref.FLOAT_BINARY, ref.FLOAT_UNARY), "int": (ref.INT_BINARY, ref.INT_UNARY)}
LOOSE = {"exp", "log"}  # the reference's float64 algorithm may differ by one ulp


def values(dtype: str, seed: int) -> torch.Tensor:
    """[8, 32] values of `dtype`: random ones and, at fixed places, the special ones."""
    g = torch.Generator().manual_seed(seed)
    if dtype in ref.FLOATS:
        x = torch.randn(8, 32, generator=g, dtype=torch.float64) * 8
        finfo = torch.finfo(ref.TORCH[dtype])
        specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), finfo.tiny / 8,
                    -finfo.tiny / 8, finfo.max, -finfo.max, 1.0, -1.0, 2.5, -2.5, 0.1]
    else:
        lo, hi = ref.INT_RANGE[dtype]
        x = torch.randint(lo, hi + 1, (8, 32), generator=g, dtype=torch.int64)
        x.view(-1)[::5] = torch.randint(-3, 40, (len(x.view(-1)[::5]),), generator=g)
        specials = [0, -1, 1, lo, hi, lo + 1, -7, 8]
    x.view(-1)[seed % 16:seed % 16 + len(specials)] = torch.tensor(specials,
                                                                  dtype=x.dtype)
    return x.to(ref.TORCH[dtype])


def cases():
    for kind, (binary, unary) in TABLES.items():
        for table, arity in ((binary, 2), (unary, 1)):
            for op in sorted(table):
                for dtype in DTYPES[kind]:
                    yield pytest.param(op, arity, dtype, id=f"{op}-{dtype}")


def test_every_operator_the_reference_models_is_registered_for_its_dtypes():
    ops = all_ops()
    for kind, tables in TABLES.items():
        for op in (name for table in tables for name in table):
            assert op in ops, op
            assert {DataType[d] for d in DTYPES[kind]} <= ops[op].dtypes, (op, kind)


@pytest.mark.parametrize(("op", "arity", "dtype"), list(cases()))
def test_each_operator_of_the_reference_agrees_with_the_registrys(op, arity, dtype):
    args = [values(dtype, 1), values(dtype, 22)][:arity]
    want = ref.binary(op, *args, dtype) if arity == 2 else ref.unary(op, *args, dtype)
    got = reference(op)(*args)
    assert ref.mismatch(got, want, dtype, tolerance=int(op in LOOSE)) is None


@pytest.mark.parametrize("dtype", ref.FLOATS + ref.INTS)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_the_reductions_of_the_reference_agree_with_the_registrys(kind, dtype):
    x = values(dtype, 3)
    assert ref.mismatch(reference(f"row_{kind}")(x), ref.reduce_rows(x, kind, dtype),
                        dtype) is None
    assert ref.mismatch(reference(f"col_{kind}")(x), ref.reduce_cols(x, kind, dtype),
                        dtype) is None
    if kind == "sum":
        assert ref.mismatch(reference("col_sum")(x, tmp_tile=x),
                            ref.reduce_cols(x, kind, dtype, tree=True), dtype) is None


@pytest.mark.parametrize("src", ref.FLOATS + ref.INTS)
@pytest.mark.parametrize("dst", ref.FLOATS + ref.INTS)
@pytest.mark.parametrize("mode", ["rint", "round", "floor", "ceil", "trunc", "odd", "none"])
def test_the_casts_of_the_reference_agree_with_the_registrys(src, dst, mode):
    x = values(src, 5)
    assert ref.mismatch(reference("cast")(x, dst, mode), ref.cast(x, src, dst, mode),
                        dst) is None
