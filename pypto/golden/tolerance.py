"""Tolerance policies of a spec's outputs: `Exact` or `Close`, each with its reason."""

from __future__ import annotations

from pypto.comparison import Tolerance


def _required_reason(reason: object, policy: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(
            f"{policy}(...) needs a reason: say in a sentence why this tolerance is right "
            "for the output (e.g. which roundings the kernel does that the reference does not)"
        )
    return reason.strip()


class Exact(Tolerance):
    """Only equal values pass (and NaN against NaN): casts, integer ops, one rounding."""

    def __init__(self, reason: str) -> None:
        super().__init__(0.0, 0.0, _required_reason(reason, "Exact"))


class Close(Tolerance):
    """`|actual - expected| <= atol + rtol * |expected|` elementwise, NaN only equal to NaN."""

    def __init__(self, rtol: float, atol: float, reason: str) -> None:
        super().__init__(rtol, atol, _required_reason(reason, "Close"))
        if self.rtol == 0 and self.atol == 0:
            raise ValueError("Close(rtol=0, atol=0, ...) is exact: write Exact(reason) instead")
