"""Declaring a kernel spec: the kernel, its named variants, inputs, reference and tolerance."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.comparison import Tolerance
from pypto.golden.record import GoldenCase
from pypto.ir.diagnostics import PERF_HINTS, DiagnosticCheck
from pypto.ir.dtypes import DataType, from_name, from_torch
from pypto.ir.errors import PyptoError, Span
from pypto.ir.types import Direction, ScalarType, TensorType

_KERNEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIANT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


class SpecError(PyptoError):
    """A kernel spec is malformed; the message names the spec's file and line."""


# --------------------------------------------------------------------------- arguments


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument of one variant: dtype and static shape."""

    dtype: DataType
    shape: tuple[int, ...]

    def ir_type(self) -> TensorType:
        """The IR type the kernel is specialised to."""
        return TensorType(self.shape, self.dtype)

    def __str__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


@dataclass(frozen=True)
class ScalarArg:
    """A scalar argument of one variant; its value comes from the input generator."""

    dtype: DataType
    shape = None  # SpecRNG tells scalars from tensors by this

    def ir_type(self) -> ScalarType:
        """The IR type the kernel is specialised to."""
        return ScalarType(self.dtype)

    def __str__(self) -> str:
        return f"{self.dtype.name} scalar"


def dtype_of(value: Any) -> DataType:
    """A pypto dtype from `pl.FP32`, "fp32"/"FP32", "float32" or `torch.float32`."""
    if isinstance(value, DataType):
        return value
    found = None
    if isinstance(value, str):
        with contextlib.suppress(KeyError):
            found = from_name(value)
    if found is None:
        try:
            found = from_torch(value)
        except TypeError:
            names = ", ".join(d.name.lower() for d in DataType)
            raise ValueError(f"unknown dtype {value!r}; use one of {names}") from None
    return found


def tensor(dtype: Any, shape: Sequence[int]) -> TensorArg:
    """A tensor argument: `spec.tensor("fp32", [128, 128])` (the tuple form is the same)."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(f"shape should be a list of sizes, got {shape!r}")
    dims = tuple(shape)
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise ValueError(f"shape should be a non-empty list of positive sizes, got {list(dims)}")
    return TensorArg(dtype_of(dtype), dims)


def scalar(dtype: Any) -> ScalarArg:
    """A scalar argument: `spec.scalar("fp32")`; the input generator gives its value."""
    return ScalarArg(dtype_of(dtype))


def _argument(value: Any) -> TensorArg | ScalarArg:
    if isinstance(value, (TensorArg, ScalarArg)):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return tensor(*value)
    raise ValueError(
        f"{value!r} is not an argument declaration: write (dtype, [d0, d1, ...]) for a tensor "
        "or spec.scalar(dtype) for a scalar"
    )


class Variant:
    """One named specialisation of a kernel: every parameter's dtype and shape.

    The input generator receives it: `v.a` (or `v["a"]`) is the declaration of parameter
    `a`, to hand to `SpecRNG` draws; `v.name` is the variant's name.
    """

    def __init__(self, name: str, args: Mapping[str, TensorArg | ScalarArg]) -> None:
        self.name = name
        self.args = dict(args)

    def __getattr__(self, item: str) -> TensorArg | ScalarArg:
        args = self.__dict__.get("args", {})
        if item in args:
            return args[item]
        raise AttributeError(f"variant {self.__dict__.get('name')!r} has no parameter {item!r}")

    def __getitem__(self, item: str) -> TensorArg | ScalarArg:
        return self.args[item]

    def ir_types(self) -> list:
        """IR types of the parameters, in order."""
        return [arg.ir_type() for arg in self.args.values()]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"Variant({self.name!r}, {args})"


# --------------------------------------------------------------------------- the spec


class Kernel:
    """A kernel spec: what `scons` builds and checks for one `@pl.jit` kernel.

    kernel: the `@pl.jit` (or `@pl.jit.incore`) function.
    variants: name → {parameter: (dtype, shape) | spec.scalar(dtype)}; every parameter
        of the kernel, in any order.  Names become directories: letters, digits, `_.+-`.
    inputs: `inputs(rng, v) -> {name: tensor | number}` for every parameter the kernel
        reads (In and InOut), drawn from the spec-owned `rng` (a `SpecRNG`).
    reference: `reference(**inputs)` on copies of the inputs, in torch on the CPU and in
        higher precision; returns the outputs (Out and InOut) as one tensor, a tuple in
        parameter order or a dict.  Each is rounded once to its output's dtype.
    tolerance: `Exact(reason)` or `Close(rtol, atol, reason)` for every output, a dict of
        them by output name, or a function of the variant returning either (when the
        right tolerance depends on the variant's dtypes).
    platforms: the platforms the kernel is built for (default: every platform).
    name: the kernel's name in the library (default: the function's name).
    accepted_hints: {perf-hint check: reason} for performance hints the variants trigger
        on purpose (e.g. a model's head dimension that no tiling can widen).  The library
        build records them in each artifact's `report/perf_hints.log` as always but does
        not print them; any other hint, and every warning, still prints.
    """

    def __init__(
        self,
        kernel: Any,
        *,
        variants: Mapping[str, Mapping[str, Any]],
        inputs: Callable[[Any, Variant], Mapping[str, Any]],
        reference: Callable[..., Any],
        tolerance: Tolerance | Mapping[str, Tolerance] | Callable[[Variant], Any],
        platforms: Sequence[str] | None = None,
        name: str | None = None,
        accepted_hints: Mapping[Any, str] | None = None,
    ) -> None:
        caller = sys._getframe(1)
        self.where = Span(caller.f_code.co_filename, caller.f_lineno)
        if not getattr(kernel, "__pypto_kernel__", False):
            raise self.error(
                f"spec.Kernel takes a @pl.jit or @pl.jit.incore function, got {kernel!r}"
            )
        self.kernel = kernel
        self.name = name if name is not None else kernel.__name__
        if not isinstance(self.name, str) or not _KERNEL_NAME.fullmatch(self.name):
            raise self.error(f"kernel name {self.name!r} must be a Python identifier")
        if not callable(inputs) or not callable(reference):
            raise self.error("inputs and reference must be functions")
        self.make_inputs = inputs
        self.reference = reference
        self.tolerance = self._checked_tolerance(tolerance)
        self.platforms = self._checked_platforms(platforms)
        self.variants = self._checked_variants(variants)
        self.accepted_hints = self._checked_hints(accepted_hints or {})
        self._programs: dict[str, Any] = {}

    # ------------------------------------------------------------------ checks
    def error(self, message: str, hint: str | None = None) -> SpecError:
        """A SpecError at this spec's declaration."""
        return SpecError(f"spec {getattr(self, 'name', '?')!r}: {message}", self.where, hint)

    def _checked_tolerance(self, tolerance: Any) -> Any:
        if callable(tolerance) and not isinstance(tolerance, Tolerance):
            return tolerance  # checked per variant, in `tolerances`
        policies = tolerance.values() if isinstance(tolerance, Mapping) else [tolerance]
        for policy in policies:
            if not isinstance(policy, Tolerance) or not policy.reason:
                raise self.error(
                    f"tolerance {policy!r} is not a policy with a reason",
                    hint="use spec.Exact(reason) or spec.Close(rtol, atol, reason)",
                )
        return dict(tolerance) if isinstance(tolerance, Mapping) else tolerance

    def _checked_hints(self, hints: Mapping[Any, str]) -> dict[DiagnosticCheck, str]:
        if not isinstance(hints, Mapping):
            raise self.error("accepted_hints must be a dict: perf-hint check → reason")
        names = ", ".join(sorted(c.name for c in PERF_HINTS))
        checked = {}
        for check, reason in hints.items():
            found = check if isinstance(check, DiagnosticCheck) else \
                DiagnosticCheck.__members__.get(str(check))
            if found not in PERF_HINTS:
                raise self.error(f"accepted_hints names {check!r}, which is not a perf hint; "
                                 f"perf hints: {names}",
                                 hint="warnings about correctness cannot be accepted: fix them")
            if not isinstance(reason, str) or not reason.strip():
                raise self.error(f"accepted hint {found.name} needs a reason")
            checked[found] = reason
        return checked

    def _checked_platforms(self, platforms: Sequence[str] | None) -> tuple[str, ...] | None:
        if platforms is None:
            return None
        from pypto.platform import platform_names

        known = platform_names()
        if isinstance(platforms, str):
            platforms = [platforms]
        unknown = [p for p in platforms if p not in known]
        if unknown or not platforms:
            raise self.error(f"unknown platforms {unknown}; choose from {', '.join(known)}")
        return tuple(dict.fromkeys(platforms))

    def _checked_variants(self, variants: Mapping[str, Mapping[str, Any]]) -> dict[str, Variant]:
        if not isinstance(variants, Mapping) or not variants:
            raise self.error("variants must be a non-empty dict: name → {parameter: declaration}")
        params = list(inspect.signature(self.kernel.fn).parameters)
        checked = {}
        for variant_name, args in variants.items():
            if not isinstance(variant_name, str) or not _VARIANT_NAME.fullmatch(variant_name):
                raise self.error(
                    f"variant name {variant_name!r} must be letters, digits and _.+- (it names "
                    "a directory)"
                )
            if not isinstance(args, Mapping):
                raise self.error(f"variant {variant_name!r} must map parameter names to types")
            missing = [p for p in params if p not in args]
            extra = [a for a in args if a not in params]
            if missing or extra:
                raise self.error(
                    f"variant {variant_name!r} must declare exactly the parameters of "
                    f"`{self.kernel.__name__}` {params}"
                    + (f"; missing {missing}" if missing else "")
                    + (f"; unknown {extra}" if extra else "")
                )
            try:
                declared = {p: _argument(args[p]) for p in params}
            except (ValueError, TypeError) as exc:
                raise self.error(f"variant {variant_name!r}: {exc}") from None
            checked[variant_name] = Variant(variant_name, declared)
        return checked

    # ------------------------------------------------------------------ building
    def variant(self, name: str) -> Variant:
        """The variant called `name`."""
        try:
            return self.variants[name]
        except KeyError:
            raise self.error(f"has no variant {name!r}; it has {list(self.variants)}") from None

    def program(self, variant: str) -> Any:
        """The post-parse IR program of `variant` (parsed once per variant)."""
        program = self._programs.get(variant)
        if program is None:
            program = self.kernel.frontend_for_types(self.variant(variant).ir_types())
            self._programs[variant] = program
        return program

    def ir_digest(self, variant: str) -> str:
        """sha256 of the printed post-parse IR: what decides whether the kernel rebuilds."""
        return hashlib.sha256(self.program(variant).as_python().encode()).hexdigest()

    def directions(self, variant: str) -> dict[str, Direction]:
        """Each parameter's direction, as the parsed kernel declares it."""
        entry = self.program(variant).entry_function
        return {p.var.name: p.direction for p in entry.params}

    def golden_case(self, variant: str) -> GoldenCase:
        """The plain-data case `pypto.golden.record_golden` makes a golden from."""
        declared = self.variant(variant)
        directions = self.directions(variant)
        inputs = tuple(n for n in declared.args if directions[n] is not Direction.Out)
        outputs = tuple(n for n in declared.args if directions[n] is not Direction.In)
        return GoldenCase(
            kernel=self.name,
            variant_name=variant,
            variant=declared,
            args=declared.args,
            inputs=inputs,
            outputs=outputs,
            make_inputs=self.make_inputs,
            reference=self.reference,
            tolerances=self.tolerances(variant, outputs),
            where=f"{self.where}: spec {self.name!r} variant {variant!r}",
        )

    def tolerances(self, variant: str, outputs: Sequence[str]) -> dict[str, Tolerance]:
        """The policy of every output of `variant`; a dict must name exactly the outputs."""
        tolerance = self.tolerance
        if callable(tolerance) and not isinstance(tolerance, Tolerance):
            tolerance = self._checked_tolerance(tolerance(self.variant(variant)))
            if callable(tolerance) and not isinstance(tolerance, Tolerance):
                raise self.error(f"the tolerance function returned another function for "
                                 f"variant {variant!r}")
        if isinstance(tolerance, Tolerance):
            return {name: tolerance for name in outputs}
        if set(tolerance) != set(outputs):
            raise self.error(
                f"tolerance names {sorted(tolerance)}, the kernel's outputs are {list(outputs)}"
            )
        return dict(tolerance)

    def __repr__(self) -> str:
        return f"spec.Kernel({self.name!r}, variants={list(self.variants)}, at {self.where})"
