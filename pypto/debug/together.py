"""Members of one launch run at once on Python threads: the blocks of a gang (a launch
with a cross-block barrier, debug/torch_gang.py) and the cube and vector lanes of a
cross-core group (debug/torch_pipe.py).  A `Party` is what they share: one condition to
wait on and the first error; a member that raises stops the others (each leaves by `Stop`
at its next wait), and the first failure is raised once every member has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence


class Stop(Exception):
    """Leaves a member's body when its party has stopped (another member failed, or the
    party found a deadlock)."""


class Party:
    """The state members share; subclasses say how a thread takes a member's identity and
    what a member's end records."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.error: str | None = None

    def enter(self, member: Hashable) -> None:
        """Binds this thread to `member` (thread-local identity)."""
        raise NotImplementedError

    def leave(self) -> None:
        """Unbinds this thread."""
        raise NotImplementedError

    def finished(self, member: Hashable) -> None:
        """Records that `member` ended (called holding `cond`)."""
        raise NotImplementedError

    def stop(self, message: str) -> None:
        """Stops the party with `message` (the first one kept) and leaves this member."""
        if self.error is None:
            self.error = message
        self.cond.notify_all()
        raise Stop

    def run(self, members: Sequence[tuple[Hashable, Callable[[], object]]]) -> dict:
        """Runs each `(member, body)` at once, the first on this thread; their results by
        member (a stopped member has none).  Raises the first member's failure."""
        results: dict = {}
        failures: list[BaseException] = []

        def main(member: Hashable, body: Callable[[], object]) -> None:
            self.enter(member)
            try:
                results[member] = body()
            except Stop:
                pass
            except BaseException as exc:  # an operator's error: stop the others, raise it after
                failures.append(exc)
                with self.cond:
                    self.error = self.error or "stopped"
                    self.cond.notify_all()
            finally:
                with self.cond:
                    self.finished(member)
                    self.cond.notify_all()
                self.leave()

        first, *rest = members
        threads = [threading.Thread(target=main, args=m) for m in rest]
        for t in threads:
            t.start()
        main(*first)
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        return results
