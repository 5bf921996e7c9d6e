"""Every analysis of the IR sees a statement however deep it is nested.

OutlineIncoreScopes once walked a block's statements by hand, at its top level and one
loop down, and so missed a `pl.store` two loops deep.  The analyses now traverse the IR
through `pypto.ir.visitor`; here each of them is given one probe statement at the top
level and inside every nesting of loops, branches and `pl.at` blocks up to three deep,
and must see it at every depth.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from pypto.codegen.cpp import _dump_tagged, _partially_valid, accumulated_params
from pypto.ir import VerificationError
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import (
    Assign,
    AtScope,
    Const,
    ExprList,
    ExprStmt,
    For,
    Function,
    If,
    Param,
    Program,
    Return,
    Var,
)
from pypto.ir.ops import make_call
from pypto.ir.types import (
    INDEX,
    AtomicType,
    Direction,
    FunctionType,
    Level,
    ScalarType,
    TensorType,
    TileType,
)
from pypto.ir.visitor import statements
from pypto.passes.diagnostics import out_param_write_dropped, unused_variable
from pypto.passes.outline_incore import OutlineIncoreScopes, written_tensors
from pypto.passes.properties import IRProperty
from pypto.passes.verifier import check_types, verify

X = Var("x", TensorType((16, 64), DataType.FP32))
OUT = Var("out", TensorType((16, 64), DataType.FP32))
TILE = Var("t", TileType((16, 64), DataType.FP32))
ZERO = Const(0, INDEX)
ORIGIN = ExprList((ZERO, ZERO))


def _loop(name: str, body: tuple) -> For:
    return For(Var(name, INDEX), ZERO, Const(2, INDEX), Const(1, INDEX), body)


WRAPPERS = {
    "for": lambda body, depth: (_loop(f"i{depth}", body),),
    "if": lambda body, depth: (If(Const(True, ScalarType(DataType.BOOL)), body, ()),),
    "else": lambda body, depth: (If(Const(True, ScalarType(DataType.BOOL)), (), body),),
    "at": lambda body, depth: (AtScope(Level.CORE_GROUP, body),),
}
NESTINGS = [()] + [n for depth in (1, 2, 3) for n in itertools.product(
    ("for", "if", "else", "at"), repeat=depth) if depth < 3 or n[0] == "for"]


def nest(nesting: tuple, probe: tuple) -> tuple:
    """`probe` wrapped in `nesting`, outermost first: ("for", "for") is two loops deep."""
    body = probe
    for depth, kind in reversed(list(enumerate(nesting))):
        body = WRAPPERS[kind](body, depth)
    return body


def kernel_nest(nesting: tuple) -> tuple:
    """Kernels have no `pl.at` blocks: the same nesting without them."""
    return tuple(k for k in nesting if k != "at")


PARAMS = (Param(X), Param(OUT, Direction.Out))


def program(body: tuple, params=PARAMS, func_type=FunctionType.Orchestration) -> Program:
    fn = Function("f", params, (), body + (Return(()),), func_type)
    return Program("p", (fn,), "f")


def _store(into: Var = OUT) -> Assign:
    return Assign((into,), make_call("store", TILE, ORIGIN, into))


def ids(nesting) -> str:
    return "/".join(nesting) or "top"


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_statements_reach_every_depth(nesting):
    probe = Assign((TILE,), make_call("load", X, ORIGIN, shapes=(16, 64)))
    assert probe in statements(nest(nesting, (probe,)))


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_a_write_through_a_tensor_is_found_at_every_depth(nesting):
    # The regression: OutlineIncoreScopes missed `out = pl.store(t, ..., out)` two loops
    # down and refused the block ("`out` is both read and replaced").
    assert written_tensors(nest(nesting, (_store(),))) == {"out"}


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_an_unused_value_is_reported_at_every_depth(nesting):
    dead = Assign((Var("dead", X.type),), make_call("add", X, X))
    found = unused_variable(program(nest(nesting, (dead,))), None)
    assert [d.message.split("`")[1] for d in found] == ["dead"]


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_a_rebound_output_parameter_is_reported_at_every_depth(nesting):
    rebind = Assign((OUT,), make_call("add", X, X))
    assert len(out_param_write_dropped(program(nest(nesting, (rebind,))), None)) == 1


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_a_read_before_binding_is_refused_at_every_depth(nesting):
    ghost = Var("ghost", X.type)
    read = Assign((Var("y", X.type),), make_call("add", ghost, X))
    bad = program(nest(nesting, (read,)))
    with pytest.raises(VerificationError, match="`ghost` is read before it is bound"):
        verify(bad, [IRProperty.DefBeforeUse], None, "probe")


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_a_mistyped_value_is_refused_at_every_depth(nesting):
    value = make_call("add", X, X)
    wrong = Assign((Var("y", X.type),), replace(value, type=TensorType((16, 64),
                                                                       DataType.FP16)))
    bad = program(nest(nesting, (wrong,)))
    with pytest.raises(VerificationError, match="pl.add records type"):
        verify(bad, [IRProperty.TypesConsistent], None, "probe")
    check_types(program(nest(nesting, (Assign((Var("y", X.type),), value),))), None)


@pytest.mark.parametrize("nesting", NESTINGS, ids=ids)
def test_a_dump_tag_is_seen_at_every_depth(nesting):
    tag = ExprStmt(make_call("dump_tag", X))
    assert _dump_tagged(nest(nesting, (tag,))) == ["x"]


@pytest.mark.parametrize("nesting", sorted({kernel_nest(n) for n in NESTINGS}), ids=ids)
def test_a_partially_valid_tile_is_seen_at_every_depth(nesting):
    partial = Var("p", TileType((16, 64), DataType.FP32, valid_shape=(16, 60)))
    load = Assign((partial,), make_call("load", X, ORIGIN, shapes=(16, 64),
                                        valid_shape=(16, 60)))
    fn = program(nest(nesting, (load,)), func_type=FunctionType.InCore).functions[0]
    assert [key[0] for key in _partially_valid(fn)] == ["p"]


@pytest.mark.parametrize("nesting", sorted({kernel_nest(n) for n in NESTINGS}), ids=ids)
def test_a_plain_write_after_atomic_adds_is_seen_at_every_depth(nesting):
    atomic = Assign((OUT,), make_call("store", TILE, ORIGIN, OUT, atomic=AtomicType.Add))
    fn = program((atomic,), func_type=FunctionType.InCore).functions[0]
    assert accumulated_params(fn) == {"out"}
    fn = program((atomic,) + nest(nesting, (_store(),)), func_type=FunctionType.InCore)
    assert accumulated_params(fn.functions[0]) == set()


@pytest.mark.parametrize("nesting", [n for n in NESTINGS if "at" not in n], ids=ids)
def test_a_block_writing_its_output_at_any_depth_outlines_to_a_kernel_writing_it(nesting):
    # Before the visitor, two loops down: LoweringError "`out` is both read and replaced
    # by a new tensor in this pl.at block".
    load = Assign((TILE,), make_call("load", X, ORIGIN, shapes=(16, 64)))
    block = AtScope(Level.CORE_GROUP, nest(nesting, (load, _store())))
    fn = Function("f", (Param(X), Param(OUT, Direction.Out)), (OUT.type,),
                  (block, Return((OUT,))), FunctionType.Orchestration)
    outlined = OutlineIncoreScopes().run(Program("p", (fn,), "f"), None)
    (kernel,) = [f for f in outlined.functions if f.func_type is FunctionType.InCore]
    assert [p.var.name for p in kernel.params] == ["x", "out"]
    assert [v.name for v in kernel.body[-1].values] == ["out"]
