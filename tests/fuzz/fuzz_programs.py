"""Random well-typed pypto programs as DSL source text, with their reference semantics.

A program is a batch of independent *lanes* (one generated expression each, stored into
its own output) so that one g++ build checks many examples.  Program kinds:

- "tile":    one `@pl.jit.incore` kernel: loads, a tile expression per lane, stores;
- "tensor":  a `@pl.jit` orchestration, lanes inside `pl.at` blocks (tensor ops), spread
             over several tasks that hand scratch tensors to each other;
- "partial": a kernel over tensors whose shape is not the tile's: loads with a valid
             shape and a pad value, optional `pl.fillpad`, row/column reductions and
             broadcasts, stores of the valid region;
- "loop":    a kernel with a `pl.range`/`pl.unroll` loop over row blocks and a
             loop-carried accumulator;
- "tasks":   an orchestration with a `pl.spmd` or `pl.parallel` stage between `pl.at`
             tasks, run with a random worker count and schedule seed.

`evaluate` computes every lane with `fuzz_reference` (plain torch, no pypto).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import fuzz_reference as ref
import torch
from hypothesis import assume
from hypothesis import strategies as st

FLOATS = ("FP32", "FP16", "BF16")
INTS = ("INT32", "INT16", "INT8")
DTYPES = FLOATS + INTS

# Casts legal on both backends (LegalizeTileCast finds a chain on Ascend910B and
# Ascend950), by source.  Checked against the compiler by a test.
CASTS = {
    "FP32": ("FP16", "BF16", "INT32", "INT16", "INT8"),
    "FP16": ("FP32", "BF16", "INT32", "INT16", "INT8"),
    "BF16": ("FP32", "FP16", "INT32", "INT16", "INT8"),
    "INT32": ("FP32", "FP16", "BF16", "INT16", "INT8"),
    "INT16": ("FP32", "FP16", "BF16", "INT8"),
    "INT8": ("FP16",),
}
MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
# Chains that round twice on some backend (docs/numerics.md): with a mode that does not
# compose they may differ from one rounding by one unit, so they only end a lane.
DOUBLE_ROUNDING = {("FP32", "INT8"), ("INT32", "BF16")}
COMPOSING_MODES = ("floor", "ceil", "trunc")

FLOAT_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
INT_BINARY = FLOAT_BINARY + ("and_", "or_", "xor", "shl", "shr")
FLOAT_UNARY = ("neg", "abs", "relu", "sqrt", "rsqrt", "recip")
INT_UNARY = ("neg", "abs", "relu", "not_")
TRANSCENDENTAL = ("exp", "log")  # within an ulp of the reference's, so only at a lane's end
RSCALAR_INT = ("add", "sub", "mul", "div", "maximum", "minimum", "and_", "or_", "xor")

FLOAT_CONSTANTS = (0.5, -1.25, 3.0, 0.1, -7.0, 1e-3, 2.0, 1000.0, -0.0, 65504.0, 1e6,
                   1.0004882812500002, 0.33333334)
INT_CONSTANTS = (0, 1, -1, 3, 7, -100, 127, 1000, 40000, -129, 2**31 - 1)
SHIFT_COUNTS = (0, 1, 3, 7, 15, 31, 40)


@dataclass(frozen=True)
class Expr:
    """One node of a lane: an input leaf, a unary/binary/scalar-form operator or a cast."""

    kind: str  # "input" | "unary" | "binary" | "scalar" | "cast"
    dtype: str
    op: str = ""
    args: tuple = ()
    value: object = None  # the input's name, or the scalar constant
    reversed: bool = False  # scalar form with the scalar on the left
    mode: str = ""  # cast mode

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)

    def leaves(self) -> set[str]:
        """Every input and scratch tensor it reads."""
        if self.kind == "input":
            return {self.value}
        return set().union(*(a.leaves() for a in self.args))

    def inputs(self) -> set[str]:
        """The program inputs it reads (not the scratch tensors of earlier lanes)."""
        if self.kind == "input":
            return {self.value} if self.value.startswith("x_") else set()
        return set().union(*(a.inputs() for a in self.args))


@dataclass(frozen=True)
class Lane:
    """One example: an expression, optionally reduced, stored into output `name`."""

    name: str
    expr: Expr
    tolerance: int = 0  # ulps / integer units against the plain reference
    reduce: str = ""  # partial kind: "" | "row_sum" | "row_max" | ... | "col_sum_tree"
    expand: str = ""  # partial kind: a row/col broadcast of the reduction back over expr

    @property
    def out_dtype(self) -> str:
        return self.expr.dtype


@dataclass
class Program:
    """A generated program: its kind, shapes, lanes and the knobs of its run."""

    kind: str
    rows: int  # tile rows (tensor rows for tensor/tasks kinds)
    cols: int
    lanes: list[Lane]
    valid: tuple[int, int] | None = None  # partial: the tensors' (valid) shape
    pads: dict[str, str] = field(default_factory=dict)  # partial: input -> pad value
    fillpad: dict[str, str] = field(default_factory=dict)  # partial: input -> fillpad value
    blocks: int = 1  # loop/tasks: row blocks
    loop: str = "range"  # loop: "range" | "unroll" | "step"
    stage: str = "spmd"  # tasks: "spmd" | "parallel"
    groups: list[list[int]] = field(default_factory=list)  # tensor: lanes per pl.at block
    seed: int = 0
    workers: int | None = None
    schedule_seed: int | None = None
    detect_races: bool = False

    @property
    def inputs(self) -> list[str]:
        return sorted(set().union(*(lane.expr.inputs() for lane in self.lanes)))

    def input_shape(self) -> tuple[int, int]:
        if self.kind == "partial":
            return self.valid
        if self.kind in ("loop", "tasks"):
            return (self.rows * self.blocks, self.cols)
        return (self.rows, self.cols)

    def output_shape(self, lane: Lane) -> tuple[int, int]:
        r, c = self.input_shape()
        if lane.reduce.startswith("row") and not lane.expand:
            return (r, 1)
        if lane.reduce.startswith("col") and not lane.expand:
            return (1, c)
        return (r, c)


def tolerances(program: Program) -> dict[str, int]:
    """Every output's tolerance: its lane's (ulps / integer units)."""
    tol = {lane.name: lane.tolerance for lane in program.lanes}
    tol.update({f"{lane.name}_acc": lane.tolerance for lane in program.lanes})
    return tol


def input_dtype(name: str) -> str:
    return name.split("_")[1]


# ----------------------------------------------------------------------------- strategies


@st.composite
def expressions(draw, dtype: str, depth: int, scratch: tuple = ()) -> Expr:
    """A well-typed expression of `dtype`; depth bounds its height.  Leaves are inputs
    `x_<dtype>_0`, `x_<dtype>_1`, or `scratch` names `(name, dtype)` of earlier lanes."""
    choices = ["input"] if depth <= 0 else ["input", "unary", "binary", "binary", "scalar",
                                            "scalar", "cast"]
    kind = draw(st.sampled_from(choices))
    if kind == "input":
        names = [f"x_{dtype}_0", f"x_{dtype}_1"] + [n for n, d in scratch if d == dtype] * 2
        return Expr("input", dtype, value=draw(st.sampled_from(names)))
    sub = lambda d=dtype: expressions(d, depth - 1, scratch)  # noqa: E731
    if kind == "unary":
        op = draw(st.sampled_from(FLOAT_UNARY if dtype in FLOATS else INT_UNARY))
        return Expr("unary", dtype, op, (draw(sub()),))
    if kind == "binary":
        op = draw(st.sampled_from(FLOAT_BINARY if dtype in FLOATS else INT_BINARY))
        return Expr("binary", dtype, op, (draw(sub()), draw(sub())))
    if kind == "scalar":
        if dtype in FLOATS:
            op = draw(st.sampled_from(FLOAT_BINARY))
            value = draw(st.sampled_from(FLOAT_CONSTANTS))
            rev = draw(st.booleans())
        else:
            op = draw(st.sampled_from(INT_BINARY))
            value = draw(st.sampled_from(SHIFT_COUNTS if op in ("shl", "shr")
                                         else INT_CONSTANTS))
            rev = op in RSCALAR_INT and draw(st.booleans())
        return Expr("scalar", dtype, op, (draw(sub()),), value=value, reversed=rev)
    sources = [s for s, dsts in CASTS.items() if dtype in dsts]
    src = draw(st.sampled_from(sources))
    mode = draw(st.sampled_from(MODES))
    if (src, dtype) in DOUBLE_ROUNDING and mode not in COMPOSING_MODES:
        mode = draw(st.sampled_from(COMPOSING_MODES))
    return Expr("cast", dtype, "cast", (draw(sub(src)),), mode=mode)


@st.composite
def lane_exprs(draw, depth: int, dtypes=DTYPES, scratch: tuple = (),
               exact_only: bool = False) -> tuple[Expr, int]:
    """A lane's expression and its tolerance: exact, or ended by an inexact operator."""
    dtype = draw(st.sampled_from(dtypes))
    endings = ["exact"] if exact_only else ["exact"] * 5 + ["transcendental", "cast"]
    ending = draw(st.sampled_from(endings))
    if ending == "transcendental" and dtype in FLOATS:
        inner = draw(expressions(dtype, depth - 1, scratch))
        op = draw(st.sampled_from(TRANSCENDENTAL))
        if op == "log":
            inner = Expr("unary", dtype, "abs", (inner,))
        return Expr("unary", dtype, op, (inner,)), 1
    if ending == "cast":
        src, dst = draw(st.sampled_from(sorted(DOUBLE_ROUNDING)))
        if src in dtypes and dst in dtypes:
            inner = draw(expressions(src, depth - 1, scratch))
            mode = draw(st.sampled_from(("rint", "round", "none", "odd")))
            return Expr("cast", dst, "cast", (inner,), mode=mode), 1
    return draw(expressions(dtype, depth, scratch)), 0


SHAPES = ((8, 16), (8, 32), (16, 32), (16, 64), (4, 128), (32, 16))


@st.composite
def programs(draw, kind: str, lanes: tuple[int, int] = (6, 9)) -> Program:
    """A program of `kind` with between lanes[0] and lanes[1] lanes."""
    count = draw(st.integers(*lanes))
    seed = draw(st.integers(0, 2**31 - 1))
    if kind == "partial":
        return draw(_partial(count, seed))
    rows, cols = draw(st.sampled_from(SHAPES))
    program = Program(kind, rows, cols, [], seed=seed)
    depth = draw(st.integers(1, 4))
    if kind == "tensor":
        rows, cols = draw(st.sampled_from(((16, 64), (33, 100), (64, 512), (8, 24))))
        program.rows, program.cols = rows, cols
    if kind in ("loop", "tasks"):
        program.blocks = draw(st.integers(1, 4))
        program.loop = draw(st.sampled_from(("range", "unroll", "step")))
        program.stage = draw(st.sampled_from(("spmd", "parallel")))
        program.workers = draw(st.sampled_from((None, 1, 2, 4)))
        program.schedule_seed = draw(st.sampled_from((None, 0, 1, 7)))
    if kind == "tensor":
        program.groups = _groups(draw, count)
    group_of = {i: g for g, group in enumerate(program.groups) for i in group}
    scratch: list[tuple[str, str]] = []
    for i in range(count):
        if kind == "tensor":
            # Lanes of later pl.at blocks may read earlier blocks' scratch tensors: edges.
            visible = tuple((f"s_o{j}", program.lanes[j].out_dtype) for j in range(i)
                            if group_of[j] < group_of[i] and not program.lanes[j].tolerance)
        elif kind == "tasks":
            visible = tuple(scratch) if i >= count // 2 else ()
        else:
            visible = ()
        # A loop sums each lane over the blocks: only exact lanes keep that sum comparable.
        expr, tolerance = draw(lane_exprs(depth, DTYPES, visible, exact_only=kind == "loop"))
        program.lanes.append(Lane(f"o{i}", expr, tolerance))
        if kind == "tasks" and i < count // 2 and not tolerance:
            scratch.append((f"s_o{i}", expr.dtype))
    _not_the_simplest(program)
    return program


def _not_the_simplest(program: Program) -> None:
    """Hypothesis's first example is its simplest, every lane one bare input: with one
    program per kind (the default run) it would check nothing else."""
    assume(len({repr(lane.expr) for lane in program.lanes}) > 1)


def _groups(draw, count: int) -> list[list[int]]:
    """Lanes split over consecutive pl.at blocks."""
    cuts = sorted(set(draw(st.lists(st.integers(1, count - 1), max_size=3)))) if count > 1 else []
    bounds = [0, *cuts, count]
    return [list(range(a, b)) for a, b in itertools.pairwise(bounds) if b > a]


REDUCTIONS = ("row_sum", "row_max", "row_min", "col_sum", "col_sum_tree", "col_max", "col_min")
EXPANDS = ("", "", "expand", "expand_add", "expand_sub", "expand_mul", "expand_max",
           "expand_min")
PADS = ("zero", "max", "min")


@st.composite
def _partial(draw, count: int, seed: int) -> Program:
    rows, cols = draw(st.sampled_from(((8, 16), (16, 32), (8, 64), (16, 16))))
    valid = (draw(st.integers(1, rows)), draw(st.integers(1, cols)))
    program = Program("partial", rows, cols, [], valid=valid, seed=seed)
    depth = draw(st.integers(0, 3))
    dtypes = ("FP32", "FP16", "INT32", "INT16")
    for i in range(count):
        # Reductions see the padding: integer sums wrap, float sums of padding overflow to
        # inf/NaN; both are defined and compared bit for bit.
        dtype = draw(st.sampled_from(dtypes))
        expr = draw(expressions(dtype, depth))
        reduce = draw(st.sampled_from(("",) + REDUCTIONS))
        expand = draw(st.sampled_from(EXPANDS)) if reduce and not reduce.endswith("tree") else ""
        program.lanes.append(Lane(f"o{i}", expr, 0, reduce, expand))
    for name in program.inputs:
        program.pads[name] = draw(st.sampled_from(PADS))
        if draw(st.integers(0, 3)) == 0:
            program.fillpad[name] = draw(st.sampled_from(PADS))
    _not_the_simplest(program)
    return program


# ----------------------------------------------------------------------------- inputs

SPECIAL_FLOATS = (0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 255.5, 65504.0, 65520.0,
                  1e-8, -1e-8, 3.0000002, 2.5000002, float("inf"), float("-inf"), float("nan"))


def make_inputs(program: Program) -> dict[str, torch.Tensor]:
    """Seeded inputs: a mix of normal values at several scales, ties, integers and specials."""
    g = torch.Generator().manual_seed(program.seed)
    shape = program.input_shape()
    return {name: random_values(g, shape, input_dtype(name)) for name in program.inputs}


def random_values(g: torch.Generator, shape, dtype: str) -> torch.Tensor:
    """Values of `dtype` drawn from `g`: normal values at a random scale with ties and
    specials (floats), small and wide values with the range's ends (integers)."""
    n = 1
    for d in shape:
        n *= d
    pick = torch.randint(0, 20, (n,), generator=g)
    if dtype in FLOATS:
        scale = [1.0, 8.0, 300.0][int(torch.randint(0, 3, (1,), generator=g))]
        values = torch.randn(n, generator=g, dtype=torch.float64) * scale
        halves = torch.round(torch.randn(n, generator=g, dtype=torch.float64) * 64) / 2
        values = torch.where(pick < 3, halves, values)
        specials = torch.tensor(SPECIAL_FLOATS, dtype=torch.float64)
        chosen = specials[torch.randint(0, len(specials), (n,), generator=g)]
        values = torch.where(pick == 3, chosen, values)
        return values.reshape(shape).to(ref.TORCH[dtype])
    lo, hi = ref.INT_RANGE[dtype]
    wide = torch.randint(lo, hi + 1, (n,), generator=g, dtype=torch.int64)
    small = torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64)
    specials = torch.tensor([lo, hi, 0, -1, 1, lo + 1], dtype=torch.int64)
    chosen = specials[torch.randint(0, len(specials), (n,), generator=g)]
    values = torch.where(pick < 8, small, torch.where(pick < 10, chosen, wide))
    return values.reshape(shape).to(ref.TORCH[dtype])


# ----------------------------------------------------------------------------- reference


def eval_expr(e: Expr, env: dict[str, torch.Tensor]) -> torch.Tensor:
    """The plain reference of one expression over `env` (input name -> tensor)."""
    if e.kind == "input":
        return env[e.value]
    args = [eval_expr(a, env) for a in e.args]
    if e.kind == "unary":
        return ref.unary(e.op, args[0], e.dtype)
    if e.kind == "binary":
        return ref.binary(e.op, args[0], args[1], e.dtype)
    if e.kind == "scalar":
        s = ref.scalar_as(e.value, e.dtype).expand_as(args[0])
        a, b = (s, args[0]) if e.reversed else (args[0], s)
        return ref.binary(e.op, a, b, e.dtype)
    return ref.cast(args[0], e.args[0].dtype, e.dtype, e.mode)


def pad_value(pad: str, dtype: str) -> float:
    if dtype in FLOATS:
        return {"zero": 0.0, "max": float("inf"), "min": float("-inf")}[pad]
    lo, hi = ref.INT_RANGE[dtype]
    return {"zero": 0, "max": hi, "min": lo}[pad]


def evaluate(program: Program, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every lane's expected output."""
    if program.kind == "partial":
        return _evaluate_partial(program, inputs)
    if program.kind in ("loop", "tasks"):
        out = {}
        env = dict(inputs)
        for lane in program.lanes:
            out[lane.name] = env[f"s_{lane.name}"] = eval_expr(lane.expr, env)
        if program.kind == "loop":
            # The carried accumulator: the sum over the blocks, block 0 first.
            for lane in program.lanes:
                r = program.rows
                block = out[lane.name]
                acc = torch.zeros(r, program.cols, dtype=block.dtype)
                for b in range(program.blocks):
                    acc = ref.binary("add", acc, block[b * r:(b + 1) * r], lane.out_dtype)
                out[f"{lane.name}_acc"] = acc
        return out
    env = dict(inputs)
    out = {}
    for lane in program.lanes:
        out[lane.name] = env[f"s_{lane.name}"] = eval_expr(lane.expr, env)
    return out


def _evaluate_partial(program: Program, inputs):
    r, c = program.valid
    tiles = {}
    for name, x in inputs.items():
        dtype = input_dtype(name)
        t = torch.full((program.rows, program.cols), pad_value(program.pads[name], dtype),
                       dtype=ref.TORCH[dtype])
        t[:r, :c] = x
        if name in program.fillpad:
            mask = torch.ones_like(t, dtype=torch.bool)
            mask[:r, :c] = False
            t[mask] = torch.tensor(pad_value(program.fillpad[name], dtype), dtype=t.dtype)
        tiles[name] = t
    out = {}
    for lane in program.lanes:
        full = eval_expr(lane.expr, tiles)
        dtype = lane.out_dtype
        if not lane.reduce:
            out[lane.name] = full[:r, :c]
            continue
        kind = lane.reduce.split("_")[1]
        if lane.reduce.startswith("row"):
            vec = ref.reduce_rows(full, kind, dtype)
        else:
            vec = ref.reduce_cols(full, kind, dtype, tree=lane.reduce.endswith("tree"))
        if not lane.expand:
            out[lane.name] = vec[:r, :1] if lane.reduce.startswith("row") else vec[:1, :c]
            continue
        v = vec.expand_as(full)
        if lane.expand == "expand":
            res = v.clone()
        else:
            op = {"add": "add", "sub": "sub", "mul": "mul", "max": "maximum",
                  "min": "minimum"}[lane.expand.split("_")[1]]
            res = ref.binary(op, full, v, dtype)
        out[lane.name] = res[:r, :c]
    return out


# ----------------------------------------------------------------------------- source text


def _dt(dtype: str) -> str:
    return f"pl.{dtype}"


def _const(value) -> str:
    return repr(value)


class Emitter:
    """SSA statements for expressions; `leaf(name)` says how an input is referenced."""

    def __init__(self, leaf, indent: str, prefix: str = ""):
        self.leaf = leaf
        self.indent = indent
        self.prefix = prefix
        self.lines: list[str] = []
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"{self.prefix}v{self.count}"

    def emit(self, e: Expr) -> str:
        if e.kind == "input":
            return self.leaf(e.value)
        args = [self.emit(a) for a in e.args]
        if e.kind == "unary":
            text = f"pl.{e.op}({args[0]})"
        elif e.kind == "binary":
            text = f"pl.{e.op}({args[0]}, {args[1]})"
        elif e.kind == "scalar":
            pair = (_const(e.value), args[0]) if e.reversed else (args[0], _const(e.value))
            text = f"pl.{e.op}({pair[0]}, {pair[1]})"
        else:
            text = f'pl.cast({args[0]}, {_dt(e.dtype)}, mode="{e.mode}")'
        name = self.fresh()
        self.lines.append(f"{self.indent}{name} = {text}")
        return name


def _not_bare(value: str) -> str:
    """A lane that is just an input still computes a new tensor (x * 1 is x, bit for bit)."""
    return f"pl.mul({value}, 1)" if value.startswith(("x_", "s_")) else value


def _tensor(shape, dtype, out=False) -> str:
    t = f"pl.Tensor[[{shape[0]}, {shape[1]}], {_dt(dtype)}]"
    return f"pl.Out[{t}]" if out else t


def parameters(program: Program) -> list[tuple[str, tuple[int, int], str, bool]]:
    """(name, shape, dtype, is_output) of every parameter, in signature order."""
    shape = program.input_shape()
    params = [(n, shape, input_dtype(n), False) for n in program.inputs]
    params += [(lane.name, program.output_shape(lane), lane.out_dtype, True)
               for lane in program.lanes]
    if program.kind == "loop":
        params += [(f"{lane.name}_acc", (program.rows, program.cols), lane.out_dtype, True)
                   for lane in program.lanes]
    return params


def render(program: Program) -> str:
    """The program as a Python module defining `fuzz_kernel`."""
    return {"tile": _render_tile, "tensor": _render_tensor, "partial": _render_partial,
            "loop": _render_loop, "tasks": _render_tasks}[program.kind](program)


def _signature(program: Program, extra_outputs=()) -> tuple[str, list[str]]:
    shape = program.input_shape()
    params = [f"{n}: {_tensor(shape, input_dtype(n))}" for n in program.inputs]
    outs = []
    for lane in program.lanes:
        params.append(f"{lane.name}: {_tensor(program.output_shape(lane), lane.out_dtype, True)}")
        outs.append(lane.name)
    for name, shape_, dtype in extra_outputs:
        params.append(f"{name}: {_tensor(shape_, dtype, True)}")
        outs.append(name)
    return ",\n        ".join(params), outs


HEADER = "import pypto.language as pl\n\n\n"


def _render_tile(program: Program) -> str:
    sig, outs = _signature(program)
    r, c = program.rows, program.cols
    lines = [f"@pl.jit.incore\ndef fuzz_kernel(\n        {sig}):"]
    for name in program.inputs:
        lines.append(f"    t_{name} = pl.load({name}, [0, 0], [{r}, {c}])")
    em = Emitter(lambda n: f"t_{n}", "    ")
    for lane in program.lanes:
        value = em.emit(lane.expr)
        lines += em.lines
        em.lines = []
        lines.append(f"    {lane.name} = pl.store({value}, [0, 0], {lane.name})")
    lines.append(f"    return {', '.join(outs)}")
    return HEADER + "\n".join(lines) + "\n"


def _render_tensor(program: Program) -> str:
    sig, outs = _signature(program)
    lines = [f"@pl.jit\ndef fuzz_kernel(\n        {sig}):"]
    for g, group in enumerate(program.groups):
        lines.append(f"    with pl.at(level=pl.Level.CORE_GROUP, name_hint=\"block{g}\"):")
        for i in group:
            lane = program.lanes[i]
            em = Emitter(lambda n: n, "        ")
            em.count = 1000 * (i + 1)
            value = em.emit(lane.expr)
            lines += em.lines
            # Named s_<lane>: a tensor that leaves the block when a later block reads it.
            lines.append(f"        s_{lane.name} = {_not_bare(value)}")
            lines.append(f"        {lane.name}[:] = s_{lane.name}")
    lines.append(f"    return {', '.join(outs)}")
    return HEADER + "\n".join(lines) + "\n"


def _render_partial(program: Program) -> str:
    sig, outs = _signature(program)
    R, C = program.rows, program.cols
    r, c = program.valid
    lines = [f"@pl.jit.incore\ndef fuzz_kernel(\n        {sig}):"]
    for name in program.inputs:
        pad = program.pads[name]
        lines.append(f"    t_{name} = pl.load({name}, [0, 0], [{R}, {C}], valid_shape=[{r}, {c}], "
                     f"pad_value=pl.PadValue.{pad})")
        if name in program.fillpad:
            fill = program.fillpad[name]
            lines.append(f"    t_{name} = pl.fillpad(t_{name}, pl.PadValue.{fill})")
    em = Emitter(lambda n: f"t_{n}", "    ")
    for i, lane in enumerate(program.lanes):
        value = em.emit(lane.expr)
        lines += em.lines
        em.lines = []
        if lane.reduce:
            base = value
            op = lane.reduce.replace("_tree", "")
            needs_tmp = op.startswith("row") or lane.reduce.endswith("tree")
            if needs_tmp:
                lines.append(f"    tmp{i} = pl.create_tile([{R}, {C}], {_dt(lane.out_dtype)})")
                lines.append(f"    red{i} = pl.{op}({value}, tmp{i})")
            else:
                lines.append(f"    red{i} = pl.{op}({value})")
            value = f"red{i}"
            if lane.expand:
                axis = "row" if lane.reduce.startswith("row") else "col"
                suffix = "" if lane.expand == "expand" else "_" + lane.expand.split("_")[1]
                lines.append(f"    exp{i} = pl.{axis}_expand{suffix}({base}, red{i})")
                value = f"exp{i}"
        lines.append(f"    {lane.name} = pl.store({value}, [0, 0], {lane.name})")
    lines.append(f"    return {', '.join(outs)}")
    return HEADER + "\n".join(lines) + "\n"


def _render_loop(program: Program) -> str:
    extra = [(f"{lane.name}_acc", (program.rows, program.cols), lane.out_dtype)
             for lane in program.lanes]
    sig, outs = _signature(program, extra)
    R, C, n = program.rows, program.cols, program.blocks
    lines = [f"@pl.jit.incore\ndef fuzz_kernel(\n        {sig}):"]
    for lane in program.lanes:
        lines.append(f"    acc_{lane.name} = pl.full([{R}, {C}], {_dt(lane.out_dtype)}, 0)")
    if program.loop == "step":
        lines.append(f"    for i in pl.range(0, {n * R}, {R}):")
        row = "i"
    else:
        lines.append(f"    for i in pl.{program.loop}({n}):")
        row = f"i * {R}"
    for name in program.inputs:
        lines.append(f"        t_{name} = pl.load({name}, [{row}, 0], [{R}, {C}])")
    em = Emitter(lambda n_: f"t_{n_}", "        ")
    for lane in program.lanes:
        value = em.emit(lane.expr)
        lines += em.lines
        em.lines = []
        lines.append(f"        {lane.name} = pl.store({value}, [{row}, 0], {lane.name})")
        lines.append(f"        acc_{lane.name} = pl.add(acc_{lane.name}, {value})")
    for lane in program.lanes:
        lines.append(f"    {lane.name}_acc = pl.store(acc_{lane.name}, [0, 0], {lane.name}_acc)")
    lines.append(f"    return {', '.join(outs)}")
    return HEADER + "\n".join(lines) + "\n"


def _render_tasks(program: Program) -> str:
    """A pl.at task computing the first half of the lanes into scratch tensors, an SPMD
    (or parallel) stage computing the rest block by block on tiles, and a final pl.at
    task copying the scratch tensors out (edges: RAW through scratch and outputs)."""
    sig, outs = _signature(program)
    R, C, n = program.rows, program.cols, program.blocks
    half = len(program.lanes) // 2
    first, second = program.lanes[:half], program.lanes[half:]
    lines = [f"@pl.jit\ndef fuzz_kernel(\n        {sig}):"]
    if first:
        lines.append("    with pl.at(level=pl.Level.CORE_GROUP, name_hint=\"first\"):")
        em = Emitter(lambda n_: n_, "        ")
        for lane in first:
            value = em.emit(lane.expr)
            lines += em.lines
            em.lines = []
            lines.append(f"        s_{lane.name} = {_not_bare(value)}")
    if program.stage == "spmd":
        lines.append(f"    for b in pl.spmd({n}, name_hint=\"blocks\"):")
    else:
        lines.append(f"    for b in pl.parallel({n}):")
        lines.append("        with pl.at(level=pl.Level.CORE_GROUP, name_hint=\"blocks\"):")
    ind = "        " if program.stage == "spmd" else "            "
    used = sorted(set().union(*(lane.expr.leaves() for lane in second))) if second else []
    for name in used:
        lines.append(f"{ind}t_{name} = pl.load({name}, [b * {R}, 0], [{R}, {C}])")
    em = Emitter(lambda n_: f"t_{n_}", ind)
    em.count = 500
    for lane in second:
        value = em.emit(lane.expr)
        lines += em.lines
        em.lines = []
        lines.append(f"{ind}{lane.name} = pl.store({value}, [b * {R}, 0], {lane.name})")
    if first:
        lines.append("    with pl.at(level=pl.Level.CORE_GROUP, name_hint=\"last\"):")
        for lane in first:
            lines.append(f"        {lane.name}[:] = s_{lane.name}")
    lines.append(f"    return {', '.join(outs)}")
    return HEADER + "\n".join(lines) + "\n"
