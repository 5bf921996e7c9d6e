"""Pass dumps are found by the pass's name, so a pass added to the pipeline renumbers the
dumps without breaking what looks for one of them."""

from __future__ import annotations

import pytest
from corpus import CORPUS

from pypto.compiler import CompileOptions, run_pipeline
from pypto.passes import (
    DUMP_DIR,
    FRONTEND_DUMP,
    Pass,
    default_pipeline,
    dump_name,
    dump_of,
    dumped_pass,
)
from pypto.platform import get_platform


class _Unchanged(Pass):
    """A pass that changes nothing: the pipeline gains a step, the program does not."""

    name = "Unchanged"

    def run(self, program, ctx):
        return program


def _dumps(pipeline=None) -> dict[str, str]:
    kernel, make_args = CORPUS["tensor_add"]
    lowered = run_pipeline(kernel.frontend(*make_args()), get_platform("a2a3sim"),
                           CompileOptions(dump_passes=True), pipeline=pipeline)
    return {k: v for k, v in lowered.files.items() if k.startswith(f"{DUMP_DIR}/")}


def test_a_pass_added_in_front_renumbers_the_dumps_but_not_which_pass_they_follow():
    pipeline = default_pipeline()
    pipeline.passes.insert(0, _Unchanged())
    before, after = _dumps(), _dumps(pipeline)
    last = default_pipeline().passes[-1].name
    assert dump_of(before, last) != dump_of(after, last)
    assert before[dump_of(before, last)] == after[dump_of(after, last)]
    assert after[dump_of(after, "Unchanged")] == before[f"{DUMP_DIR}/{FRONTEND_DUMP}"]


def test_a_dump_name_reads_back_as_its_pass():
    assert dumped_pass(dump_name(12, "TensorToTile")) == "TensorToTile"
    assert dumped_pass(FRONTEND_DUMP) is None
    assert dumped_pass("notes_after_reading.py") is None


def test_a_pass_without_a_dump_is_an_error_listing_the_dumps():
    with pytest.raises(KeyError, match=r"no dump after a pass named 'Nope' among \['00_fro"):
        dump_of(_dumps(), "Nope")
