"""`ProgramTemplate`: a `@pl.program` whose entry has `pl.dynamic` dimensions."""

from __future__ import annotations

from ..ir.errors import TypeCheckError


class ProgramTemplate:
    """A `@pl.program` class whose entry function has `pl.dynamic` dimensions.

    Its dimensions are bound by the tensors of a call, so the class is parsed once per
    set of argument shapes (`specialize_for`); `pypto.runtime.run(template, *args)` does
    that, then compiles and runs the specialised Program.  `ir.compile` needs a Program:
    compile `template.specialize_for(*args)`.
    """

    def __init__(self, name: str, source: str, filename: str, namespace: dict, line_offset: int):
        self.name = name
        self._source = source
        self._filename = filename
        self._namespace = namespace
        self._line_offset = line_offset
        self._programs: dict = {}

    def specialize_for(self, *args):
        """The Program for these arguments (torch tensors and Python numbers), parsed once
        per distinct argument signature."""
        from .jit import _arg_type
        from .parser import parse_program

        types = []
        for i, value in enumerate(args):
            t = _arg_type(value)
            if t is None:
                raise TypeCheckError(f"argument {i} of program `{self.name}` is a "
                                     f"{type(value).__name__}; pass torch tensors and Python "
                                     "numbers")
            types.append(t)
        key = tuple(types)
        if key not in self._programs:
            self._programs[key] = parse_program(self._source, self._filename, self._namespace,
                                                self._line_offset, entry_args=types)
        return self._programs[key]

    def __repr__(self) -> str:
        return f"<pl.program {self.name} (pl.dynamic entry: specialised per call)>"


__all__ = ["ProgramTemplate"]
