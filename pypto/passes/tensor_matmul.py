"""Tensor-level `pl.matmul` in a kernel, lowered whole-K through the cube's buffers.

`out[...] = pl.matmul(a, b)` becomes, for each [TM, TN] block of the result:

    a_mat = pl.load(a, [m, 0], [TM, K], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, n], [K, TN], target_memory=pl.Mem.Mat)
    c = pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right))   # in Acc
    out = pl.store(c, [m, n], out)

walked with `pl.range` over m and n.  A product of [B, M, K] and [B, K, N] tensors
(upstream's rank > 2 `pl.matmul`) is walked over b as well: batch b is the product of
[M, K] and [K, N] tiles read from batch b of each (from batch 0 of an operand of one
batch, and from a [rows, cols] operand itself, as torch.matmul broadcasts), stored into
batch b of the output.  The whole K dimension is one block, so the
products are accumulated in K order exactly as the tile form does.  TM and TN are the
largest divisors of M and N whose blocks fit Left, Right, Mat and Acc together; when
even one row and one column do not fit, K is too long and the user is told to write a
K loop with `pl.matmul_acc`.  The matmul's result must be written straight to an
output; in a `pl.at` block, a result the vector unit reads goes through a scratch tensor
first (cube_vector.py).
"""

from __future__ import annotations

from ..ir.errors import CapacityError, LoweringError
from ..ir.nodes import Assign, Const, ExprList, For, Var
from ..ir.ops import get_op, make_call
from ..ir.types import INDEX, MemorySpace, TensorType
from .names import NameSupply
from .tensor_views import call_of, index_add, tensor_type_of

_ALIGN = 32


def lower_matmul_run(computed: list[Assign], writes: list[Assign], names: NameSupply,
                     backend) -> list:
    matmuls = {s.targets[0].name: s for s in computed}
    for s in computed:
        if get_op(call_of(s).op).category != "matmul":
            raise LoweringError(
                f"pl.{call_of(s).op} works on the vector unit on a tensor-level pl.matmul result "
                "that has no name in a pl.at block",
                s.span,
                hint="bind the matmul to a name in the pl.at block (`acc = pl.matmul(a, b)`): "
                     "the block then hands it to the vector work through global memory; in an "
                     "@pl.jit.incore kernel, store it to a tensor parameter first",
            )
    out: list = []
    for w in writes:
        src = call_of(w).args[1]
        if not (isinstance(src, Var) and src.name in matmuls):
            raise LoweringError("a tensor-level pl.matmul result must be written directly to an "
                                "output", w.span)
        out.extend(_lower_one(matmuls[src.name], w, names, backend))
    return out


def _blocks(m, n, k, in_size, out_size, backend, span) -> tuple[int, int]:
    cap = backend.capacities

    def fits(tm, tn):
        a, b = _aligned(tm * k * in_size), _aligned(k * tn * in_size)
        return (a <= cap["Left"] and b <= cap["Right"] and a + b <= cap["Mat"]
                and _aligned(tm * tn * out_size) <= cap["Acc"])

    for tm in _divisors(m):
        for tn in _divisors(n):
            if fits(tm, tn):
                return tm, tn
    raise CapacityError(
        f"a whole-K block of this matmul (K = {k}) does not fit the cube buffers of "
        f"{backend.name} (Left {cap['Left']} B, Right {cap['Right']} B)",
        span,
        hint="write tiles: loop over K with pl.matmul for the first block and "
             "pl.matmul_acc for the rest",
    )


def _lower_one(stmt: Assign, write: Assign, names: NameSupply, backend) -> list:
    call = call_of(stmt)
    lhs, rhs = call.args
    a_trans, b_trans = call.attr("a_trans"), call.attr("b_trans")
    for operand in (lhs, rhs):
        if not (isinstance(operand, Var) and isinstance(operand.type, TensorType)):
            raise LoweringError("tensor-level pl.matmul reads tensors passed to the kernel",
                                stmt.span)
    lhs_type, out_type = tensor_type_of(lhs), tensor_type_of(call)
    *batch, m, n = out_type.shape
    k = lhs_type.shape[-2] if a_trans else lhs_type.shape[-1]
    tm, tn = _blocks(m, n, k, lhs_type.dtype.itemsize, out_type.dtype.itemsize, backend,
                     stmt.span)
    span = stmt.span
    # The block's first row and column, where the result is walked in blocks.
    m_var = Var(names.fresh("m"), INDEX) if tm < m else None
    n_var = Var(names.fresh("n"), INDEX) if tn < n else None
    # [B, M, N]: one product per batch, walked with b.
    b_var = Var(names.fresh("b"), INDEX) if batch else None
    zero = Const(0, INDEX)
    mv = m_var if m_var is not None else zero
    nv = n_var if n_var is not None else zero
    # lhs is [M, K] ([K, M] with a_trans); rhs is [K, N] ([N, K] with b_trans).
    a_at, a_shape = ((zero, mv), (k, tm)) if a_trans else ((mv, zero), (tm, k))
    b_at, b_shape = ((nv, zero), (tn, k)) if b_trans else ((zero, nv), (k, tn))
    # A batched operand is read at its batch b (batch 0 when it has one batch, used for
    # every batch); a [rows, cols] tile of it is a window of that batch.
    a_at, b_at = (_at_batch(operand, at, b_var)
                  for operand, at in ((lhs, a_at), (rhs, b_at)))
    body: list = []

    def bind(base: str, value) -> Var:
        var = Var(names.fresh(base), value.type, span)
        body.append(Assign((var,), value, span))
        return var

    a_mat = bind(f"{lhs.name}_mat", make_call("load", lhs, ExprList(a_at), span=span,
                                              shapes=a_shape, target_memory=MemorySpace.Mat))
    b_mat = bind(f"{rhs.name}_mat", make_call("load", rhs, ExprList(b_at), span=span,
                                              shapes=b_shape, target_memory=MemorySpace.Mat))
    a_left = bind(f"{lhs.name}_left", make_call("move", a_mat, span=span,
                                                target_memory=MemorySpace.Left))
    b_right = bind(f"{rhs.name}_right", make_call("move", b_mat, span=span,
                                                  target_memory=MemorySpace.Right))
    product = bind(f"{stmt.targets[0].name}_acc",
                   make_call("matmul", a_left, b_right, span=span, **dict(call.attrs)))
    write_call = call_of(write)
    dst, _, offsets = write_call.args
    *ob, o1, o2 = offsets.items
    window = ExprList((*(index_add(o, b_var) for o in ob), index_add(o1, mv),
                       index_add(o2, nv)))
    store = make_call("store", product, window, dst, span=write.span,
                      atomic=write_call.attr("atomic"))
    body.append(Assign(write.targets, store, write.span))
    loop = tuple(body)
    if n_var is not None:
        loop = (For(n_var, zero, Const(n, INDEX), Const(tn, INDEX), loop),)
    if m_var is not None:
        loop = (For(m_var, zero, Const(m, INDEX), Const(tm, INDEX), loop),)
    if b_var is not None:
        loop = (For(b_var, zero, Const(batch[0], INDEX), Const(1, INDEX), loop),)
    return list(loop)


def _at_batch(operand: Var, at: tuple, b_var: Var | None) -> tuple:
    """The offsets of a [rows, cols] window `at` of `operand`, in batch `b_var` when the
    operand is [B, rows, cols] (batch 0 when B is 1: it stands for every batch)."""
    shape = tensor_type_of(operand).shape
    if len(shape) == 2:
        return at
    return (b_var if shape[0] > 1 and b_var is not None else Const(0, INDEX), *at)


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _divisors(n: int) -> list[int]:
    return sorted((d for d in range(1, n + 1) if n % d == 0), reverse=True)
