"""Reading the shipped specs in a process that read another project's specs before (as the
test session does): the other project's `kernels` package must not shadow this one's, even
when this checkout's top is already on sys.path behind the other project's."""

from __future__ import annotations

import sys

from shipped_library import ROOT, spec_modules

from pypto.spec.module import specs_of

OTHER_SPEC = '''"""Another library's spec."""

import pypto.language as pl
from pypto import spec


@pl.jit
def other(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, 2.0)
    return out


SPECS = [spec.Kernel(other, variants={"v": {"a": ("fp32", [8, 32]), "out": ("fp32", [8, 32])}},
                     inputs=lambda rng, v: {"a": rng.normal(v.a)},
                     reference=lambda a: a.double() * 2,
                     tolerance=spec.Exact("doubling is exact"))]
'''


def test_shipped_specs_load_after_another_projects_kernels_package(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [*sys.path, str(ROOT)])  # present, but last
    other = tmp_path / "other"
    (other / "kernels").mkdir(parents=True)
    (other / "kernels" / "__init__.py").write_text('"""Another library."""\n')
    (other / "kernels" / "other.py").write_text(OTHER_SPEC)
    assert [k.name for k in specs_of(other / "kernels" / "other.py", other)] == ["other"]
    module = spec_modules()[0]
    (kernel, *_) = specs_of(ROOT / "kernels" / f"{module}.py", ROOT)
    assert sys.modules["kernels"].__path__ == [str(ROOT / "kernels")]
    assert kernel.where.file == str(ROOT / "kernels" / f"{module}.py")
    # and back: the other project reads again
    assert [k.name for k in specs_of(other / "kernels" / "other.py", other)] == ["other"]
