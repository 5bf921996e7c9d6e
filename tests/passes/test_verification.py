"""Verification levels: properties checked after the passes that produce them; round trips."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from corpus import CORPUS

import pypto.language as pl
from pypto import ir
from pypto.compiler import CompileOptions, run_pipeline
from pypto.ir import PassDumpLevel, VerificationError, VerificationLevel
from pypto.ir.types import TileType
from pypto.passes import (
    DUMP_DIR,
    FRONTEND_DUMP,
    FunctionPass,
    PassInstrument,
    default_pipeline,
    dump_name,
    dump_of,
)
from pypto.passes.retype import VarRetyper
from pypto.platform import get_platform


class _Snapshots(PassInstrument):
    """Keeps the program after every pass, to compare with the dump files."""

    def __init__(self):
        self.programs = {}

    def before_pipeline(self, program, ctx):
        self.programs[f"{DUMP_DIR}/{FRONTEND_DUMP}"] = program

    def after_pass(self, index, pass_, program, ctx):
        self.programs[f"{DUMP_DIR}/{dump_name(index, pass_.name)}"] = program


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_corpus_compiles_at_roundtrip_and_every_dump_reparses_equal(name, platform, monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    kernel, make_args = CORPUS[name]
    program = kernel.frontend(*make_args())
    snapshots = _Snapshots()
    opts = CompileOptions(platform=platform, dump_passes=PassDumpLevel.EXPLICIT)
    lowered = run_pipeline(program, get_platform(platform), opts, [snapshots])
    dumps = {k: v for k, v in lowered.files.items() if k.startswith("passes_dump/")}
    assert sorted(dumps) == sorted(snapshots.programs)
    assert len(dumps) == len(default_pipeline().passes) + 1
    for path, text in dumps.items():
        assert pl.parse(text) == snapshots.programs[path], path


def test_concise_dumps_parse_and_leave_out_placement():
    kernel, make_args = CORPUS["tensor_add"]
    opts = CompileOptions(dump_passes=PassDumpLevel.CONCISE)
    lowered = run_pipeline(kernel.frontend(*make_args()), get_platform("a2a3sim"), opts)
    last = lowered.files[dump_of(lowered.files, "AllocateMemoryAddr")]
    assert "pl.Mem." not in last
    pl.parse(last)
    explicit = run_pipeline(kernel.frontend(*make_args()), get_platform("a2a3sim"),
                            CompileOptions(dump_passes=PassDumpLevel.EXPLICIT))
    assert "pl.Mem.Vec, 0x" in explicit.files[dump_of(explicit.files, "AllocateMemoryAddr")]


class _ForgetAddresses(FunctionPass):
    """A broken pass: strips the address of every tile (as if allocation were skipped)."""

    name = "ForgetAddresses"
    applies_to = (ir.FunctionType.InCore,)

    def run_function(self, fn, ctx):
        def strip(stmt, var):
            return replace(var.type, addr=None) if isinstance(var.type, TileType) else var.type

        return VarRetyper(strip).mutate_function(fn)


class _DropFirstLoad(FunctionPass):
    """A broken pass: deletes the first load, leaving its result read but never bound."""

    name = "DropFirstLoad"
    applies_to = (ir.FunctionType.InCore,)

    def run_function(self, fn, ctx):
        body = list(fn.body)
        for i, stmt in enumerate(body):
            if isinstance(stmt, ir.Assign) and getattr(stmt.value, "op", None) == "load":
                del body[i]
                break
        return replace(fn, body=tuple(body))


def _with_broken(pass_):
    pipeline = default_pipeline()
    pipeline.passes.append(pass_)
    return pipeline


@pytest.mark.parametrize("broken, prop", [
    (_ForgetAddresses(), "AddressesAllocated"),
    (_DropFirstLoad(), "DefBeforeUse"),
])
def test_basic_names_the_pass_that_broke_a_property(broken, prop):
    kernel, make_args = CORPUS["tensor_add"]
    program = kernel.frontend(*make_args())
    opts = CompileOptions(verification_level=VerificationLevel.BASIC)
    with pytest.raises(VerificationError) as info:
        run_pipeline(program, get_platform("a2a3sim"), opts, pipeline=_with_broken(broken))
    message = str(info.value)
    assert message.startswith(f"Verification failed after '{broken.name}'")
    assert prop in message and "in the IR:" in message


def test_none_lets_a_broken_pass_through():
    kernel, make_args = CORPUS["tensor_add"]
    program = kernel.frontend(*make_args())
    opts = CompileOptions(verification_level=VerificationLevel.NONE)
    lowered = run_pipeline(program, get_platform("a2a3sim"), opts,
                           pipeline=_with_broken(_ForgetAddresses()))
    assert "0x" not in lowered.program.as_python()


def test_env_selects_the_level(monkeypatch):
    kernel, make_args = CORPUS["tensor_add"]
    program = kernel.frontend(*make_args())
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "none")
    run_pipeline(program, get_platform("a2a3sim"), CompileOptions(),
                 pipeline=_with_broken(_ForgetAddresses()))
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "basic")
    with pytest.raises(VerificationError):
        run_pipeline(program, get_platform("a2a3sim"), CompileOptions(),
                     pipeline=_with_broken(_ForgetAddresses()))
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "paranoid")
    with pytest.raises(ValueError, match="PYPTO_VERIFY_LEVEL"):
        run_pipeline(program, get_platform("a2a3sim"), CompileOptions())


def test_ir_compile_writes_dumps_and_profile(tmp_path):
    kernel, make_args = CORPUS["two_stages"]
    args = make_args()
    compiled = ir.compile(kernel.frontend(*args), output_dir=tmp_path / "art",
                          dump_passes=PassDumpLevel.EXPLICIT, platform="a5sim", profiling=True,
                          verification_level=VerificationLevel.ROUNDTRIP)
    dumps = sorted(p.name for p in (compiled.output_dir / "passes_dump").iterdir())
    passes = default_pipeline().passes
    assert dumps == [FRONTEND_DUMP] + [dump_name(i, p.name) for i, p in enumerate(passes, 1)]
    profile = (compiled.output_dir / "report" / "pipeline_profile.txt").read_text()
    for p in default_pipeline().passes:
        assert p.name in profile
    import json

    rows = json.loads((compiled.output_dir / "report" / "pipeline_profile.json").read_text())
    assert [r["pass"] for r in rows["passes"]] == [p.name for p in default_pipeline().passes]
    x, out = args
    x = torch.randn(32, 128)
    compiled(x, out)
    assert torch.allclose(out, torch.exp(x) * 3.0, rtol=1e-6)
