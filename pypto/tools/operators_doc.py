"""`pypto operators-doc`: write docs/operators.md from the op registry.

The reference is generated so that it cannot drift from the operators it describes.
"""

from __future__ import annotations

import inspect
from pathlib import Path

DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "operators.md"


def render() -> str:
    """The operators reference as Markdown."""
    from pypto.codegen.environment import render as render_template
    from pypto.debug.torch_runtime import reference
    from pypto.ir.ops import REQUIRED, all_ops

    ops = []
    for name, op in sorted(all_ops().items()):
        params = []
        for p in op.params:
            params.append(p.name if p.default is REQUIRED else f"{p.name}={p.default!r}")
        operands = [p.name for p in op.params if p.kind != "attr"]
        attrs = [p.name for p in op.params if p.kind == "attr"]
        ops.append({
            "name": name,
            "anchor": name,
            "category": op.category,
            "signature": ", ".join(params),
            "doc": " ".join(op.doc.split()),
            "operands": ", ".join(f"`{n}`" for n in operands),
            "attrs": ", ".join(f"`{n}`" for n in attrs),
            "dtypes": ", ".join(sorted(d.name for d in op.dtypes)) or "-",
            "torch_name": reference(name).__name__,
            "torch": torch_semantics(reference(name)),
        })
    return render_template("operators.md.j2", ops=ops)


def torch_semantics(fn) -> str:
    """The first paragraph of a `torch_runtime` function's docstring, on one line."""
    paragraph = inspect.getdoc(fn).split("\n\n")[0]
    return " ".join(paragraph.split())


def add_arguments(parser) -> None:
    from pypto.tools.generated_page import add_page_arguments

    add_page_arguments(parser, DEFAULT_OUTPUT, "registry")


def run(args) -> int:
    from pypto.tools.generated_page import write_or_check

    return write_or_check(render(), args.output, "operators-doc", args.check)
