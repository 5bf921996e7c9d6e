"""`CompiledProgram`: a built artifact directory, runnable without the compiler.

What `ir.compile`, `kernel.compile` and `CompiledProgram.from_dir` return.  Importing
this module loads no compiler module; running the artifact loads the runtime, and
`validate_ir` the torch reference of `pypto.debug`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .ir.errors import api_boundary


class CompiledProgram:
    """A program built into an artifact directory.  Calling it runs it on its platform."""

    def __init__(self, output_dir: str | os.PathLike):
        self.output_dir = Path(output_dir)
        manifest_path = self.output_dir / "manifest.json"
        try:
            self._manifest = json.loads(manifest_path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{manifest_path} does not exist: {self.output_dir} is not a pypto artifact "
                "(build it with ir.compile or kernel.compile)"
            ) from None
        self._loaded = None

    @classmethod
    def from_dir(cls, path: str | os.PathLike) -> CompiledProgram:
        """Open a prebuilt artifact; needs no compiler."""
        return cls(path)

    @property
    def platform(self) -> str:
        return self._manifest["platform"]

    @property
    def backend_type(self) -> str:
        return self._manifest["backend"]

    @property
    def param_names(self) -> list[str]:
        return [p["name"] for p in self._manifest["params"]]

    @property
    def output_indices(self) -> list[int]:
        return list(self._manifest["outputs"])

    @api_boundary
    def __call__(self, *args, config=None):
        """Run on the artifact's platform; outputs are copied back into the caller's tensors.

        Given only the inputs (upstream's `compiled(*inputs)`), the parameters declared
        `pl.Out` get new tensors, which the call returns.
        """
        from .runtime import RunConfig, load_artifact

        if self._loaded is None:
            self._loaded = load_artifact(self.output_dir)
        return self._loaded.run(self._with_outputs(args),
                                config or RunConfig(platform=self.platform))

    def _with_outputs(self, args: tuple) -> tuple:
        params = self._manifest["params"]
        outs = [i for i, p in enumerate(params)
                if p.get("declared_direction", p.get("direction")) == "out"]
        if len(args) == len(params) or len(args) + len(outs) != len(params):
            return args  # all given, or a wrong count the run's own check reports
        import torch

        from .ir.dtypes import from_name

        given = iter(args)
        return tuple(torch.empty(from_name(p["dtype"]).torch_shape(p["shape"]),
                                 dtype=from_name(p["dtype"]).to_torch())
                     if i in outs else next(given) for i, p in enumerate(params))

    def validate_ir(self, tensors, expected, *, rtol: float = 5e-2, atol: float = 5e-2):
        """Run every pass dump on torch (copies of `tensors`), print `max_abs_diff` per
        dump, raise AssertionError naming the first dump that leaves tolerance.

        Pass the tolerance your golden uses: the defaults (5e-2) are loose and let small
        regressions through.
        """
        from .debug import validate_pass_dumps
        from .passes.manager import DUMP_DIR
        from .platform import get_platform

        dump_dir = self.output_dir / DUMP_DIR
        if not dump_dir.is_dir():
            raise FileNotFoundError(
                f"{self.output_dir} has no {DUMP_DIR}/: compile with dump_passes=True"
            )
        return validate_pass_dumps(dump_dir, tensors, expected, rtol=rtol, atol=atol,
                                   backend=get_platform(self.platform).backend)

    def __fspath__(self) -> str:
        """The artifact directory, so the handle works where upstream code takes a path."""
        return str(self.output_dir)

    def __repr__(self) -> str:
        return f"CompiledProgram({str(self.output_dir)!r}, platform={self.platform!r})"
