"""Task-level cases of the control-flow fuzzer: statements of the entry, with kernels of
their own."""

from __future__ import annotations

import fuzz_programs as fp
import fuzz_reference as ref
import torch
from fuzz_cases import (
    AT,
    DTYPES,
    FOLD_FLOAT,
    FOLD_INT,
    MATMUL_DTYPES,
    TILE_SHAPES,
    Case,
    Tensor,
    computed,
    emit,
    input_names,
    kernel_source,
    path_exprs,
    window_text,
)
from fuzz_programs import Expr
from hypothesis import strategies as st


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
            em_lines, value = emit(expr, lambda n_: "t", "", "")
            body += em_lines + [f"b = pl.store({value}, [0, 0], b)"]
            params = [("a", Tensor("a", (R, C), d_in)),
                      ("b", Tensor("b", (R, C), dst_dtype, "out"))]
            functions.append(kernel_source(fname, params, body, ["b"]))
            if last:
                lines.append(f"{ind}{fname}({src}, {out_window})")
            else:
                lines.append(f"{ind}{dst} = pl.create_tensor([{R}, {C}], pl.{dst_dtype})")
                lines.append(f"{ind}{dst} = {fname}({src}, {dst})")
        else:
            lines.append(f'{ind}{AT}, name_hint="{name}_b{s}"):')
            em_lines, value = emit(expr, lambda n_, src=src: src, ind + "    ", f"{name}_{s}")
            lines += em_lines
            lines.append(f"{ind}    {out_window if last else dst} = {computed(value, {src})}")
        src, d_in = dst, dst_dtype

    def reference(inputs: dict) -> dict:
        o = torch.zeros(out.shape, dtype=ref.TORCH[d_out])
        for b in range(n):
            v = inputs[x.name][b * R + a:b * R + a + R, :]
            for e in exprs:
                v = fp.eval_expr(e, {input_names(e)[0]: v})
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
    leaves = input_names(expr)
    shape = (nr * R, nc * C)
    tensors = [Tensor(f"{name}_{leaf}", shape, fp.input_dtype(leaf)) for leaf in leaves]
    out = Tensor(f"{name}_o", shape, expr.dtype, "out")
    tensors.append(out)
    # o + o: a float's error stays the same in ulps, an integer's may wrap around.
    exact = tolerance == 0 or expr.dtype in fp.FLOATS
    total = Tensor(f"{name}_total", shape, expr.dtype, "out") \
        if exact and draw(st.booleans()) else None
    if total:
        tensors.append(total)
    i, j = f"{name}_i", f"{name}_j"
    kinds = ("parallel", "parallel", "range")
    lines = [f"for {i} in pl.{draw(st.sampled_from(kinds))}({nr}):"]
    lines.append(f"    for {j} in pl.{draw(st.sampled_from(kinds))}({nc}):")
    rows, cols = f"{i} * {R}", f"{j} * {C}"
    windows = {leaf: window_text(f"{name}_{leaf}", rows, cols, R, C) for leaf in leaves}
    out_window = window_text(out.name, rows, cols, R, C)
    functions = []
    if body_kind == "kernel":
        fname = f"{name}_k"
        body = [f"t_{leaf} = pl.load({leaf}, [0, 0], [{R}, {C}])" for leaf in leaves]
        em_lines, value = emit(expr, lambda n: f"t_{n}", "", "")
        body += em_lines + [f"o = pl.store({value}, [0, 0], o)"]
        params = [(leaf, Tensor(leaf, (R, C), fp.input_dtype(leaf))) for leaf in leaves]
        params.append(("o", Tensor("o", (R, C), expr.dtype, "out")))
        functions.append(kernel_source(fname, params, body, ["o"]))
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
            em_lines, value = emit(expr, lambda n: f"{name}_t_{n}", ind, f"{name}_")
            lines += em_lines
            lines.append(f"{ind}{out.name} = pl.store({value}, [{rows}, {col}], {out.name})")
        else:
            sub = {leaf: window_text(f"{name}_{leaf}", rows, col, R, C2) for leaf in leaves}
            em_lines, value = emit(expr, lambda n: sub[n], ind, f"{name}_")
            lines += em_lines
            lines.append(f"{ind}{window_text(out.name, rows, col, R, C2)} = "
                         f"{computed(value, set(sub.values()))}")
    else:
        lines.append(f'        {AT}, name_hint="{name}_g"):')
        em_lines, value = emit(expr, lambda n: windows[n], "            ", f"{name}_")
        lines += em_lines
        lines.append(f"            {out_window} = {computed(value, set(windows.values()))}")
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
    if total:
        tol[total.name] = tolerance
    return Case("grid", name, tensors, reference, orchestration=lines, functions=functions,
                tolerance=tol)


@st.composite
def reuse_case(draw, name: str) -> Case:
    """One kernel with open shapes (bare pl.Tensor parameters, shapes read as
    constexprs) called on windows of x of several shapes: one specialisation each."""
    H = draw(st.sampled_from((8, 16, 24)))
    W = draw(st.sampled_from((32, 64)))
    expr, tolerance = draw(fp.lane_exprs(draw(st.integers(1, 2))))
    leaves = input_names(expr)
    tensors = [Tensor(f"{name}_{leaf}", (H, W), fp.input_dtype(leaf)) for leaf in leaves]
    out = Tensor(f"{name}_o", (H, W), expr.dtype, "out")
    tensors.append(out)
    r1 = draw(st.sampled_from([r for r in (4, 8, 16) if r < H]))
    c1 = draw(st.sampled_from((8, 16, W // 2)))
    pieces = [(0, r1, 0, W), (r1, H, 0, c1), (r1, H, c1, W)]
    params = ", ".join(f"{leaf}: pl.Tensor" for leaf in leaves)
    body = [f"    t_{leaf} = pl.load({leaf}, [0, 0], {leaves[0]}.shape)" for leaf in leaves]
    em_lines, value = emit(expr, lambda n: f"t_{n}", "    ", "")
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
    leaves = sorted(set(input_names(e1)) | set(input_names(e2)))
    tensors = [Tensor(f"{name}_{leaf}", (n * R, C), fp.input_dtype(leaf)) for leaf in leaves]
    o = Tensor(f"{name}_o", (n * R, C), e1.dtype, "out")
    y = Tensor(f"{name}_y", (n * R, C), e2.dtype, "out")
    tensors += [o, y]
    i = f"{name}_i"
    lines = [f'{AT}, name_hint="{name}_blk"):']
    em_lines, value = emit(e1, lambda n_: f"{name}_{n_}", "    ", f"{name}_a")
    whole = {f"{name}_{leaf}" for leaf in leaves}
    lines += em_lines + [f"    {name}_val = {computed(value, whole)}"]
    lines.append(f"    for {i} in pl.{draw(st.sampled_from(('range', 'unroll')))}({n}):")
    for leaf in input_names(e2):
        lines.append(f"        {name}_t_{leaf} = pl.load({name}_{leaf}, [{i} * {R}, 0], "
                     f"[{R}, {C}])")
    em_lines, value = emit(e2, lambda n_: f"{name}_t_{n_}", "        ", f"{name}_b")
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
    leaves = input_names(expr)
    tensors = [Tensor(f"{name}_{leaf}", (n * R, C), fp.input_dtype(leaf)) for leaf in leaves]
    acc = Tensor(f"{name}_acc", (R, C), dtype, "inout")
    tensors.append(acc)
    s = f"{name}_s"
    lines = [f"for {s} in pl.{draw(st.sampled_from(('range', 'unroll', 'parallel')))}({n}):"]
    windows = {leaf: window_text(f"{name}_{leaf}", f"{s} * {R}", None, R, C) for leaf in leaves}
    functions = []
    if draw(st.booleans()):
        fname = f"{name}_k"
        body = [f"t_{leaf} = pl.load({leaf}, [0, 0], [{R}, {C}])" for leaf in leaves]
        em_lines, value = emit(expr, lambda n_: f"t_{n_}", "", "")
        body += em_lines + [f"acc = pl.store(pl.{op}(pl.load(acc, [0, 0], [{R}, {C}]), "
                            f"{value}), [0, 0], acc)"]
        params = [(leaf, Tensor(leaf, (R, C), fp.input_dtype(leaf))) for leaf in leaves]
        params.append(("acc", Tensor("acc", (R, C), dtype, "inout")))
        functions.append(kernel_source(fname, params, body, ["acc"]))
        args = ", ".join([windows[leaf] for leaf in leaves] + [acc.name])
        lines.append(f"    {acc.name} = {fname}({args})")
    else:
        lines.append(f'    {AT}, name_hint="{name}_u"):')
        em_lines, value = emit(expr, lambda n_: windows[n_], "        ", f"{name}_")
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
def scan_case(draw, name: str) -> Case:
    """y[0] = x[0], then y[i] = op(y[i - 1], x[i]) one task per block in a pl.parallel or
    pl.range loop: each task reads the window the previous one wrote (a RAW edge through
    overlapping windows of one tensor), through a pl.at block or a kernel call taking two
    windows of y."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    n = draw(st.integers(2, 4))
    dtype = draw(st.sampled_from(DTYPES))
    op = draw(st.sampled_from(FOLD_FLOAT if dtype in fp.FLOATS else FOLD_INT))
    x = Tensor(f"{name}_x", (n * R, C), dtype)
    y = Tensor(f"{name}_y", (n * R, C), dtype, "out")
    i = f"{name}_i"
    prev = f"{y.name}[{i} * {R} - {R}:{i} * {R}, :]"
    cur_x = window_text(x.name, f"{i} * {R}", None, R, C)
    cur_y = window_text(y.name, f"{i} * {R}", None, R, C)
    lines = [f'{AT}, name_hint="{name}_first"):',
             f"    {y.name}[0:{R}, :] = pl.mul({x.name}[0:{R}, :], 1)",
             f"for {i} in pl.{draw(st.sampled_from(('parallel', 'range')))}(1, {n}):"]
    functions = []
    if draw(st.booleans()):
        fname = f"{name}_k"
        body = [f"a = pl.load(p, [0, 0], [{R}, {C}])", f"b = pl.load(q, [0, 0], [{R}, {C}])",
                f"o = pl.store(pl.{op}(a, b), [0, 0], o)"]
        params = [("p", Tensor("p", (R, C), dtype)), ("q", Tensor("q", (R, C), dtype)),
                  ("o", Tensor("o", (R, C), dtype, "out"))]
        functions.append(kernel_source(fname, params, body, ["o"]))
        lines.append(f"    {fname}({prev}, {cur_x}, {cur_y})")
    else:
        lines.append(f'    {AT}, name_hint="{name}_step"):')
        lines.append(f"        {cur_y} = pl.{op}({prev}, {cur_x})")

    def reference(inputs: dict) -> dict:
        xs = inputs[x.name]
        out = torch.zeros(y.shape, dtype=ref.TORCH[dtype])
        out[:R] = xs[:R]
        for b in range(1, n):
            out[b * R:b * R + R] = ref.binary(op, out[b * R - R:b * R], xs[b * R:b * R + R],
                                             dtype)
        return {y.name: out}

    return Case("scan", name, [x, y], reference, orchestration=lines, functions=functions,
                tolerance={y.name: 0})


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
    y_win, z_win = window_text(y.name, rows, None, R, C), window_text(z.name, rows, None, R, C)
    if draw(st.booleans()):
        for fname, e, src, dst in ((f"{name}_kr", f, "x", "y"), (f"{name}_kw", g, "z", "x")):
            em_lines, value = emit(e, lambda n_: "t", "", "")
            body = [f"t = pl.load({src}, [0, 0], [{R}, {C}])", *em_lines,
                    f"{dst} = pl.store({value}, [0, 0], {dst})"]
            params = [(src, Tensor(src, (R, C), leaf_dtype(e))),
                      (dst, Tensor(dst, (R, C), dtype, "out"))]
            functions.append(kernel_source(fname, params, body, [dst]))
        lines.append(f"{ind}_{name}_yw, {name}_rd = pl.submit({name}_kr, {x.name}, {y_win})")
        lines.append(f"{ind}{x.name}, _{name}_wt = pl.submit({name}_kw, {z_win}, {x.name}, "
                     f"deps=[{name}_rd])")
    else:
        em_lines, value = emit(f, lambda n_: x.name, ind + "    ", f"{name}_r")
        lines.append(f'{ind}{AT}, name_hint="{name}_read") as {name}_rd:')
        lines += em_lines + [f"{ind}    {y_win} = {computed(value, {x.name})}"]
        em_lines, value = emit(g, lambda n_: z_win, ind + "    ", f"{name}_w")
        lines.append(f'{ind}{AT}, name_hint="{name}_write", deps=[{name}_rd]):')
        lines += em_lines + [f"{ind}    {x.name}[:] = {computed(value, {z_win})}"]

    def reference(inputs: dict) -> dict:
        xs = inputs[x.name]
        out = torch.zeros(y.shape, dtype=ref.TORCH[dtype])
        for b in range(n):
            out[b * R:b * R + R] = fp.eval_expr(f, {input_names(f)[0]: xs})
            xs = fp.eval_expr(g, {input_names(g)[0]: inputs[z.name][b * R:b * R + R]})
        return {y.name: out, x.name: xs}

    return Case("deps", name, [x, z, y], reference, orchestration=lines, functions=functions,
                tolerance={x.name: 0, y.name: 0})


def leaf_dtype(e: Expr) -> str:
    return fp.input_dtype(input_names(e)[0])


ATOMIC_DTYPES = ("FP32", "FP16", "INT32", "INT16", "INT8")  # both backends


@st.composite
def splitk_case(draw, name: str) -> Case:
    """A zeroing task, then S tasks adding partial results atomically into one tensor (a
    pl.parallel loop of kernel calls, or one SPMD dispatch): vector partials of x's row
    blocks, or matmuls of K slices.  Small integers make every order give the same sum."""
    S = draw(st.integers(2, 4))
    variant = draw(st.sampled_from(("vector", "matmul", "block")))
    spmd = variant != "block" and draw(st.booleans())
    if variant in ("vector", "block"):
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
    if variant != "matmul":
        em_lines, value = emit(expr, lambda n: "t", "", "")
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
    zero = kernel_source(f"{name}_zero", [("c", Tensor("c", cshape, dtype, "out"))],
                   [f"c = pl.store(pl.full([{cshape[0]}, {cshape[1]}], pl.{dtype}, 0), [0, 0], c)"],
                   ["c"])
    part = kernel_source(f"{name}_part", params, body, ["c"])
    args = ", ".join(t.name for t in inputs)
    lines = [f"{c.name} = {name}_zero({c.name})"]
    functions = [zero, part]
    if variant == "block":
        # Tensor-level: an atomic pl.assemble of each block's partial, one task each.
        functions = [zero]
        window = window_text(inputs[0].name, f"{name}_s * {R}", None, R, C)
        em_lines, value = emit(expr, lambda n_: window, "        ", f"{name}_")
        lines.append(f"for {name}_s in pl.parallel({S}):")
        lines.append(f'    {AT}, name_hint="{name}_part"):')
        lines += em_lines
        lines.append(f"        {c.name} = pl.assemble({c.name}, {computed(value, {window})}, "
                     "[0, 0], atomic=pl.AtomicType.Add)")
    elif spmd:
        lines.append(f"{c.name}, _{name}_tid = pl.spmd_submit({name}_part, {args}, {c.name}, "
                     f"core_num={S})")
    else:
        size = R if variant == "vector" else KC
        lines.append(f"for {name}_s in pl.parallel({S}):")
        lines.append(f"    {c.name} = {name}_part({args}, {c.name}, {name}_s * {size})")

    def reference(values: dict) -> dict:
        if variant != "matmul":
            x = values[inputs[0].name]
            parts = [fp.eval_expr(expr, {leaf.value: x[s * R:(s + 1) * R]}) for s in range(S)]
            total = sum(p.to(torch.float64) for p in parts)
        else:
            total = values[inputs[0].name].to(torch.float64) @ \
                values[inputs[1].name].to(torch.float64)
        return {c.name: total.to(ref.TORCH[dtype])}

    return Case("splitk", name, [*inputs, c], reference, orchestration=lines,
                functions=functions, tolerance={c.name: 0})


SPLIT_MODES = ("UP_DOWN", "LEFT_RIGHT", "NONE")


@st.composite
def _finished_on_the_lanes(draw, exact: bool) -> tuple[Expr, int]:
    """A lane expression of FP32 reading `acc`, the matmul's value, and its tolerance."""
    expr, tol = draw(fp.lane_exprs(draw(st.integers(1, 2)), dtypes=("FP32",),
                                   scratch=(("acc", "FP32"),), exact_only=exact))
    if "acc" not in expr.leaves():
        expr = Expr("binary", "FP32", draw(st.sampled_from(fp.FLOAT_BINARY)),
                    (Expr("input", "FP32", value="acc"), expr))
    return expr, tol


@st.composite
def piped_case(draw, name: str, sources=("FP16", "BF16", "FP32"), widths=(16, 32, 64),
               keep=None) -> Case:
    """One mixed pl.at block asking for the automatic cross-core pipe (pl.split(mode),
    pl.cross_core_slot(slot_num=N), or both): a tensor-level pl.matmul of `sources`
    operands whose value a lane expression finishes on the vector lanes (cube to vector),
    and maybe a second pl.matmul of that value cast to FP16 / BF16 (vector to cube).  N
    (the value's columns) is one of `widths`; `keep(expr)` filters the lane expressions."""
    mode = draw(st.sampled_from((None,) + SPLIT_MODES))
    slots = draw(st.sampled_from((None, 1, 2, 4) if mode else (1, 2, 4)))
    src = draw(st.sampled_from(sources))
    M, K, N = (draw(st.sampled_from(sizes)) for sizes in ((16, 32), (16, 32, 64), widths))
    a, b = Tensor(f"{name}_a", (M, K), src), Tensor(f"{name}_b", (K, N), src)
    half = draw(st.sampled_from((None, "FP16", "BF16")))  # a second matmul's operands
    exprs = _finished_on_the_lanes(exact=bool(half))
    expr, tol = draw(exprs.filter(lambda e: keep(e[0])) if keep else exprs)
    leaves = input_names(expr)
    o = Tensor(f"{name}_o", (M, N), "FP32", "out")
    tensors = [a, b] + [Tensor(f"{name}_{leaf}", (M, N), fp.input_dtype(leaf))
                        for leaf in leaves] + [o]
    options = ([f"pl.split(pl.SplitMode.{mode})"] if mode else []) + (
        [f"pl.cross_core_slot(slot_num={slots})"] if slots else [])
    lines = [f'{AT}, optimizations=[{", ".join(options)}], name_hint="{name}_blk"):',
             f"    {name}_acc = pl.matmul({a.name}, {b.name}, out_dtype=pl.FP32)"]
    em_lines, value = emit(expr, lambda n_: f"{name}_{n_}", "    ", f"{name}_")
    lines += em_lines + [f"    {o.name}[:] = {value}"]
    if half:
        P = draw(st.sampled_from((16, 32)))
        w, o2 = Tensor(f"{name}_w", (N, P), half), Tensor(f"{name}_o2", (M, P), "FP32", "out")
        tensors[-1:-1] = [w]
        tensors.append(o2)
        lines += [f'    {name}_h = pl.cast({value}, pl.{half}, mode="rint")',
                  f"    {o2.name}[:] = pl.matmul({name}_h, {w.name}, out_dtype=pl.FP32)"]

    def reference(values: dict) -> dict:
        env = {leaf: values[f"{name}_{leaf}"] for leaf in leaves}
        env["acc"] = ref.matmul(values[a.name], values[b.name], "FP32")
        v = fp.eval_expr(expr, env)
        out = {o.name: v}
        if half:
            out[o2.name] = ref.matmul(ref.cast(v, "FP32", half, "rint"), values[w.name], "FP32")
        return out

    tolerance = {o.name: tol} | ({o2.name: 0} if half else {})
    return Case("piped", name, tensors, reference, orchestration=lines, tolerance=tolerance)
