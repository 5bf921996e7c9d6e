"""The IR is traversed through `pypto.ir.visitor` only: no pass, check or code generator
walks statement bodies by hand.

A hand-written walk is where a statement nested one level deeper than its author thought
gets missed (OutlineIncoreScopes once missed writes two loops down).  The check reads the
source: a branch's bodies (`then_body`, `else_body`) may be read only by a `visit_If` /
`mutate_If` method, which the visitor calls wherever the `if` is, and no function both
reads a `.body` and calls itself (a recursive walk of loop bodies).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BRANCH_BODIES = {"then_body", "else_body"}
ALLOWED_METHODS = {"visit_If", "mutate_If"}
# Files that walk trees other than the IR.
OTHER_TREES = {
    "pypto/codegen/pipe_sync.py": "the device kernel model (Loop nodes), after codegen",
    "pypto/language/parser.py": "the user's Python syntax tree (ast.If, ast.For)",
    "pypto/language/control_flow.py": "the user's Python syntax tree",
}


def hand_walks(root: Path) -> list[str]:
    """`file:line: function` for every read of a branch body outside a visit_If or
    mutate_If method, and every function that reads a `.body` and calls itself, in the
    pypto package under `root` (the visitor itself and the files of OTHER_TREES aside)."""
    found = []
    for path in sorted((root / "pypto").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "pypto/ir/visitor.py" or rel in OTHER_TREES:
            continue
        tree = ast.parse(path.read_text(), filename=rel)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if _recurses_over_bodies(fn):
                found.append(f"{rel}:{fn.lineno}: {fn.name}")
            if fn.name in ALLOWED_METHODS:
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Attribute) and node.attr in BRANCH_BODIES and \
                        isinstance(node.ctx, ast.Load) and _owner(tree, node) is fn:
                    found.append(f"{rel}:{node.lineno}: {fn.name}")
    return found


def _recurses_over_bodies(fn: ast.FunctionDef) -> bool:
    reads_body = any(isinstance(n, ast.Attribute) and n.attr == "body"
                     and isinstance(n.ctx, ast.Load) for n in ast.walk(fn))
    calls_itself = any(
        isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Name) and n.func.id == fn.name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == fn.name
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"))
        for n in ast.walk(fn))
    return reads_body and calls_itself


def _owner(tree: ast.AST, target: ast.AST) -> ast.AST | None:
    """The innermost function that holds `target`."""
    owner = None
    functions = [fn for fn in ast.walk(tree)
                 if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for fn in functions:
        holds = any(n is target for n in ast.walk(fn))
        if holds and (owner is None or any(n is fn for n in ast.walk(owner))):
            owner = fn
    return owner


def test_no_pass_walks_the_ir_by_hand():
    assert hand_walks(ROOT) == []


def test_a_planted_hand_walk_is_reported(tmp_path):
    for path in (ROOT / "pypto").rglob("*.py"):
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    target = tmp_path / "pypto/passes/diagnostics.py"
    text = target.read_text()
    planted = ("\n\ndef _walk(body):\n    for s in body:\n        if hasattr(s, 'cond'):\n"
               "            yield from _walk(s.then_body + s.else_body)\n")
    target.write_text(text + planted)
    line = text.count("\n") + 6
    assert hand_walks(tmp_path) == [f"pypto/passes/diagnostics.py:{line}: _walk"] * 2
