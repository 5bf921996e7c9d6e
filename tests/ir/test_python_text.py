"""nodes.python_text: the nodes print through the forms the printer registers, without
importing the printer (which reads the nodes)."""

import pytest

from pypto.ir import printer
from pypto.ir.errors import InternalError
from pypto.ir.nodes import Function, Program, Var, python_text
from pypto.ir.types import INDEX


def test_programs_and_functions_print_through_the_printers_forms():
    assert python_text.dispatch(Program) is printer.print_program
    assert python_text.dispatch(Function) is printer.print_function


def test_a_node_the_printer_has_no_form_for_is_an_internal_error():
    with pytest.raises(InternalError, match="the IR printer has no form for a Var"):
        python_text(Var("i", INDEX))
