"""`@pl.jit` and `@pl.jit.incore`: specialise on the call's tensors, build, load, run."""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import operator
import textwrap
from collections import ChainMap
from dataclasses import replace

from ..ir.dtypes import DataType, from_torch
from ..ir.errors import ParseError, Span, TypeCheckError, api_boundary, user_frame
from ..ir.names import fresh_name
from ..ir.nodes import Assign, ExprStmt, FuncCall, Function, Param, Program, Return, Var
from ..ir.ops.task_arrays import expect_value
from ..ir.types import FunctionType, Level, ScalarType, TensorType, TupleType, same_value_type
from .parser import Callee, FunctionParser, SourceInfo, parse_signature
from .typing import RUNTIME

_COMPILE_KEYS = ("platform", "dump_passes", "diagnostic_phase", "disabled_diagnostics",
                 "compile_profiling")
_COMPILE_FIELDS = operator.attrgetter(*_COMPILE_KEYS)


def _arg_type(value):
    """The IR type a Python argument specialises a parameter to (None: not a pypto value)."""
    import torch

    if isinstance(value, torch.Tensor):
        dtype = from_torch(value.dtype)  # a float4_e2m1fn_x2 holds two FP4 elements
        return TensorType(dtype.logical_shape(value.shape), dtype)
    if isinstance(value, bool):
        return ScalarType(DataType.BOOL)
    if isinstance(value, int):
        return ScalarType(DataType.INT64)
    if isinstance(value, float):
        return ScalarType(DataType.FP32)
    return None


class JitFunction:
    """A kernel function whose body is parsed to IR on first use per specialisation."""

    __pypto_kernel__ = True

    def __init__(self, fn, func_type: FunctionType, scope: dict | None = None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.func_type = func_type
        # the defining function's locals when the decorator ran: names its annotations
        # read (Python evaluates those in the enclosing scope, so they are no closure)
        self._scope = scope or {}
        self._source = None
        self._constants = None  # indices of specialisation-constant parameters, once read
        self._scalars: dict | None = None  # see _scalar_params
        self._loaded: dict = {}

    # ------------------------------------------------------------------ source
    def _parsed_source(self):
        if self._source is None:
            try:
                lines, first = inspect.getsourcelines(self.fn)
                file = inspect.getsourcefile(self.fn) or "<unknown>"
            except (OSError, TypeError):
                raise ParseError(
                    f"cannot read the source of `{self.fn.__name__}`: pypto parses kernel "
                    "bodies, so they must live in a file (not an interactive prompt)"
                ) from None
            text = textwrap.dedent("".join(lines))
            tree = ast.parse(text)
            fndef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                                 ast.AsyncFunctionDef)))
            # Decorated bodies are never executed, so the dedented text keeps line numbers.
            self._source = (fndef, SourceInfo(file, first - 1))
        return self._source

    def _namespace(self) -> ChainMap:
        closure = inspect.getclosurevars(self.fn)
        return ChainMap(dict(closure.nonlocals), self._scope, self.fn.__globals__,
                        vars(builtins))

    def _in_signature(self, span: Span | None) -> bool:
        """Does `span` point into the `def` line(s), not the body?"""
        fndef, info = self._parsed_source()
        first, body = fndef.lineno + info.line_offset, fndef.body[0].lineno + info.line_offset
        return span is not None and span.file == info.file and first <= span.line < body

    def _parse(self, arg_types: list, resolve, constants: dict | None = None) -> Function:
        fndef, info = self._parsed_source()
        parser = FunctionParser(info, self._namespace(), self.func_type, resolve)
        sig = parse_signature(fndef, parser, arg_types, skip_self=False)
        return parser.parse(fndef, sig, constants)

    def _scalar_params(self) -> dict[str, tuple[int, bool]]:
        """The scalar parameters: name -> (index, specialised by default).  One annotated
        with a bare dtype (`vlen: pl.INDEX`) is a specialisation constant of an entry, as in
        upstream's @pl.jit (each value compiles its own program; the body reads the value
        as a constant), unless its default is pl.RUNTIME; a `pl.Scalar[...]` one is a
        run-time value (one artifact for every value)."""
        if self._scalars is None:
            fndef, info = self._parsed_source()
            parser = FunctionParser(info, self._namespace(), self.func_type, None)
            args = fndef.args.args
            runtime = {a.arg for a, d in zip(args[len(args) - len(fndef.args.defaults):],
                                             fndef.args.defaults, strict=True)
                       if parser.static(d) is RUNTIME}
            self._scalars = {}
            for i, a in enumerate(args):
                annotation = parser.static(a.annotation) if a.annotation is not None else None
                if isinstance(annotation, (DataType, ScalarType)):
                    self._scalars[a.arg] = (i, isinstance(annotation, DataType)
                                            and a.arg not in runtime)
        return self._scalars

    def _constant_params(self) -> tuple[int, ...]:
        """Indices of the parameters specialised by default (see `_scalar_params`)."""
        if self._constants is None:
            self._constants = tuple(i for i, fixed in self._scalar_params().values() if fixed)
        return self._constants

    def _constant_values(self, args, scalars: dict | None = None) -> dict:
        """The specialisation constants of a call or a compile: the default-specialised
        parameters among `args`, then `scalars` (upstream's `compile(n=128)`: a value
        specialises the parameter, pl.RUNTIME leaves it a run-time value)."""
        fndef, info = self._parsed_source()
        constants = {fndef.args.args[i].arg: args[i] for i in self._constant_params()
                     if i < len(args)}
        params = self._scalar_params()
        for name, value in (scalars or {}).items():
            if name not in params:  # an unexpected keyword, as Python reports one
                raise TypeError(f"{info.span(fndef)}: `{name}=` names no scalar parameter of "
                                f"`{self.__name__}` (its scalar parameters: "
                                f"{', '.join(params) or 'none'})")
            if params[name][0] < len(args):
                raise TypeCheckError(f"`{name}` is given twice: as an argument and as "
                                     f"`{name}=`", info.span(fndef.args.args[params[name][0]]))
            if value is RUNTIME:
                constants.pop(name, None)
            elif isinstance(value, (bool, int, float)):
                constants[name] = value
            else:
                raise TypeCheckError(
                    f"`{name}=` takes a Python number (the value to specialise for) or "
                    f"pl.RUNTIME, got {type(value).__name__}",
                    info.span(fndef.args.args[params[name][0]]))
        return constants

    # ------------------------------------------------------------------ IR
    def _arg_types(self, args) -> list:
        fndef, info = self._parsed_source()
        types = []
        for i, value in enumerate(args):
            try:
                t = _arg_type(value)
            except TypeError as exc:
                names = [a.arg for a in fndef.args.args]
                where = fndef.args.args[i] if i < len(names) else fndef
                raise TypeCheckError(
                    f"argument {names[i] if i < len(names) else i}: {exc}",
                    info.span(where),
                    hint="supported dtypes: " + ", ".join(
                        d.name for d in DataType if d.value.torch_name),
                ) from None
            if t is None:
                raise TypeCheckError(
                    f"argument {i} of `{self.__name__}` is a {type(value).__name__}; pass torch "
                    "tensors and Python numbers",
                    info.span(fndef),
                )
            if isinstance(t, TensorType) and 0 in t.shape:
                names = [a.arg for a in fndef.args.args]
                raise TypeCheckError(
                    f"argument {names[i] if i < len(names) else i} is an empty tensor "
                    f"{list(t.shape)}; a kernel runs on tensors with at least one element",
                    info.span(fndef.args.args[i] if i < len(names) else fndef),
                    hint="skip the call when there is nothing to compute",
                )
            types.append(t)
        return types

    def _check_entry(self) -> None:
        """Inline and opaque helpers are spliced into their callers: not programs."""
        if self.func_type in (FunctionType.Inline, FunctionType.Opaque):
            fndef, info = self._parsed_source()
            kind = "inline" if self.func_type is FunctionType.Inline else "opaque"
            raise ParseError(
                f"`{self.__name__}` is an {kind} helper (@pl.jit.{kind}), spliced into the "
                "functions that call it: it is not a program to run, compile or lower",
                info.span(fndef), hint=f"call `{self.__name__}` from a @pl.jit function and "
                "run that")

    @api_boundary
    def frontend(self, *args, **scalars) -> Program:
        """The parsed (pre-pass) program specialised to these arguments; without
        arguments, a kernel whose parameters are all fully annotated needs none.  Keyword
        scalars specialise a scalar parameter to a value, or leave it a run-time value
        (`n=pl.RUNTIME`): see `_constant_values`."""
        self._check_entry()
        constants = self._constant_values(args, scalars)
        return build_program(self, self._arg_types(args) if args else None, constants)

    @api_boundary
    def frontend_for_types(self, arg_types) -> Program:
        """The parsed (pre-pass) program for IR argument types (`TensorType`, `ScalarType`)
        instead of argument values: what a kernel spec builds from, without torch."""
        self._check_entry()
        return build_program(self, list(arg_types))

    @api_boundary
    def lower(self, *args, config=None, **scalars) -> Program:
        """The program after every pass, for the config's platform (no artifacts); the
        compiler's diagnostics are reported as a compile reports them."""
        from ..compiler import run_pipeline
        from ..ir.diagnostics import emit
        from ..platform import get_platform

        options = _options(_config(config))
        lowered = run_pipeline(self.frontend(*args, **scalars), get_platform(options.platform),
                               options)
        emit(lowered.diagnostics)
        return lowered.program

    @api_boundary
    def compile(self, *args, config=None, **scalars):
        """Build (or fetch from the cache) the artifact for these arguments; keyword
        scalars as upstream's: `compile(n=128)` specialises `n` (the artifact checks, when
        it runs, that it is passed 128), `compile(n=pl.RUNTIME)` leaves it a run-time
        value."""
        from ..compiled import CompiledProgram
        from ..compiler import build_program as build

        config = _config(config)
        return CompiledProgram(build(self.frontend(*args, **scalars), _options(config)))

    @api_boundary
    def __call__(self, *args, config=None):
        """Run on the config's platform; outputs land in the caller's tensors.

        A warm call (a specialisation seen before) costs a dict lookup on a key built
        from the arguments' shapes and dtypes and the config's compile fields as they
        are, then the run: no parsing, hashing or manifest reading (see `_call_key`).
        """
        config = _config(config)
        key = tuple(map(_spec, args)), _COMPILE_FIELDS(config)
        constants = self._constants if self._constants is not None else self._constant_params()
        if constants:
            key += tuple(args[i] for i in constants if i < len(args)),
        try:
            loaded = self._loaded.get(key)
        except TypeError:  # a list or set among the compile fields: `_call_key` sorts it
            key = _call_key(args, config) + tuple(args[i] for i in constants if i < len(args))
            loaded = self._loaded.get(key)
        if loaded is None:
            from ..runtime import load_artifact

            loaded = load_artifact(self.compile(*args, config=config).output_dir)
            self._loaded[key] = loaded
        return loaded.run(args, config)


def _call_key(args, config) -> tuple:
    """The in-memory cache key of a call: each argument's specialisation plus the config
    fields that change what gets compiled."""
    return tuple(map(_spec, args)), tuple(map(_hashable, _COMPILE_FIELDS(config)))


def _spec(value):
    # torch.Size and torch.dtype hash as they are: no tuple or string built per call.
    shape = getattr(value, "shape", None)
    if shape is not None:
        return shape, value.dtype
    return type(value)


def _hashable(value):
    if isinstance(value, (set, frozenset, list)):
        return tuple(sorted(map(str, value)))
    return value


_DEFAULT_CONFIG = None


def _config(config):
    global _DEFAULT_CONFIG
    if config is None and _DEFAULT_CONFIG is not None:
        return _DEFAULT_CONFIG  # the warm path: no import statement, no isinstance
    from ..runtime import RunConfig

    if config is None:
        # One shared default: building a RunConfig checks the platform against build_rules/
        # (~70 µs), more than the rest of a warm call.  Nothing mutates it.
        if _DEFAULT_CONFIG is None:
            _DEFAULT_CONFIG = RunConfig()
        return _DEFAULT_CONFIG
    if not isinstance(config, RunConfig):
        raise TypeError(f"config must be a pypto.runtime.RunConfig, got {type(config).__name__}")
    return config


def _options(config):
    from ..compiler import CompileOptions

    config.check_single_device()
    return CompileOptions(
        platform=config.platform,
        dump_passes=config.dump_passes,
        diagnostic_phase=config.diagnostic_phase,
        disabled_diagnostics=frozenset(config.disabled_diagnostics or ()),
        profiling=config.compile_profiling,
    )


def build_program(entry: JitFunction, arg_types: list, constants: dict | None = None) -> Program:
    """Parse `entry` and every kernel it calls into one program; `constants` are the
    entry's specialisation-constant parameters with their values."""
    callees: dict[str, Function] = {}
    specializations: dict[str, list[Function]] = {}  # per kernel, in the order first called

    def resolve(ref, args, span: Span) -> Callee:
        types = [a.type for a in args]
        _check_kernel_call(ref, types, span)
        seen = specializations.setdefault(ref.__name__, [])
        fn = next((f for f in seen if all(map(same_value_type, types,
                                               (p.var.type for p in f.params)))), None)
        if fn is None and seen:
            # A kernel whose parameters leave shapes open serves each call's shapes: one
            # function per specialisation.  Annotations that do not fit are reported at
            # the call by the parser, against the first one.
            try:
                fn = ref._parse(types, resolve)
                taken = callees.keys() | {entry.__name__}
                fn = replace(fn, name=fresh_name(ref.__name__, taken, first=1))
            except TypeCheckError as exc:
                if not ref._in_signature(exc.span):
                    raise  # the body does not fit these shapes: its own message
                fn = seen[0]
            else:
                seen.append(fn)
                callees[fn.name] = fn
        elif fn is None:
            fn = ref._parse(types, resolve)
            if fn.name in callees:  # taken by another kernel's specialisation
                taken = callees.keys() | {entry.__name__}
                fn = replace(fn, name=fresh_name(fn.name, taken, first=1))
            seen.append(fn)
            callees[fn.name] = fn
        return Callee(fn.name, fn.params, fn.returns)

    if entry.func_type is FunctionType.InCore:
        kernel = entry._parse(arg_types, resolve, constants)
        orchestration = _guarded(_direct_call(kernel), constants)
        return Program(entry.__name__, (kernel, orchestration), orchestration.name)
    fn = _guarded(entry._parse(arg_types, resolve, constants), constants)
    return Program(entry.__name__, tuple(callees.values()) + (fn,), fn.name)


def _guarded(fn: Function, constants: dict | None) -> Function:
    """`fn` starting with a check of each scalar parameter it was specialised for
    (`pl.expect_value(n, 128)`): an artifact called with another value stops, naming the
    parameter, instead of computing with the value it was built for."""
    guards = tuple(expect_value(p.var, value, p.var.span)
                   for p in fn.params if (value := (constants or {}).get(p.var.name)) is not None)
    return replace(fn, body=guards + fn.body) if guards else fn


def _check_kernel_call(ref, types: list, span: Span) -> None:
    """A call from a @pl.jit function calls an @pl.jit.incore kernel with its arguments."""
    if not isinstance(ref, JitFunction) or ref.func_type is not FunctionType.InCore:
        raise ParseError(f"`{getattr(ref, '__name__', ref)}` is not an @pl.jit.incore kernel",
                         span)
    expected = len(ref._parsed_source()[0].args.args)
    if len(types) != expected:
        raise TypeCheckError(f"`{ref.__name__}` takes {expected} arguments, got {len(types)}",
                             span)


def _direct_call(kernel: Function) -> Function:
    """An orchestration that runs one kernel once: calling an @pl.jit.incore directly."""
    params = tuple(Param(p.var, p.direction) for p in kernel.params)
    args = tuple(p.var for p in params)
    outs = [p.var for p in kernel.params if isinstance(p.var.type, TensorType)
            and p.direction.value != "in"]
    if kernel.returns:
        rtype = kernel.returns[0] if len(kernel.returns) == 1 else TupleType(kernel.returns)
        rets = tuple(Var(v.name, v.type) for v in _returned(kernel))
        body = (Assign(rets, FuncCall(kernel.name, args, rtype)), Return(rets))
    else:  # a kernel without `return` hands back what it stored into its outputs
        body = (ExprStmt(FuncCall(kernel.name, args, TupleType(()))), Return(tuple(outs)))
    returns = kernel.returns or tuple(o.type for o in outs)
    return Function(f"{kernel.name}_main", params, tuple(returns), body,
                    FunctionType.Orchestration, kernel.span)


class InlineFunction(JitFunction):
    """`@pl.jit.inline` / `@pl.inline` (upstream's `pl.InlineFunction`): a helper whose body
    the parser splices into each function that calls it; not a program of its own."""


def _returned(kernel: Function) -> tuple:
    for s in kernel.body:
        if isinstance(s, Return):
            return s.values
    return ()


class _JitDecorator:
    """`@pl.jit` (orchestration entry), `@pl.jit.incore` (one device kernel),
    `@pl.jit.inline` / `@pl.jit.opaque` (helpers spliced where they are called: see
    language/inline.py) and `@pl.jit.host` (a multi-chip HOST orchestrator: refused)."""

    def __call__(self, fn=None, *, auto_scope: bool = True):
        check_auto_scope(auto_scope, FunctionType.Orchestration, "@pl.jit")
        if fn is None:
            return lambda f: JitFunction(f, FunctionType.Orchestration)
        return JitFunction(fn, FunctionType.Orchestration)

    def incore(self, fn=None, *, level=None, auto_scope: bool = True) -> JitFunction:
        if level is not None and level is not Level.CORE_GROUP:
            raise ParseError(f"@pl.jit.incore(level={level!r}) targets one core type; this "
                             "project's kernels run on the whole core group", _caller_span(),
                             hint="drop level=, or use level=pl.Level.CORE_GROUP")
        check_auto_scope(auto_scope, FunctionType.InCore, "@pl.jit.incore")
        if fn is None:
            return lambda f: JitFunction(f, FunctionType.InCore)
        return JitFunction(fn, FunctionType.InCore)

    def inline(self, fn=None, *, auto_scope: bool = True):
        check_auto_scope(auto_scope, FunctionType.Inline, "@pl.jit.inline")
        if fn is None:
            return lambda f: InlineFunction(f, FunctionType.Inline)
        return InlineFunction(fn, FunctionType.Inline)

    def opaque(self, fn=None, *, auto_scope: bool = True):
        check_auto_scope(auto_scope, FunctionType.Opaque, "@pl.jit.opaque")
        if fn is None:
            return lambda f: JitFunction(f, FunctionType.Opaque)
        return JitFunction(fn, FunctionType.Opaque)

    def host(self, fn=None, **options) -> HostFunction:
        return HostFunction(fn) if fn is not None else (lambda f: HostFunction(f))


class HostFunction:
    """`@pl.jit.host`: upstream's HOST-level orchestrator of a multi-chip (L3) program.
    This project runs single-chip programs; calling or compiling one is refused at its
    definition's line."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn

    def _refuse(self, *args, **kwargs):
        code = self.fn.__code__
        raise ParseError(
            f"`{self.fn.__name__}` is @pl.jit.host, a HOST orchestrator over several chips; "
            "this project compiles and runs single-chip programs only",
            Span(code.co_filename, code.co_firstlineno),
            hint="call the chip-level @pl.jit function it dispatches directly")

    __call__ = compile = lower = frontend = _refuse


def _caller_span() -> Span:
    """The line of the user's code that called in (a decorator's)."""
    frame = user_frame()
    return Span(frame.f_code.co_filename, frame.f_lineno)


def check_auto_scope(auto_scope, func_type: FunctionType, decorator: str) -> None:
    """Upstream's `auto_scope=False`: the compiler places none of the function's runtime
    scopes (an orchestration records it as its "auto_scope" attribute, read by the parser
    from the decorator; an inline body follows its caller's), so an orchestration, host or
    inline function takes it; an InCore or Opaque one is refused, as upstream: it is
    outlined into a kernel with no orchestration body for a scope to live in."""
    if not isinstance(auto_scope, bool):
        raise ParseError(f"{decorator}(auto_scope={auto_scope!r}): auto_scope is True or False",
                         _caller_span())
    if not auto_scope and func_type in (FunctionType.InCore, FunctionType.Opaque):
        raise ParseError(f"{decorator}(auto_scope=False): an {func_type.name} function is a "
                         "kernel with no orchestration body for a runtime scope to live in",
                         _caller_span(), hint="drop auto_scope=; place scopes in the @pl.jit "
                         "entry that calls it")


jit = _JitDecorator()
