"""Precision-debugging tools: run the IR on torch, bisect passes, triage mismatches."""

from .torch_codegen import load_entry, torch_codegen
from .validate import validate_pass_dumps, validate_pass_ir_codegen_results

__all__ = ["torch_codegen", "load_entry", "validate_pass_dumps",
           "validate_pass_ir_codegen_results"]
