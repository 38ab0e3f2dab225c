"""A rich progress bar over the responses a replay runs, on stderr (or nothing)."""
from __future__ import annotations


class TargetBar:
    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total, self._p, self._task = enabled, total, None, None

    def __enter__(self) -> "TargetBar":
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            from kvir.core.progress import stderr

            self._p = Progress(TextColumn("[bold]replay"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                               console=stderr, transient=False)
            self._p.__enter__()
            self._task = self._p.add_task("replay", total=self.total)
        return self

    def advance(self) -> None:
        if self._p is not None:
            self._p.advance(self._task)

    def done(self, n: int) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=n)

    def __exit__(self, *exc) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)


__all__ = ["TargetBar"]
