"""Tile-level cases of the control-flow fuzzer: sections of one shared kernel."""

from __future__ import annotations

import fuzz_programs as fp
import fuzz_reference as ref
import torch
from fuzz_cases import (
    DTYPES,
    FOLD_FLOAT,
    FOLD_INT,
    MATMUL_DTYPES,
    PADS,
    TILE_SHAPES,
    Case,
    Loop,
    Tensor,
    contents_before,
    emit,
    input_names,
    loops,
    padded_tile,
)
from hypothesis import strategies as st

ROW_REDUCTIONS = ("row_sum", "row_max", "row_min")
COL_REDUCTIONS = ("col_sum", "col_max", "col_min")


@st.composite
def tiles_case(draw, name: str) -> Case:
    """A grid of [R, C] tiles over [M, N] inputs walked by nested loops (or one flattened
    loop), each tile computed and stored; edge tiles where a dimension's loop unrolls."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    nr, nc = draw(st.integers(1, 3)), draw(st.integers(1, 2))  # unrolled: at most 6 bodies
    # Shallow expressions: fuzz_programs.py checks deep ones; here the loops matter.
    expr, tolerance = draw(fp.lane_exprs(draw(st.integers(1, 2))))
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
    leaves = input_names(expr)
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
    body, value = emit(expr, lambda n: f"{name}_t_{n}", ind, f"{name}_")
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
        o = contents_before(out, inputs)
        rd = contents_before(red, inputs) if red else None
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


INIT_CONSTANTS = {"float": (0.0, 1.0, -2.5, 0.5), "int": (0, 1, -3, 100)}


@st.composite
def carry_case(draw, name: str) -> Case:
    """Tiles folded into a carried accumulator across one or two loops; optionally an
    inner accumulator reset per outer iteration and folded into the outer one, the op
    chosen per unrolled iteration, and every block's value stored as well."""
    R, C = draw(st.sampled_from(TILE_SHAPES))
    shape = draw(st.sampled_from(("one", "nested", "inner")))
    n1, n2 = draw(st.integers(1, 3)), draw(st.integers(1, 2)) if shape != "one" else 1
    expr, _ = draw(fp.lane_exprs(draw(st.integers(1, 2)), exact_only=True))
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
    leaves = input_names(expr)
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
    init = f"pl.tile.full([{R}, {C}], pl.{dtype}, {const!r})"  # in a pl.at block too
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
    body, value = emit(expr, lambda n: f"{name}_t_{n}", ind, f"{name}_")
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
        e_out = contents_before(each, inputs) if each else None
        r_out = contents_before(rows_out, inputs) if rows_out else None
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
        o = contents_before(out, inputs)
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
        return {out.name: ref.matmul(lhs, rhs, dtype)}

    return Case("matmul", name, [a, b, out], reference, kernel=lines, tolerance={out.name: 0})
