"""Progress for long work: rich bars on stderr, fed by DuckDB's query_progress() or a byte counter.

Labels name files and sources (user- and log-derived): they are shown escaped (kvir.core.text).

Results go to files and stdout; only progress and summaries go to stderr. When stderr is not a
terminal (CI, a pipe) rich draws nothing animated.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from kvir.core.text import markup_escape

stderr = Console(stderr=True)


class Reporter:
    """One bar per stage. `quiet` disables drawing (the work is the same)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._progress: Progress | None = None

    @contextmanager
    def session(self) -> Iterator["Reporter"]:
        if not self.enabled:
            yield self
            return
        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TaskProgressColumn(),
                                  TimeElapsedColumn(), console=stderr, transient=False)
        with self._progress:
            yield self
        self._progress = None

    def add_task(self, label: str, total: float = 100.0) -> Any:
        """A bar shared by several run() calls (pass it as task=...); None when not drawing."""
        return self._progress.add_task(markup_escape(label), total=total) if self._progress is not None else None

    def describe(self, task: Any, label: str) -> None:
        if self._progress is not None and task is not None:
            self._progress.update(task, description=markup_escape(label))

    def run(self, label: str, work: Callable[[], Any], *, con=None,
            counter: Callable[[], float] | None = None, total: float | None = None,
            task: Any = None, base: float = 0.0, span: float = 100.0) -> Any:
        """Run `work` in a worker thread while polling its progress (DuckDB's query_progress on `con`,
        or `counter()` out of `total`). With `task`, the work moves that shared bar from `base` by at most
        `span`. Exceptions propagate; Ctrl-C interrupts the DuckDB query."""
        if self._progress is None:
            return work()
        own = task is None
        if own:
            task = self.add_task(label)
            base, span = 0.0, 100.0
        else:
            self.describe(task, label)
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = work()
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e

        th = threading.Thread(target=target, daemon=True)
        th.start()
        try:
            while th.is_alive():
                pct = None
                if counter is not None and total:
                    pct = min(100.0, 100.0 * counter() / total)
                elif con is not None:
                    try:
                        p = con.query_progress()
                        pct = p if p >= 0 else None
                    except Exception:
                        pct = None
                if pct is not None:
                    self._progress.update(task, completed=base + span * pct / 100.0)
                th.join(0.1)
        except KeyboardInterrupt:
            if con is not None:
                con.interrupt()
            th.join()
            raise
        self._progress.update(task, completed=base + span)
        if "error" in box:
            raise box["error"]
        return box.get("result")


class ByteCounter:
    """Counts bytes a reader has consumed (the line reader calls add())."""

    def __init__(self) -> None:
        self.n = 0
        self.t0 = time.perf_counter()

    def add(self, k: int) -> None:
        self.n += k

    def __call__(self) -> float:
        return float(self.n)
