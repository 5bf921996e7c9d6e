"""Random control-flow programs as DSL source text, with their reference semantics.

A *case* is one generated program over tensors of its own: a loop nest over tiles, a
loop-carried accumulation, a chain of tile views, or a task graph.  A `Program` packs
several cases into one module so that one build checks many of them (each build costs
seconds of g++, each case milliseconds to run):

- the tile-level cases are sections of one `@pl.jit.incore` kernel, `fuzz_tiles`;
- the task-level cases are statements of the `@pl.jit` entry `fuzz_kernel` (which also
  calls `fuzz_tiles` once), with `@pl.jit.incore` kernels of their own.

Tile families (`FAMILIES`): "tiles" walks a grid of tiles with nested, stepped, unrolled
or flattened loops, edge tiles with valid shapes, pads and `pl.fillpad`, transposed
stores and row/column reductions; "carry" accumulates tiles across one or two loops
(also an inner accumulator reset per outer iteration, ops chosen per unrolled
iteration); "window" chains tensor views, tile slices, transposes, reshapes, concats
and `pl.set_validshape`.  Task families: "chain" hands created tensors through kernels
and `pl.at` blocks, tensor slices passed straight to kernels; "grid" runs `pl.parallel`
grids of window tasks and a reader of everything they wrote; "update" folds into a
`pl.InOut` tensor task after task; "deps" overwrites a tensor after its reader, ordered
by an explicit `deps=`; "splitk" accumulates atomically from `pl.parallel` or SPMD tasks,
vector or matmul.  Casts in every mode come with the expressions (`fuzz_programs`).

The module protocol is the one of `fuzz_programs`: `programs(...)` (a hypothesis
strategy), `render`, `parameters`, `make_inputs`, `evaluate`, `tolerances`; the program
carries its run's `workers`, `schedule_seed` and `detect_races`.  The references use
`fuzz_reference` (plain torch, no pypto).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import fuzz_programs as fp
import fuzz_reference as ref
import torch
from fuzz_programs import Expr
from hypothesis import assume
from hypothesis import strategies as st

DTYPES = fp.DTYPES
TILE_SHAPES = ((8, 16), (8, 32), (16, 16), (16, 32), (4, 64))
PADS = ("zero", "max", "min")


@dataclass(frozen=True)
class Tensor:
    """A tensor parameter of a case: `role` "in", "out" or "inout"; `values` "mixed"
    (fuzz_programs.random_values), "small" (integers in [-8, 8]: exact in any order) or
    "const:<k>" (every element k: a loop bound read at run time)."""

    name: str
    shape: tuple[int, int]
    dtype: str
    role: str = "in"
    values: str = "mixed"


@dataclass
class Case:
    """One generated program: its tensors, its source lines and its reference."""

    family: str
    name: str
    tensors: list[Tensor]
    reference: Callable[[dict], dict] = field(repr=False)
    kernel: list[str] = field(default_factory=list)  # a section of fuzz_tiles
    orchestration: list[str] = field(default_factory=list)  # statements of fuzz_kernel
    functions: list[str] = field(default_factory=list)  # kernels of its own
    tolerance: dict[str, int] = field(default_factory=dict)  # output -> ulps / units


@dataclass
class Program:
    """A batch of cases, built and run as one module."""

    cases: list[Case]
    seed: int
    workers: int | None = None
    schedule_seed: int | None = None
    detect_races: bool = False
    tiles_in: str = "kernel"  # the tile cases' section: "kernel" (fuzz_tiles) or "block" (pl.at)
    kind: str = "control"


# ----------------------------------------------------------------------------- loops


@dataclass(frozen=True)
class Loop:
    """`for v in pl.<kind>(...)` over blocks start, start + step, ... < stop; with `scale`
    the variable counts elements (blocks times the block size) instead of blocks."""

    kind: str
    start: int
    stop: int
    step: int = 1
    scale: int = 1

    def header(self, var: str) -> str:
        a, b, s = self.start * self.scale, self.stop * self.scale, self.step * self.scale
        args = (b,) if a == 0 and s == 1 else (a, b) if s == 1 else (a, b, s)
        return f"for {var} in pl.{self.kind}({', '.join(map(str, args))}):"

    def blocks(self) -> list[int]:
        return list(range(self.start, self.stop, self.step))

    def offset(self, var: str, size: int) -> str:
        """The element offset of block `var` for blocks of `size`."""
        return var if self.scale == size else f"{var} * {size}"

    def block(self, var: str) -> str:
        """The block index, as an expression of the variable."""
        return var if self.scale == 1 else f"{var} // {self.scale}"


@st.composite
def loops(draw, n: int, size: int, kinds=("range", "unroll"), partial: bool = True) -> Loop:
    """A loop over (some of) n blocks of `size` elements."""
    kind = draw(st.sampled_from(kinds))
    start, step = 0, 1
    if partial and draw(st.integers(0, 3)) == 0:
        start = draw(st.integers(0, n))  # n: a loop that never runs
        step = draw(st.integers(1, 2))
    scale = size if draw(st.booleans()) else 1
    return Loop(kind, start, n, step, scale)


# ----------------------------------------------------------------------------- helpers


def padded_tile(x: torch.Tensor, r: int, c: int, shape, pad: str, fill: str | None,
                dtype: str) -> torch.Tensor:
    """The tile a load of `shape` at (r, c) gives: x where it exists, the pad value
    elsewhere; `fill` (pl.fillpad) then replaces everything outside the valid region."""
    rows, cols = shape
    vr, vc = min(rows, x.shape[0] - r), min(cols, x.shape[1] - c)
    t = torch.full((rows, cols), fp.pad_value(pad, dtype), dtype=x.dtype)
    t[:vr, :vc] = x[r:r + vr, c:c + vc]
    if fill is not None:
        mask = torch.ones_like(t, dtype=torch.bool)
        mask[:vr, :vc] = False
        t[mask] = torch.tensor(fp.pad_value(fill, dtype), dtype=t.dtype)
    return t


def _leaves(expr: Expr) -> list[str]:
    return sorted(expr.inputs())


def _emit(expr: Expr, leaf, indent: str, prefix: str) -> tuple[list[str], str]:
    em = fp.Emitter(leaf, indent, prefix)
    value = em.emit(expr)
    return em.lines, value


def _annotation(t: Tensor) -> str:
    ty = f"pl.Tensor[[{t.shape[0]}, {t.shape[1]}], pl.{t.dtype}]"
    return {"in": ty, "out": f"pl.Out[{ty}]", "inout": f"pl.InOut[{ty}]"}[t.role]


def _start(t: Tensor, inputs: dict) -> torch.Tensor:
    """An output's contents before the program: the given values of an InOut tensor; an
    Out tensor is written everywhere, so its start does not matter."""
    if t.role == "inout":
        return inputs[t.name].clone()
    return torch.zeros(t.shape, dtype=ref.TORCH[t.dtype])


def _mode(draw, src: str, dst: str) -> str:
    """Any mode; one that composes for a cast some backend runs as a double rounding."""
    mode = draw(st.sampled_from(fp.MODES))
    if (src, dst) in fp.DOUBLE_ROUNDING and mode not in fp.COMPOSING_MODES:
        mode = draw(st.sampled_from(fp.COMPOSING_MODES))
    return mode


def cast_to(draw, e: Expr, dst: str) -> Expr:
    """`e` converted to `dst`: directly, or through FP32 (FP16 from INT8) where the fuzzer
    has no direct cast; every cast its own rounding, as the reference computes it."""
    if e.dtype == dst:
        return e
    if dst not in fp.CASTS[e.dtype]:
        mid = "FP16" if e.dtype == "INT8" else "FP32"
        e = Expr("cast", mid, "cast", (e,), mode=_mode(draw, e.dtype, mid))
        if mid == dst:
            return e
    return Expr("cast", dst, "cast", (e,), mode=_mode(draw, e.dtype, dst))


@st.composite
def path_exprs(draw, src: str, steps: int, dst: str | None = None) -> Expr:
    """An exact expression of the one input `x_<src>_0` through `steps` operators, casts
    in any mode among them; with `dst` it ends in that dtype."""
    e = Expr("input", src, value=f"x_{src}_0")
    for _ in range(steps):
        d = e.dtype
        kind = draw(st.sampled_from(("unary", "scalar", "binary", "cast")))
        if kind == "cast":
            e = cast_to(draw, e, draw(st.sampled_from(fp.CASTS[d])))
        elif kind == "unary":
            ops = fp.FLOAT_UNARY if d in fp.FLOATS else fp.INT_UNARY
            e = Expr("unary", d, draw(st.sampled_from(ops)), (e,))
        elif kind == "binary":
            ops = fp.FLOAT_BINARY if d in fp.FLOATS else fp.INT_BINARY
            e = Expr("binary", d, draw(st.sampled_from(ops)), (e, e))
        else:
            ops = fp.FLOAT_BINARY if d in fp.FLOATS else fp.INT_BINARY
            op = draw(st.sampled_from(ops))
            consts = fp.FLOAT_CONSTANTS if d in fp.FLOATS else (
                fp.SHIFT_COUNTS if op in ("shl", "shr") else fp.INT_CONSTANTS)
            rev = draw(st.booleans()) and (d in fp.FLOATS or op in fp.RSCALAR_INT)
            e = Expr("scalar", d, op, (e,), value=draw(st.sampled_from(consts)), reversed=rev)
    return cast_to(draw, e, dst) if dst is not None else e


# ----------------------------------------------------------------------------- tile cases

ROW_REDUCTIONS = ("row_sum", "row_max", "row_min")
COL_REDUCTIONS = ("col_sum", "col_max", "col_min")


@st.composite
def tiles_case(draw, name: str) -> Case:
    """A grid of [R, C] tiles over [M, N] inputs walked by nested loops (or one flattened
    loop), each tile computed and stored; edge tiles where a dimension's loop unrolls."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    nr, nc = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    expr, tolerance = draw(fp.lane_exprs(draw(st.integers(1, 3))))
    dtype = expr.dtype
    flat = draw(st.integers(0, 4)) == 0
    if flat:
        loop = draw(loops(nr * nc, 1))
        visited = [(b // nc, b % nc) for b in loop.blocks()]
        row_off, col_off = f"{name}_b // {nc} * {R}", f"{name}_b % {nc} * {C}"
        col_block = f"{name}_b % {nc}"
        row_block = f"{name}_b // {nc}"
        static_rows = static_cols = loop.kind == "unroll"
        headers = [loop.header(f"{name}_b")]
    else:
        rows, cols = draw(loops(nr, R)), draw(loops(nc, C))
        rows_outer = draw(st.booleans())
        row_off, col_off = rows.offset(f"{name}_i", R), cols.offset(f"{name}_j", C)
        row_block, col_block = rows.block(f"{name}_i"), cols.block(f"{name}_j")
        static_rows, static_cols = rows.kind == "unroll", cols.kind == "unroll"
        order = [(rows, f"{name}_i"), (cols, f"{name}_j")]
        if not rows_outer:
            order.reverse()
        headers = [loop_.header(var) for loop_, var in order]
        pairs = [(a, b) for a in order[0][0].blocks() for b in order[1][0].blocks()]
        visited = pairs if rows_outer else [(b, a) for a, b in pairs]
    er = draw(st.integers(0, R - 1)) if static_rows else 0
    ec = draw(st.integers(0, C - 1)) if static_cols else 0
    M, N = nr * R - er, nc * C - ec
    edge = bool(er or ec)
    leaves = _leaves(expr)
    pads = {leaf: draw(st.sampled_from(PADS)) for leaf in leaves}
    fills = {leaf: draw(st.sampled_from(PADS)) for leaf in leaves
             if edge and draw(st.integers(0, 2)) == 0}
    transposed = draw(st.integers(0, 4)) == 0
    reduce = draw(st.sampled_from(("",) * 4 + ROW_REDUCTIONS + COL_REDUCTIONS)) \
        if tolerance == 0 else ""
    complete = len(set(visited)) == nr * nc
    out_role = "out" if complete else "inout"
    tensors = [Tensor(f"{name}_{leaf}", (M, N), fp.input_dtype(leaf)) for leaf in leaves]
    out = Tensor(f"{name}_o", (N, M) if transposed else (M, N), dtype, out_role)
    tensors.append(out)
    red = None
    if reduce:
        red_shape = (M, nc) if reduce.startswith("row") else (nr, N)
        red = Tensor(f"{name}_red", red_shape, dtype, out_role)
        tensors.append(red)

    ind = "    " * len(headers)
    lines = [("    " * k) + h for k, h in enumerate(headers)]
    vr = f"min({R}, {M} - ({row_off}))" if er else str(R)
    vc = f"min({C}, {N} - ({col_off}))" if ec else str(C)
    for leaf in leaves:
        tile = f"{name}_t_{leaf}"
        valid = f", valid_shape=[{vr}, {vc}], pad_value=pl.PadValue.{pads[leaf]}" \
            if edge or draw(st.integers(0, 5)) == 0 else ""
        lines.append(f"{ind}{tile} = pl.load({name}_{leaf}, [{row_off}, {col_off}], "
                     f"[{R}, {C}]{valid})")
        if leaf in fills:
            lines.append(f"{ind}{tile} = pl.fillpad({tile}, pl.PadValue.{fills[leaf]})")
    body, value = _emit(expr, lambda n: f"{name}_t_{n}", ind, f"{name}_")
    lines += body
    # An element of a tile (padding included) as the scalar operand of a scalar form.
    same = [leaf for leaf in leaves if fp.input_dtype(leaf) == dtype]
    elem = None
    if same and tolerance == 0 and draw(st.integers(0, 3)) == 0:
        ops = fp.FLOAT_BINARY if dtype in fp.FLOATS else fp.RSCALAR_INT
        elem = (draw(st.sampled_from(same)), draw(st.integers(0, R - 1)),
                draw(st.integers(0, C - 1)), draw(st.sampled_from(ops)), draw(st.booleans()))
        leaf, ei, ej, op, rev = elem
        pair = (f"{name}_t_{leaf}[{ei}, {ej}]", value)
        pair = pair if rev else pair[::-1]
        lines.append(f"{ind}{name}_e = pl.{op}({pair[0]}, {pair[1]})")
        value = f"{name}_e"
    if transposed:
        lines.append(f"{ind}{out.name} = pl.store(pl.transpose({value}), [{col_off}, {row_off}], "
                     f"{out.name})")
    else:
        lines.append(f"{ind}{out.name} = pl.store({value}, [{row_off}, {col_off}], {out.name})")
    if reduce:
        if reduce.startswith("row"):
            call = f"pl.{reduce}({value}, pl.create_tile([{R}, {C}], pl.{dtype}))"
            at = f"[{row_off}, {col_block}]"
        else:
            call = f"pl.{reduce}({value})"
            at = f"[{row_block}, {col_off}]"
        lines.append(f"{ind}{red.name} = pl.store({call}, {at}, {red.name})")

    def reference(inputs: dict) -> dict:
        o = _start(out, inputs)
        rd = _start(red, inputs) if red else None
        for bi, bj in visited:
            r, c = bi * R, bj * C
            vrows, vcols = min(R, M - r), min(C, N - c)
            env = {leaf: padded_tile(inputs[f"{name}_{leaf}"], r, c, (R, C), pads[leaf],
                                     fills.get(leaf), fp.input_dtype(leaf)) for leaf in leaves}
            v = fp.eval_expr(expr, env)
            if elem is not None:
                leaf, ei, ej, op, rev = elem
                e = env[leaf][ei, ej].expand_as(v)
                v = ref.binary(op, e, v, dtype) if rev else ref.binary(op, v, e, dtype)
            if transposed:
                o[c:c + vcols, r:r + vrows] = v.T[:vcols, :vrows]
            else:
                o[r:r + vrows, c:c + vcols] = v[:vrows, :vcols]
            if reduce.startswith("row"):
                rd[r:r + vrows, bj] = ref.reduce_rows(v, reduce[4:], dtype)[:vrows, 0]
            elif reduce:
                rd[bi, c:c + vcols] = ref.reduce_cols(v, reduce[4:], dtype)[0, :vcols]
        result = {out.name: o}
        if red:
            result[red.name] = rd
        return result

    tol = {out.name: tolerance}
    if red:
        tol[red.name] = 0
    return Case("tiles", name, tensors, reference, kernel=lines, tolerance=tol)


FOLD_FLOAT = ("add", "sub", "maximum", "minimum", "mul")
FOLD_INT = FOLD_FLOAT + ("xor", "or_", "and_")
INIT_CONSTANTS = {"float": (0.0, 1.0, -2.5, 0.5), "int": (0, 1, -3, 100)}


@st.composite
def carry_case(draw, name: str) -> Case:
    """Tiles folded into a carried accumulator across one or two loops; optionally an
    inner accumulator reset per outer iteration and folded into the outer one, the op
    chosen per unrolled iteration, and every block's value stored as well."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    shape = draw(st.sampled_from(("one", "nested", "inner")))
    n1, n2 = draw(st.integers(1, 3)), draw(st.integers(1, 3)) if shape != "one" else 1
    expr, _ = draw(fp.lane_exprs(draw(st.integers(1, 3)), exact_only=True))
    dtype = expr.dtype
    folds = FOLD_FLOAT if dtype in fp.FLOATS else FOLD_INT
    outer = draw(loops(n1, R))
    inner = draw(loops(n2, C)) if shape != "one" else Loop("range", 0, 1)
    # A pl.range bound read at run time from an INT32 element: maybe no iteration at all.
    trips = draw(st.integers(0, n1)) if outer.kind == "range" and outer.scale == 1 and \
        outer.start == 0 and outer.step == 1 and draw(st.integers(0, 2)) == 0 else None
    if trips is not None:
        outer = Loop("range", 0, trips)
    op = draw(st.sampled_from(folds))
    # In an unrolled inner loop the fold may alternate by iteration (a folded `if`).
    alt = draw(st.sampled_from(folds)) if inner.kind == "unroll" and shape != "one" and \
        inner.scale == 1 and draw(st.booleans()) else None
    op_outer = draw(st.sampled_from(folds))
    store_each = draw(st.booleans())
    init_from = draw(st.sampled_from(("full", "load")))
    const = draw(st.sampled_from(INIT_CONSTANTS["float" if dtype in fp.FLOATS else "int"]))
    leaves = _leaves(expr)
    tensors = [Tensor(f"{name}_{leaf}", (n1 * R, n2 * C), fp.input_dtype(leaf))
               for leaf in leaves]
    if init_from == "load":
        tensors.append(Tensor(f"{name}_init", (R, C), dtype))
    acc_out = Tensor(f"{name}_acc", (R, C), dtype, "out")
    tensors.append(acc_out)
    pairs = [(i, j) for i in outer.blocks() for j in inner.blocks()]
    each = None
    if store_each:
        role = "out" if len(set(pairs)) == n1 * n2 else "inout"
        each = Tensor(f"{name}_each", (n1 * R, n2 * C), dtype, role)
        tensors.append(each)
    rows_out = None
    if shape == "inner":
        role = "out" if len(outer.blocks()) == n1 else "inout"
        rows_out = Tensor(f"{name}_rows", (n1 * R, C), dtype, role)
        tensors.append(rows_out)

    acc, part = f"{name}_a", f"{name}_p"
    init = f"pl.full([{R}, {C}], pl.{dtype}, {const!r})"
    lines = [f"{acc} = " + (init if init_from == "full" else
                            f"pl.load({name}_init, [0, 0], [{R}, {C}])")]
    i, j = f"{name}_i", f"{name}_j"
    if trips is None:
        lines.append(outer.header(i))
    else:
        tensors.insert(0, Tensor(f"{name}_n", (1, 8), "INT32", values=f"const:{trips}"))
        lines.append(f"{name}_nt = pl.load({name}_n, [0, 0], [1, 8])")
        lines.append(f"for {i} in pl.range({name}_nt[0, 0]):")
    ind = "    "
    target = acc
    if shape == "inner":
        lines.append(f"{ind}{part} = {init}")
        target = part
    if shape != "one":
        lines.append(ind + inner.header(j))
        ind += "    "
    row_off = outer.offset(i, R)
    col_off = inner.offset(j, C) if shape != "one" else "0"
    for leaf in leaves:
        lines.append(f"{ind}{name}_t_{leaf} = pl.load({name}_{leaf}, [{row_off}, {col_off}], "
                     f"[{R}, {C}])")
    body, value = _emit(expr, lambda n: f"{name}_t_{n}", ind, f"{name}_")
    lines += body
    if alt is not None:
        lines.append(f"{ind}if {j} % 2 == 0:")
        lines.append(f"{ind}    {target} = pl.{op}({target}, {value})")
        lines.append(f"{ind}else:")
        lines.append(f"{ind}    {target} = pl.{alt}({target}, {value})")
    else:
        lines.append(f"{ind}{target} = pl.{op}({target}, {value})")
    if each:
        lines.append(f"{ind}{each.name} = pl.store({value}, [{row_off}, {col_off}], {each.name})")
    if shape == "inner":
        lines.append(f"    {acc} = pl.{op_outer}({acc}, {part})")
        lines.append(f"    {rows_out.name} = pl.store({part}, [{row_off}, 0], {rows_out.name})")
    lines.append(f"{acc_out.name} = pl.store({acc}, [0, 0], {acc_out.name})")

    def reference(inputs: dict) -> dict:
        full = ref.scalar_as(const, dtype).expand(R, C).clone()
        a = full if init_from == "full" else inputs[f"{name}_init"].clone()
        result = {}
        e_out = _start(each, inputs) if each else None
        r_out = _start(rows_out, inputs) if rows_out else None
        for bi in outer.blocks():
            p = full if shape == "inner" else None
            for bj in inner.blocks():
                r, c = bi * R, bj * C
                env = {leaf: inputs[f"{name}_{leaf}"][r:r + R, c:c + C] for leaf in leaves}
                v = fp.eval_expr(expr, env)
                fold = alt if alt is not None and bj % 2 else op
                if shape == "inner":
                    p = ref.binary(fold, p, v, dtype)
                else:
                    a = ref.binary(fold, a, v, dtype)
                if each:
                    e_out[r:r + R, c:c + C] = v
            if shape == "inner":
                a = ref.binary(op_outer, a, p, dtype)
                r_out[bi * R:bi * R + R, :] = p
        result[acc_out.name] = a
        if each:
            result[each.name] = e_out
        if rows_out:
            result[rows_out.name] = r_out
        return result

    return Case("carry", name, tensors, reference, kernel=lines,
                tolerance={t.name: 0 for t in tensors if t.role != "in"})



WIDTHS = (4, 8, 16, 32, 64, 128)


@st.composite
def window_case(draw, name: str) -> Case:
    """A window of x (a load at an offset, or a load of a tensor view), optionally with a
    valid shape, through 1-3 tile views: slices, transposes, reshapes, concats with a
    second input, fillpad + set_validshape and scalar ops; stored per loop iteration."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 2))
    loop = draw(loops(n, R))
    da, db = draw(st.integers(0, R)), draw(st.integers(0, C))
    view = draw(st.booleans())
    load_valid = (draw(st.integers(1, R)), draw(st.integers(1, C))) \
        if draw(st.integers(0, 2)) == 0 else None
    pad = draw(st.sampled_from(PADS))
    h, w = R, C
    vr, vc = load_valid or (R, C)
    ops = []
    others: list[Tensor] = []
    for _ in range(draw(st.integers(1, 3))):
        choices = ["slice", "transpose", "scalar"]
        choices.append("reshape" if (vr, vc) == (h, w) else "fill")
        if vc == w:
            choices.append("concat")
        op = draw(st.sampled_from(choices))
        if op == "slice":
            o1, o2 = draw(st.integers(0, vr - 1)), draw(st.integers(0, vc - 1))
            h2, w2 = draw(st.integers(1, h - o1)), draw(st.integers(1, w - o2))
            ops.append(("slice", h2, w2, o1, o2))
            h, w, vr, vc = h2, w2, min(h2, vr - o1), min(w2, vc - o2)
        elif op == "transpose":
            ops.append(("transpose",))
            h, w, vr, vc = w, h, vc, vr
        elif op == "reshape":
            widths = [x for x in WIDTHS if (h * w) % x == 0 and x != w]
            if widths:
                w2 = draw(st.sampled_from(widths))
                ops.append(("reshape", h * w // w2, w2))
                h, w = h * w // w2, w2
                vr, vc = h, w
        elif op == "fill":
            ops.append(("fill", draw(st.sampled_from(PADS))))
            vr, vc = h, w
        elif op == "concat":
            w2 = draw(st.sampled_from((8, 16, 32)))
            other = Tensor(f"{name}_y{len(others)}", (n * h, w2), dtype)
            others.append(other)
            ops.append(("concat", other, w2))
            w += w2
            vc = w
        else:
            if dtype in fp.FLOATS:
                sop, value = draw(st.sampled_from((("mul", 2.0), ("add", 1.5), ("sub", 0.25))))
            else:
                sop, value = draw(st.sampled_from((("mul", 3), ("add", 1), ("xor", 5))))
            ops.append(("scalar", sop, value))
    x = Tensor(f"{name}_x", (n * R + R, 2 * C), dtype)
    blocks = loop.blocks()
    complete = (vr, vc) == (h, w) and len(blocks) == n
    out = Tensor(f"{name}_o", (n * h, w), dtype, "out" if complete else "inout")
    final = (h, w, vr, vc)

    k = f"{name}_k"
    ind = "    "
    lines = [loop.header(k)]
    row = f"{loop.offset(k, R)} + {da}" if da else loop.offset(k, R)
    kb = loop.block(k)
    valid = "" if load_valid is None else \
        f", valid_shape=[{load_valid[0]}, {load_valid[1]}], pad_value=pl.PadValue.{pad}"
    if view:
        lines.append(f"{ind}{name}_v = {x.name}[{row}:{row} + {R}, {db}:{db + C}]")
        lines.append(f"{ind}{name}_w0 = pl.load({name}_v, [0, 0], [{R}, {C}]{valid})")
    else:
        lines.append(f"{ind}{name}_w0 = pl.load({x.name}, [{row}, {db}], [{R}, {C}]{valid})")
    h, w = R, C
    for s, op in enumerate(ops):
        cur, new = f"{name}_w{s}", f"{name}_w{s + 1}"
        if op[0] == "slice":
            _, h2, w2, o1, o2 = op
            text = f"pl.slice({cur}, [{h2}, {w2}], [{o1}, {o2}])"
            h, w = h2, w2
        elif op[0] == "transpose":
            text = f"pl.transpose({cur})"
            h, w = w, h
        elif op[0] == "reshape":
            text = f"pl.reshape({cur}, [{op[1]}, {op[2]}])"
            h, w = op[1], op[2]
        elif op[0] == "fill":
            lines.append(f"{ind}{new} = pl.fillpad({cur}, pl.PadValue.{op[1]})")
            cur = new
            text = f"pl.set_validshape({cur}, {h}, {w})"
        elif op[0] == "concat":
            other, w2 = op[1], op[2]
            lines.append(f"{ind}{name}_c{s} = pl.load({other.name}, [{kb} * {h}, 0], [{h}, {w2}])")
            text = f"pl.concat({cur}, {name}_c{s})"
            w += w2
        else:
            text = f"pl.{op[1]}({cur}, {op[2]!r})"
        lines.append(f"{ind}{new} = {text}")
    lines.append(f"{ind}{out.name} = pl.store({name}_w{len(ops)}, [{kb} * {h}, 0], {out.name})")

    def reference(inputs: dict) -> dict:
        o = _start(out, inputs)
        for b in blocks:
            r = b * R + da
            vr_, vc_ = load_valid or (R, C)
            t = torch.full((R, C), fp.pad_value(pad, dtype), dtype=ref.TORCH[dtype])
            t[:vr_, :vc_] = inputs[x.name][r:r + vr_, db:db + vc_]
            for op in ops:
                if op[0] == "slice":
                    _, h2, w2, o1, o2 = op
                    t = t[o1:o1 + h2, o2:o2 + w2]
                    vr_, vc_ = min(h2, vr_ - o1), min(w2, vc_ - o2)
                elif op[0] == "transpose":
                    t, vr_, vc_ = t.T, vc_, vr_
                elif op[0] == "reshape":
                    t = t.reshape(op[1], op[2])
                    vr_, vc_ = op[1], op[2]
                elif op[0] == "fill":
                    t = t.clone()
                    mask = torch.ones_like(t, dtype=torch.bool)
                    mask[:vr_, :vc_] = False
                    t[mask] = torch.tensor(fp.pad_value(op[1], dtype), dtype=t.dtype)
                    vr_, vc_ = t.shape
                elif op[0] == "concat":
                    other, w2 = op[1], op[2]
                    hh = t.shape[0]
                    t = torch.cat([t, inputs[other.name][b * hh:(b + 1) * hh, :]], dim=1)
                    vc_ = t.shape[1]
                else:
                    s = ref.scalar_as(op[2], dtype).expand_as(t)
                    t = ref.binary(op[1], t, s, dtype)
            hh = final[0]
            o[b * hh:b * hh + vr_, :vc_] = t[:vr_, :vc_]
        return {out.name: o}

    return Case("window", name, [x, *others, out], reference, kernel=lines,
                tolerance={out.name: 0})


@st.composite
def matmul_case(draw, name: str) -> Case:
    """A K loop: acc = pl.matmul of the first K block, then pl.matmul_acc of the others in
    a pl.range or pl.unroll loop (a carried Acc tile), operands maybe stored transposed."""
    src = draw(st.sampled_from(sorted(MATMUL_DTYPES)))
    dtype = MATMUL_DTYPES[src]
    M, N, KC = (draw(st.sampled_from((16, 32))) for _ in range(3))
    nk = draw(st.integers(1, 3))
    a_trans, b_trans = draw(st.booleans()), draw(st.booleans())
    kind = draw(st.sampled_from(("range", "unroll")))
    a = Tensor(f"{name}_a", (nk * KC, M) if a_trans else (M, nk * KC), src)
    b = Tensor(f"{name}_b", (N, nk * KC) if b_trans else (nk * KC, N), src)
    out = Tensor(f"{name}_mm", (M, N), dtype, "out")
    k = f"{name}_k"

    def operands(at: str, ind: str) -> list[str]:
        a_at, a_shape = (f"[{at}, 0]", f"[{KC}, {M}]") if a_trans else (f"[0, {at}]",
                                                                         f"[{M}, {KC}]")
        b_at, b_shape = (f"[0, {at}]", f"[{N}, {KC}]") if b_trans else (f"[{at}, 0]",
                                                                         f"[{KC}, {N}]")
        return [f"{ind}{name}_ta = pl.load({a.name}, {a_at}, {a_shape}, target_memory=pl.Mem.Mat)",
                f"{ind}{name}_tb = pl.load({b.name}, {b_at}, {b_shape}, target_memory=pl.Mem.Mat)",
                f"{ind}{name}_l = pl.move({name}_ta, pl.Mem.Left)",
                f"{ind}{name}_r = pl.move({name}_tb, pl.Mem.Right)"]

    trans = "".join(f", {flag}=True" for flag, on in (("a_trans", a_trans), ("b_trans", b_trans))
                    if on)
    lines = operands("0", "")
    lines.append(f"{name}_acc = pl.matmul({name}_l, {name}_r{trans})")
    lines.append(Loop(kind, 1, nk, 1, KC).header(k))
    lines += operands(k, "    ")
    lines.append(f"    {name}_acc = pl.matmul_acc({name}_acc, {name}_l, {name}_r{trans})")
    lines.append(f"{out.name} = pl.store({name}_acc, [0, 0], {out.name})")

    def reference(inputs: dict) -> dict:
        lhs, rhs = inputs[a.name], inputs[b.name]
        lhs, rhs = (lhs.T if a_trans else lhs), (rhs.T if b_trans else rhs)
        if dtype == "INT32":
            return {out.name: (lhs.long() @ rhs.long()).to(torch.int32)}
        # In K order in FP32, each product and each sum rounded, from +0.
        acc = torch.zeros(M, N, dtype=torch.float32)
        for kk in range(nk * KC):
            acc = acc + lhs[:, kk:kk + 1].float() * rhs[kk:kk + 1, :].float()
        return {out.name: acc}

    return Case("matmul", name, [a, b, out], reference, kernel=lines, tolerance={out.name: 0})


# ----------------------------------------------------------------------------- task cases

AT = "with pl.at(level=pl.Level.CORE_GROUP"


def _kernel(fname: str, params: list[tuple[str, Tensor | str]], body: list[str],
            returns: list[str]) -> str:
    """An @pl.jit.incore function: params are (name, Tensor) or (name, annotation text)."""
    sig = ",\n        ".join(f"{p}: {_annotation(t) if isinstance(t, Tensor) else t}"
                             for p, t in params)
    lines = [f"@pl.jit.incore\ndef {fname}(\n        {sig}):"]
    lines += [f"    {b}" for b in body]
    lines.append(f"    return {', '.join(returns)}")
    return "\n".join(lines) + "\n"


def _window(tensor: str, rows: str, cols: str | None, R: int, C: int) -> str:
    col = f", {cols}:{cols} + {C}" if cols is not None else ""
    return f"{tensor}[{rows}:{rows} + {R}{col}]"


def _computed(value: str, leaves: set[str]) -> str:
    """A task's result must be computed (x * 1 is x, bit for bit), not a bare input."""
    return f"pl.mul({value}, 1)" if value in leaves else value


@st.composite
def chain_case(draw, name: str) -> Case:
    """Two or three stages, each an @pl.jit.incore kernel writing a created tensor or a
    pl.at block whose result leaves it; the first reads a slice of x passed straight, the
    last writes a window of the output; maybe the whole chain per block of a pl.parallel,
    pl.range or pl.unroll loop."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    n = draw(st.integers(1, 3))
    looped = n > 1 or draw(st.booleans())
    d_in = draw(st.sampled_from(DTYPES))
    x = Tensor(f"{name}_x", ((n + 1) * R, C), d_in)
    a = draw(st.sampled_from((0, R)))
    stages = draw(st.integers(2, 3))
    d_out = draw(st.sampled_from(DTYPES))
    out = Tensor(f"{name}_o", (n * R, C), d_out, "out")
    i = f"{name}_i"
    base = f"{i} * {R}" if looped else "0"
    lines, functions, exprs = [], [], []
    if looped:
        kind = draw(st.sampled_from(("parallel", "range", "unroll")))
        lines.append(f"for {i} in pl.{kind}({n}):")
    ind = "    " if looped else ""
    src = f"{x.name}[{base} + {a}:{base} + {a + R}, :]" if a else \
        f"{x.name}[{base}:{base} + {R}, :]"
    out_window = f"{out.name}[{base}:{base} + {R}, :]"
    for s in range(stages):
        last = s == stages - 1
        dst_dtype = d_out if last else draw(st.sampled_from(DTYPES))
        expr = draw(path_exprs(d_in, draw(st.integers(1, 3)), dst_dtype))
        exprs.append(expr)
        dst = f"{name}_s{s}"
        if draw(st.booleans()):
            fname = f"{name}_k{s}"
            body = [f"t = pl.load(a, [0, 0], [{R}, {C}])"]
            em_lines, value = _emit(expr, lambda n_: "t", "", "")
            body += em_lines + [f"b = pl.store({value}, [0, 0], b)"]
            params = [("a", Tensor("a", (R, C), d_in)),
                      ("b", Tensor("b", (R, C), dst_dtype, "out"))]
            functions.append(_kernel(fname, params, body, ["b"]))
            if last:
                lines.append(f"{ind}{fname}({src}, {out_window})")
            else:
                lines.append(f"{ind}{dst} = pl.create_tensor([{R}, {C}], pl.{dst_dtype})")
                lines.append(f"{ind}{dst} = {fname}({src}, {dst})")
        else:
            lines.append(f'{ind}{AT}, name_hint="{name}_b{s}"):')
            em_lines, value = _emit(expr, lambda n_: src, ind + "    ", f"{name}_{s}")
            lines += em_lines
            lines.append(f"{ind}    {out_window if last else dst} = {_computed(value, {src})}")
        src, d_in = dst, dst_dtype

    def reference(inputs: dict) -> dict:
        o = torch.zeros(out.shape, dtype=ref.TORCH[d_out])
        for b in range(n):
            v = inputs[x.name][b * R + a:b * R + a + R, :]
            for e in exprs:
                v = fp.eval_expr(e, {_leaves(e)[0]: v})
            o[b * R:b * R + R] = v
        return {out.name: o}

    return Case("chain", name, [x, out], reference, orchestration=lines, functions=functions,
                tolerance={out.name: 0})


@st.composite
def grid_case(draw, name: str) -> Case:
    """A grid of window tasks (pl.parallel or pl.range loops around a pl.at block or a
    kernel call with window arguments), then maybe a task reading all they wrote."""
    body_kind = draw(st.sampled_from(("kernel", "tensor", "tiles", "looped")))
    # Tensor-level windows may be too big for one Vec chunk: TensorToTile splits them.
    big = ((64, 256), (32, 512)) if body_kind in ("tensor", "looped") else ()
    R, C = draw(st.sampled_from(TILE_SHAPES + big))
    nr, nc = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    expr, tolerance = draw(fp.lane_exprs(draw(st.integers(1, 2))))
    leaves = _leaves(expr)
    shape = (nr * R, nc * C)
    tensors = [Tensor(f"{name}_{leaf}", shape, fp.input_dtype(leaf)) for leaf in leaves]
    out = Tensor(f"{name}_o", shape, expr.dtype, "out")
    tensors.append(out)
    total = Tensor(f"{name}_total", shape, expr.dtype, "out") if draw(st.booleans()) else None
    if total:
        tensors.append(total)
    i, j = f"{name}_i", f"{name}_j"
    kinds = ("parallel", "parallel", "range")
    lines = [f"for {i} in pl.{draw(st.sampled_from(kinds))}({nr}):"]
    lines.append(f"    for {j} in pl.{draw(st.sampled_from(kinds))}({nc}):")
    rows, cols = f"{i} * {R}", f"{j} * {C}"
    windows = {leaf: _window(f"{name}_{leaf}", rows, cols, R, C) for leaf in leaves}
    out_window = _window(out.name, rows, cols, R, C)
    functions = []
    if body_kind == "kernel":
        fname = f"{name}_k"
        body = [f"t_{leaf} = pl.load({leaf}, [0, 0], [{R}, {C}])" for leaf in leaves]
        em_lines, value = _emit(expr, lambda n: f"t_{n}", "", "")
        body += em_lines + [f"o = pl.store({value}, [0, 0], o)"]
        params = [(leaf, Tensor(leaf, (R, C), fp.input_dtype(leaf))) for leaf in leaves]
        params.append(("o", Tensor("o", (R, C), expr.dtype, "out")))
        functions.append(_kernel(fname, params, body, ["o"]))
        args = ", ".join([windows[leaf] for leaf in leaves] + [out_window])
        lines.append(f"        {fname}({args})")
    elif body_kind in ("tiles", "looped"):
        # The task walks its window's columns in a loop of its own, on tiles or on
        # tensor windows.
        C2 = C // 2 if C >= 32 else C
        c = f"{name}_c"
        col = f"{cols} + {c} * {C2}"
        lines.append(f'        {AT}, name_hint="{name}_g"):')
        lines.append(f"            for {c} in pl.{draw(st.sampled_from(('range', 'unroll')))}"
                     f"({C // C2}):")
        ind = "                "
        if body_kind == "tiles":
            for leaf in leaves:
                lines.append(f"{ind}{name}_t_{leaf} = pl.load({name}_{leaf}, [{rows}, {col}], "
                             f"[{R}, {C2}])")
            em_lines, value = _emit(expr, lambda n: f"{name}_t_{n}", ind, f"{name}_")
            lines += em_lines
            lines.append(f"{ind}{out.name} = pl.store({value}, [{rows}, {col}], {out.name})")
        else:
            sub = {leaf: _window(f"{name}_{leaf}", rows, col, R, C2) for leaf in leaves}
            em_lines, value = _emit(expr, lambda n: sub[n], ind, f"{name}_")
            lines += em_lines
            lines.append(f"{ind}{_window(out.name, rows, col, R, C2)} = "
                         f"{_computed(value, set(sub.values()))}")
    else:
        lines.append(f'        {AT}, name_hint="{name}_g"):')
        em_lines, value = _emit(expr, lambda n: windows[n], "            ", f"{name}_")
        lines += em_lines
        lines.append(f"            {out_window} = {_computed(value, set(windows.values()))}")
    if total:
        lines.append(f'{AT}, name_hint="{name}_sum"):')
        lines.append(f"    {total.name}[:] = pl.add({out.name}, {out.name})")

    def reference(inputs: dict) -> dict:
        o = torch.zeros(shape, dtype=ref.TORCH[expr.dtype])
        for bi in range(nr):
            for bj in range(nc):
                env = {leaf: inputs[f"{name}_{leaf}"][bi * R:bi * R + R, bj * C:bj * C + C]
                       for leaf in leaves}
                o[bi * R:bi * R + R, bj * C:bj * C + C] = fp.eval_expr(expr, env)
        result = {out.name: o}
        if total:
            result[total.name] = ref.binary("add", o, o, expr.dtype)
        return result

    tol = {out.name: tolerance}
    if total:  # o + o doubles an integer's error; a float's stays the same in ulps
        tol[total.name] = tolerance * (2 if expr.dtype in fp.INTS else 1)
    return Case("grid", name, tensors, reference, orchestration=lines, functions=functions,
                tolerance=tol)


@st.composite
def reuse_case(draw, name: str) -> Case:
    """One kernel with open shapes (bare pl.Tensor parameters, shapes read as
    constexprs) called on windows of x of several shapes: one specialisation each."""
    H = draw(st.sampled_from((8, 16, 24)))
    W = draw(st.sampled_from((32, 64)))
    expr, tolerance = draw(fp.lane_exprs(draw(st.integers(1, 2))))
    leaves = _leaves(expr)
    tensors = [Tensor(f"{name}_{leaf}", (H, W), fp.input_dtype(leaf)) for leaf in leaves]
    out = Tensor(f"{name}_o", (H, W), expr.dtype, "out")
    tensors.append(out)
    r1 = draw(st.sampled_from([r for r in (4, 8, 16) if r < H]))
    c1 = draw(st.sampled_from((8, 16, W // 2)))
    pieces = [(0, r1, 0, W), (r1, H, 0, c1), (r1, H, c1, W)]
    params = ", ".join(f"{leaf}: pl.Tensor" for leaf in leaves)
    body = [f"    t_{leaf} = pl.load({leaf}, [0, 0], {leaves[0]}.shape)" for leaf in leaves]
    em_lines, value = _emit(expr, lambda n: f"t_{n}", "    ", "")
    body += em_lines + [f"    o = pl.store({value}, [0, 0], o)", "    return o"]
    function = (f"@pl.jit.incore\ndef {name}_k({params}, o: pl.Out[pl.Tensor]):\n"
                + "\n".join(body) + "\n")
    lines = []
    for r0, r1_, c0, c1_ in pieces:
        args = [f"{name}_{leaf}[{r0}:{r1_}, {c0}:{c1_}]" for leaf in leaves]
        lines.append(f"{name}_k({', '.join(args)}, {out.name}[{r0}:{r1_}, {c0}:{c1_}])")

    def reference(inputs: dict) -> dict:
        env = {leaf: inputs[f"{name}_{leaf}"] for leaf in leaves}
        return {out.name: fp.eval_expr(expr, env)}

    return Case("reuse", name, tensors, reference, orchestration=lines, functions=[function],
                tolerance={out.name: tolerance})


@st.composite
def block_case(draw, name: str) -> Case:
    """One pl.at block mixing levels: a tensor value is computed, a tile loop writes
    another output, then the value is used after the loop (recomputed there)."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    n = draw(st.integers(1, 3))
    e1, tol1 = draw(fp.lane_exprs(draw(st.integers(1, 2))))
    e2, tol2 = draw(fp.lane_exprs(draw(st.integers(1, 2))))
    leaves = sorted(set(_leaves(e1)) | set(_leaves(e2)))
    tensors = [Tensor(f"{name}_{leaf}", (n * R, C), fp.input_dtype(leaf)) for leaf in leaves]
    o = Tensor(f"{name}_o", (n * R, C), e1.dtype, "out")
    y = Tensor(f"{name}_y", (n * R, C), e2.dtype, "out")
    tensors += [o, y]
    i = f"{name}_i"
    lines = [f'{AT}, name_hint="{name}_blk"):']
    em_lines, value = _emit(e1, lambda n_: f"{name}_{n_}", "    ", f"{name}_a")
    whole = {f"{name}_{leaf}" for leaf in leaves}
    lines += em_lines + [f"    {name}_val = {_computed(value, whole)}"]
    lines.append(f"    for {i} in pl.{draw(st.sampled_from(('range', 'unroll')))}({n}):")
    for leaf in _leaves(e2):
        lines.append(f"        {name}_t_{leaf} = pl.load({name}_{leaf}, [{i} * {R}, 0], "
                     f"[{R}, {C}])")
    em_lines, value = _emit(e2, lambda n_: f"{name}_t_{n_}", "        ", f"{name}_b")
    lines += em_lines + [f"        {y.name} = pl.store({value}, [{i} * {R}, 0], {y.name})"]
    lines.append(f"    {o.name}[:] = {name}_val")

    def reference(inputs: dict) -> dict:
        env = {leaf: inputs[f"{name}_{leaf}"] for leaf in leaves}
        return {o.name: fp.eval_expr(e1, env), y.name: fp.eval_expr(e2, env)}

    return Case("block", name, tensors, reference, orchestration=lines,
                tolerance={o.name: tol1, y.name: tol2})


@st.composite
def update_case(draw, name: str) -> Case:
    """A pl.InOut accumulator updated by one task per block of x, in a pl.range, pl.unroll
    or pl.parallel loop: each task reads and writes it, so they run in program order."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    n = draw(st.integers(1, 4))
    expr, _ = draw(fp.lane_exprs(draw(st.integers(1, 2)), exact_only=True))
    dtype = expr.dtype
    op = draw(st.sampled_from(FOLD_FLOAT if dtype in fp.FLOATS else FOLD_INT))
    leaves = _leaves(expr)
    tensors = [Tensor(f"{name}_{leaf}", (n * R, C), fp.input_dtype(leaf)) for leaf in leaves]
    acc = Tensor(f"{name}_acc", (R, C), dtype, "inout")
    tensors.append(acc)
    s = f"{name}_s"
    lines = [f"for {s} in pl.{draw(st.sampled_from(('range', 'unroll', 'parallel')))}({n}):"]
    windows = {leaf: _window(f"{name}_{leaf}", f"{s} * {R}", None, R, C) for leaf in leaves}
    functions = []
    if draw(st.booleans()):
        fname = f"{name}_k"
        body = [f"t_{leaf} = pl.load({leaf}, [0, 0], [{R}, {C}])" for leaf in leaves]
        em_lines, value = _emit(expr, lambda n_: f"t_{n_}", "", "")
        body += em_lines + [f"acc = pl.store(pl.{op}(pl.load(acc, [0, 0], [{R}, {C}]), "
                            f"{value}), [0, 0], acc)"]
        params = [(leaf, Tensor(leaf, (R, C), fp.input_dtype(leaf))) for leaf in leaves]
        params.append(("acc", Tensor("acc", (R, C), dtype, "inout")))
        functions.append(_kernel(fname, params, body, ["acc"]))
        args = ", ".join([windows[leaf] for leaf in leaves] + [acc.name])
        lines.append(f"    {acc.name} = {fname}({args})")
    else:
        lines.append(f'    {AT}, name_hint="{name}_u"):')
        em_lines, value = _emit(expr, lambda n_: windows[n_], "        ", f"{name}_")
        lines += em_lines
        lines.append(f"        {acc.name}[:] = pl.{op}({acc.name}, {value})")

    def reference(inputs: dict) -> dict:
        a = inputs[acc.name].clone()
        for b in range(n):
            env = {leaf: inputs[f"{name}_{leaf}"][b * R:b * R + R, :] for leaf in leaves}
            a = ref.binary(op, a, fp.eval_expr(expr, env), dtype)
        return {acc.name: a}

    return Case("update", name, tensors, reference, orchestration=lines, functions=functions,
                tolerance={acc.name: 0})


@st.composite
def deps_case(draw, name: str) -> Case:
    """A task reads x, a later one overwrites it (write-after-read, which the runtime does
    not infer): the writer waits for the reader through an explicit `deps=`.  Maybe n
    times in a loop: reader s writes window s of y, writer s puts window s of z, through
    g, into x (reader s + 1 waits for it by an inferred RAW edge)."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    n = draw(st.integers(1, 3))
    looped = n > 1 or draw(st.booleans())
    dtype, dz = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    f = draw(path_exprs(dtype, draw(st.integers(1, 2)), dtype))
    g = draw(path_exprs(dz, draw(st.integers(1, 2)), dtype))
    x = Tensor(f"{name}_x", (R, C), dtype, "inout")
    z = Tensor(f"{name}_z", (n * R, C), dz)
    y = Tensor(f"{name}_y", (n * R, C), dtype, "out")
    s = f"{name}_s"
    lines, functions = [], []
    if looped:
        lines.append(f"for {s} in pl.{draw(st.sampled_from(('range', 'unroll', 'parallel')))}"
                     f"({n}):")
    ind = "    " if looped else ""
    rows = f"{s} * {R}" if looped else "0"
    y_win, z_win = _window(y.name, rows, None, R, C), _window(z.name, rows, None, R, C)
    if draw(st.booleans()):
        for fname, e, src, dst in ((f"{name}_kr", f, "x", "y"), (f"{name}_kw", g, "z", "x")):
            em_lines, value = _emit(e, lambda n_: "t", "", "")
            body = [f"t = pl.load({src}, [0, 0], [{R}, {C}])", *em_lines,
                    f"{dst} = pl.store({value}, [0, 0], {dst})"]
            params = [(src, Tensor(src, (R, C), _leaf_dtype(e))),
                      (dst, Tensor(dst, (R, C), dtype, "out"))]
            functions.append(_kernel(fname, params, body, [dst]))
        lines.append(f"{ind}_{name}_yw, {name}_rd = pl.submit({name}_kr, {x.name}, {y_win})")
        lines.append(f"{ind}{x.name}, _{name}_wt = pl.submit({name}_kw, {z_win}, {x.name}, "
                     f"deps=[{name}_rd])")
    else:
        em_lines, value = _emit(f, lambda n_: x.name, ind + "    ", f"{name}_r")
        lines.append(f'{ind}{AT}, name_hint="{name}_read") as {name}_rd:')
        lines += em_lines + [f"{ind}    {y_win} = {_computed(value, {x.name})}"]
        em_lines, value = _emit(g, lambda n_: z_win, ind + "    ", f"{name}_w")
        lines.append(f'{ind}{AT}, name_hint="{name}_write", deps=[{name}_rd]):')
        lines += em_lines + [f"{ind}    {x.name}[:] = {_computed(value, {z_win})}"]

    def reference(inputs: dict) -> dict:
        xs = inputs[x.name]
        out = torch.zeros(y.shape, dtype=ref.TORCH[dtype])
        for b in range(n):
            out[b * R:b * R + R] = fp.eval_expr(f, {_leaves(f)[0]: xs})
            xs = fp.eval_expr(g, {_leaves(g)[0]: inputs[z.name][b * R:b * R + R]})
        return {y.name: out, x.name: xs}

    return Case("deps", name, [x, z, y], reference, orchestration=lines, functions=functions,
                tolerance={x.name: 0, y.name: 0})


def _leaf_dtype(e: Expr) -> str:
    return fp.input_dtype(_leaves(e)[0])


ATOMIC_DTYPES = ("FP32", "FP16", "INT32", "INT16", "INT8")  # both backends
MATMUL_DTYPES = {"FP32": "FP32", "FP16": "FP32", "BF16": "FP32", "INT8": "INT32"}


@st.composite
def splitk_case(draw, name: str) -> Case:
    """A zeroing task, then S tasks adding partial results atomically into one tensor (a
    pl.parallel loop of kernel calls, or one SPMD dispatch): vector partials of x's row
    blocks, or matmuls of K slices.  Small integers make every order give the same sum."""
    S = draw(st.integers(2, 4))
    variant = draw(st.sampled_from(("vector", "matmul")))
    spmd = draw(st.booleans())
    if variant == "vector":
        R, C = draw(st.sampled_from(TILE_SHAPES))
        dtype = draw(st.sampled_from(ATOMIC_DTYPES))
        step = draw(st.sampled_from((("unary", "neg", None), ("unary", "abs", None),
                                     ("scalar", "mul", 2), ("scalar", "add", 1), None)))
        leaf = Expr("input", dtype, value=f"x_{dtype}_0")
        expr = leaf if step is None else Expr(step[0], dtype, step[1], (leaf,), value=step[2])
        inputs = [Tensor(f"{name}_x", (S * R, C), dtype, values="small")]
        cshape = (R, C)
    else:
        src = draw(st.sampled_from(sorted(MATMUL_DTYPES)))
        dtype = MATMUL_DTYPES[src]
        M, N, KC = (draw(st.sampled_from((16, 32))) for _ in range(3))
        inputs = [Tensor(f"{name}_a", (M, S * KC), src, values="small"),
                  Tensor(f"{name}_b", (S * KC, N), src, values="small")]
        cshape = (M, N)
    c = Tensor(f"{name}_c", cshape, dtype, "out")
    k0 = "pl.get_block_idx() * " + str(R if variant == "vector" else KC) if spmd else "k0"
    if variant == "vector":
        em_lines, value = _emit(expr, lambda n: "t", "", "")
        body = [f"t = pl.load(x, [{k0}, 0], [{R}, {C}])", *em_lines]
        params = [("x", Tensor("x", inputs[0].shape, dtype))]
    else:
        body = [f"ta = pl.load(a, [0, {k0}], [{M}, {KC}], target_memory=pl.Mem.Mat)",
                f"tb = pl.load(b, [{k0}, 0], [{KC}, {N}], target_memory=pl.Mem.Mat)",
                "p = pl.matmul(pl.move(ta, pl.Mem.Left), pl.move(tb, pl.Mem.Right))"]
        value = "p"
        params = [("a", Tensor("a", inputs[0].shape, src)),
                  ("b", Tensor("b", inputs[1].shape, src))]
    body.append(f"c = pl.store({value}, [0, 0], c, atomic=pl.AtomicType.Add)")
    params.append(("c", Tensor("c", cshape, dtype, "out")))
    if not spmd:
        params.append(("k0", "pl.Scalar[pl.INT64]"))
    zero = _kernel(f"{name}_zero", [("c", Tensor("c", cshape, dtype, "out"))],
                   [f"c = pl.store(pl.full([{cshape[0]}, {cshape[1]}], pl.{dtype}, 0), [0, 0], c)"],
                   ["c"])
    part = _kernel(f"{name}_part", params, body, ["c"])
    args = ", ".join(t.name for t in inputs)
    lines = [f"{c.name} = {name}_zero({c.name})"]
    if spmd:
        lines.append(f"{c.name}, _{name}_tid = pl.spmd_submit({name}_part, {args}, {c.name}, "
                     f"core_num={S})")
    else:
        size = R if variant == "vector" else KC
        lines.append(f"for {name}_s in pl.parallel({S}):")
        lines.append(f"    {c.name} = {name}_part({args}, {c.name}, {name}_s * {size})")

    def reference(values: dict) -> dict:
        if variant == "vector":
            x = values[inputs[0].name]
            parts = [fp.eval_expr(expr, {leaf.value: x[s * R:(s + 1) * R]}) for s in range(S)]
            total = sum(p.to(torch.float64) for p in parts)
        else:
            total = values[inputs[0].name].to(torch.float64) @ \
                values[inputs[1].name].to(torch.float64)
        return {c.name: total.to(ref.TORCH[dtype])}

    return Case("splitk", name, [*inputs, c], reference, orchestration=lines,
                functions=[zero, part], tolerance={c.name: 0})


# ----------------------------------------------------------------------------- programs

FAMILIES = {
    "tiles": tiles_case, "carry": carry_case, "window": window_case, "matmul": matmul_case,
    "chain": chain_case, "grid": grid_case, "reuse": reuse_case, "block": block_case,
    "update": update_case, "deps": deps_case,
    "splitk": splitk_case,
}
TILE_FAMILIES = ("tiles", "carry", "window", "matmul")
# Draw weights: task cases build a kernel per task body, tile cases share one kernel.
WEIGHTS = {"tiles": 5, "carry": 4, "window": 3, "matmul": 1, "chain": 1, "grid": 1, "reuse": 1,
           "block": 1, "update": 1, "deps": 1, "splitk": 1}


@st.composite
def programs(draw, cases: tuple[int, int] = (20, 30), families=tuple(FAMILIES)) -> Program:
    """A batch of between cases[0] and cases[1] cases of the given families."""
    pool = [f for f in families for _ in range(WEIGHTS[f])]
    count = draw(st.integers(*cases))
    drawn = [draw(FAMILIES[draw(st.sampled_from(pool))](f"c{k}")) for k in range(count)]
    # Hypothesis starts from the simplest example, every case alike: a batch checks
    # distinct programs only.
    assume(len({case_text(case) for case in drawn}) == count)
    schedule_seed = draw(st.sampled_from((None, 0, 1, 7, 12345)))
    return Program(
        drawn,
        seed=draw(st.integers(0, 2**31 - 1)),
        workers=draw(st.sampled_from((None, 1, 2, 4))),
        schedule_seed=schedule_seed,
        # The race detector runs on the seeded (Python) scheduler.
        detect_races=schedule_seed is not None and draw(st.booleans()),
        tiles_in=draw(st.sampled_from(("kernel", "kernel", "block"))),
    )


def case_text(case: Case) -> str:
    """A case's source and signature without its name: equal for equal programs."""
    text = "\n".join(case.functions + case.kernel + case.orchestration
                     + [f"{t.shape} {t.dtype} {t.role} {t.values}" for t in case.tensors])
    return text.replace(f"{case.name}_", "")


def tensors(program: Program) -> list[Tensor]:
    return [t for case in program.cases for t in case.tensors]


def parameters(program: Program) -> list[tuple[str, tuple[int, int], str, bool]]:
    """(name, shape, dtype, is_output) of every parameter of `fuzz_kernel`, in order."""
    return [(t.name, t.shape, t.dtype, t.role != "in") for t in tensors(program)]


def make_inputs(program: Program) -> dict[str, torch.Tensor]:
    """Seeded values of every input and of every InOut tensor (its contents before)."""
    g = torch.Generator().manual_seed(program.seed)
    out = {}
    for t in tensors(program):
        if t.role == "out":
            continue
        if t.values == "small":
            values = torch.randint(-8, 9, t.shape, generator=g, dtype=torch.int64)
            out[t.name] = values.to(ref.TORCH[t.dtype])
        elif t.values.startswith("const:"):
            out[t.name] = torch.full(t.shape, int(t.values[6:]), dtype=ref.TORCH[t.dtype])
        else:
            out[t.name] = fp.random_values(g, t.shape, t.dtype)
    return out


def evaluate(program: Program, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every output's expected contents."""
    expected = {}
    for case in program.cases:
        expected.update(case.reference(inputs))
    return expected


def tolerances(program: Program) -> dict[str, int]:
    return {name: tol for case in program.cases for name, tol in case.tolerance.items()}


def render(program: Program) -> str:
    """The batch as a Python module defining `fuzz_kernel` (and its kernels)."""
    parts = [fp.HEADER.rstrip("\n") + "\n"]
    for case in program.cases:
        parts += case.functions
    tile_cases = [c for c in program.cases if c.kernel]
    call = []
    body = [line for c in tile_cases for line in c.kernel]
    if tile_cases and program.tiles_in == "block":
        call = [f'{AT}, name_hint="tiles"):'] + [f"    {line}" for line in body]
    elif tile_cases:
        params = [t for c in tile_cases for t in c.tensors]
        outs = [t.name for t in params if t.role != "in"]
        parts.append(_kernel("fuzz_tiles", [(t.name, t) for t in params], body, outs))
        call = [f"{', '.join(outs)} = fuzz_tiles({', '.join(t.name for t in params)})"]
    everything = tensors(program)
    sig = ",\n        ".join(f"{t.name}: {_annotation(t)}" for t in everything)
    lines = [f"@pl.jit\ndef fuzz_kernel(\n        {sig}):"]
    lines += [f"    {line}" for line in call]
    lines += [f"    {line}" for c in program.cases for line in c.orchestration]
    lines.append(f"    return {', '.join(t.name for t in everything if t.role != 'in')}")
    parts.append("\n".join(lines) + "\n")
    return "\n\n".join(parts)
