"""`ProgramTemplate`: a `@pl.program` parsed per call (`pl.dynamic` dimensions, or elements
of its inputs used as constants)."""

from __future__ import annotations

from ..ir.errors import TypeCheckError
from ..ir.nodes import Assign, Call, ExprStmt


class ProgramTemplate:
    """A `@pl.program` class whose entry function has `pl.dynamic` dimensions, or uses
    elements of its input tensors as constants (tensor extents read from a configuration
    tensor).

    Its dimensions (and those elements) are bound by the tensors of a call, so the class
    is parsed once per set of argument shapes and element values (`specialize_for`);
    `pypto.runtime.run(template, *args)` does that, then compiles and runs the specialised
    Program.  `ir.compile` needs a Program: compile `template.specialize_for(*args)`.
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
        per distinct argument signature -- and, for a program that uses elements of its
        input tensors as constants, per distinct values of those elements (the program
        checks them when it runs: pl.expect_value)."""
        from .jit import _arg_type
        from .parser import DynamicProgram, parse_program

        types = []
        for i, value in enumerate(args):
            t = _arg_type(value)
            if t is None:
                raise TypeCheckError(f"argument {i} of program `{self.name}` is a "
                                     f"{type(value).__name__}; pass torch tensors and Python "
                                     "numbers")
            types.append(t)
        key = tuple(types)
        for program in self._programs.get(key, ()):
            if all(_element(args, program, param, indices) == value
                   for param, indices, value in expected_values(program)):
                return program
        try:
            program = parse_program(self._source, self._filename, self._namespace,
                                    self._line_offset, entry_args=types, by_value=True)
        except DynamicProgram as exc:
            if not exc.by_value:
                raise
            program = parse_program(self._source, self._filename, self._namespace,
                                    self._line_offset, entry_args=types, entry_values=list(args))
        self._programs.setdefault(key, []).append(program)
        return program

    def __repr__(self) -> str:
        return f"<pl.program {self.name} (pl.dynamic entry: specialised per call)>"


def expected_values(program) -> list[tuple[str, tuple, object]]:
    """(parameter, indices, value) of each input element the program was specialised for:
    the `pl.expect_value` checks its entry starts with (parser._with_expected_values)."""
    entry = program.function(program.entry)
    reads = {s.targets[0].name: s.value for s in entry.body
             if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "read"}
    out = []
    for s in entry.body:
        if isinstance(s, ExprStmt) and isinstance(s.value, Call) and \
                s.value.op == "expect_value":
            read = reads[s.value.args[0].name]
            tensor, indices = read.args
            out.append((tensor.name, tuple(i.value for i in indices.items),
                        s.value.attr("value")))
    return out


def _element(args, program, param: str, indices: tuple):
    entry = program.function(program.entry)
    position = [p.var.name for p in entry.params].index(param)
    return args[position][indices].item()


__all__ = ["ProgramTemplate", "expected_values"]
