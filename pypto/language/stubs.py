"""What a kernel body calls that the parser recognises: one `OpStub` per registry
operator (`pl.add`, `pl.tile.adds`) and one `DslBuiltin` per parser construct (`pl.at`,
`pl.range`).  Calling one from Python is an error: kernel bodies are parsed, never run.

Here, below the parser, so that the vocabulary and the parser's syntax mixins name them
without importing the parser, which imports them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpStub:
    """`pl.add` and friends: names the parser recognises; calling one from Python is an error.

    `name` is the registry operator.  The level-specific spellings of pl.tile / pl.tensor
    (language/namespaces.py) set `level` ("tile" / "tensor": the operands must be of that
    kind), `scalar` (a scalar-operand spelling such as `pl.tile.adds`: the second operand
    is a scalar) and `spelling` (the name as written, for messages).
    """

    name: str
    level: str | None = None
    scalar: bool = False
    spelling: str = ""

    @property
    def written(self) -> str:
        return f"pl.{self.spelling or self.name}"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.written} can only be used inside a @pl.jit / @pl.jit.incore function or a "
            "@pl.program: those bodies are compiled, not executed as Python"
        )


@dataclass(frozen=True)
class DslBuiltin:
    """`pl.at`, `pl.range`, `pl.const`, ...: parser-level constructs."""

    name: str

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"pl.{self.name} is only meaningful inside a pypto kernel body")


@dataclass(frozen=True)
class RefusedName(DslBuiltin):
    """An upstream operator this project refuses (language/namespaces.py REFUSED): a call
    of it is an error at its line that says why."""

    why: str = ""
