"""Everything kvir shows a person goes through this package: one error path, safe text, tables, JSON.

Log-derived and user-given strings (ids, paths, models, spec keys, table names) can hold terminal escape
sequences or rich markup: they are always shown as plain text with control characters made visible
(kvir.core.text.visible), never interpreted. kvir's own styling is applied with Text styles, not markup
around foreign text. Results go to stdout (JSON) or files; tables, progress and errors go to stderr.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import json
import math
import os
import signal
import threading
from typing import Any, Callable, Iterable, Iterator, NoReturn

import duckdb
import typer
from rich.text import Text

from kvir.case.store import DEFAULT_MEMORY_LIMIT, is_damage
from kvir.case.writer import public_path
from kvir.cli.present.layout import Col, Grid, Para, as_col
from kvir.core.errors import KvirError, disk_problem
from kvir.core.jsonable import jsonable
from kvir.core.progress import stderr
from kvir.core.text import visible

__all__ = ["stderr", "cell", "table", "Col", "say", "fail", "guarded", "echo", "echo_json", "show", "blank"]

# --memory-limit of every command that writes a case (kvir.case.store.memory_limit_setting decides)
MEMORY_LIMIT_HELP = (f"DuckDB's memory limit, e.g. 4GB; beyond it work spills to disk "
                     f"(default: KVIR_MEMORY_LIMIT, else {DEFAULT_MEMORY_LIMIT >> 20} MiB, at most 40 % of RAM).")

# OS errors a user can act on (a full or read-only disk, a missing permission, a missing file): one line,
# exit 2, naming the path. Anything else is a bug and keeps its traceback.
_USER_ERRNOS = {errno.ENOSPC: "no space left on the device", errno.EROFS: "read-only file system",
                errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
                errno.ENOENT: "no such file or directory", errno.EDQUOT: "disk quota exceeded",
                errno.ENOTDIR: "not a folder", errno.EISDIR: "is a folder"}


def blank(value: Any) -> bool:
    """None, NaN, NaT and pandas' NA: nothing to show."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return str(value) in ("NaT", "<NA>", "nan", "None")


def show(value: Any, fmt: str = "{}") -> str:
    """A value as plain text: '-' when blank, numbers through `fmt`, booleans as yes/no."""
    if blank(value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and fmt == "{}":
        value = int(value)
    try:
        return visible(fmt.format(value))
    except (ValueError, TypeError):
        return visible(value)


def cell(value: Any, style: str = "", fmt: str = "{}") -> Text:
    """One table cell: the value as plain text (never markup), control characters visible."""
    if isinstance(value, Text):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and fmt == "{}":
        fmt = "{:,}"
    return Text(show(value, fmt), style=style)


def table(title: str, columns: Iterable[str | tuple[str, str] | Col], rows: Iterable[Iterable[Any]], *,
          limit: int | None = None, rest: str = "") -> Grid:
    """A table laid out at the console's width (kvir.cli.present.layout): every cell goes through `cell`.
    A column is a name, (name, 'right') or a Col (wrap, below, under). With `limit`, rows past it are
    counted in one line that points to `rest` (the file or table that holds them all)."""
    rows = [[cell(v) for v in r] for r in rows]
    footer = []
    if limit is not None and len(rows) > limit:
        footer = [Text(f"... and {len(rows) - limit:,} more row(s)" + (f": {rest}" if rest else ""), style="dim")]
        rows = rows[:limit]
    return Grid(Text(visible(title), style="bold"), [as_col(c) for c in columns], rows, footer)


def say(*parts: Any, style: str = "", wrap: bool = True) -> None:
    """A line on stderr, wrapped at the terminal's width at spaces (a path longer than a line after its '/');
    `wrap=False`: one line as it is, for a command to copy. Every part is shown as plain text (kvir's words
    and foreign values alike)."""
    text = Text(" ".join(visible(p) for p in parts), style=style)
    stderr.print(Para(text) if wrap else text, highlight=False, soft_wrap=not wrap)


def fail(e: BaseException | str) -> NoReturn:
    """The one error path of every command: `kvir: <message>` on one line on stderr, exit status 2."""
    stderr.print(Text("kvir: ", style="bold red") + Text(visible(_message(e))), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _message(e: BaseException | str) -> str:
    if isinstance(e, OSError) and e.errno in _USER_ERRNOS:
        where = public_path(e.filename or "")
        return f"{where}: {_USER_ERRNOS[e.errno]}" if where else _USER_ERRNOS[e.errno]
    return public_path(" ".join(str(e).split("\n")) if not isinstance(e, str) else e)


def guarded(command: Callable[..., Any] | None = None, *, interrupt: bool = True) -> Any:
    """Wrap a command so user-fixable errors (KvirError, a full/read-only disk, a missing permission, a
    damaged case database) end with one line and exit 2 instead of a traceback, and Ctrl-C (or SIGTERM)
    with one line and exit 130 (143), every case as it was (kvir.case.writer.abandon_all). A server that
    shuts down gracefully on those signals itself is wrapped with `@guarded(interrupt=False)`."""
    if command is None:
        return functools.partial(guarded, interrupt=interrupt)

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            with interruptible() if interrupt else python_signals():
                return command(*args, **kwargs)
        except KvirError as e:
            if is_damage(e.__cause__ or e) and " is damaged: " not in str(e):   # found by a query, not named yet
                fail(f"{e} (a database file is damaged: restore the case from a copy, or triage again into a new folder)")
            fail(e)
        except OSError as e:
            if e.errno in _USER_ERRNOS:
                fail(e)
            raise
        except Exception as e:   # DuckDB reports a full or read-only disk as its own IOException
            # (its classes live in `_duckdb` in DuckDB 2.0; a commit that fails is a TransactionException)
            if isinstance(e, duckdb.Error) and disk_problem(str(e)):
                fail(f"the case's disk: {disk_problem(str(e))} ({' '.join(str(e).split())[:300]})")
            if isinstance(e, duckdb.Error) and is_damage(e):
                fail(f"a case database is damaged: DuckDB cannot read it ({' '.join(str(e).split())[:300]})")
            raise
    return run


def interruptible(*, then_ignore: bool = False) -> contextlib.AbstractContextManager[None]:
    """While a command runs, Ctrl-C (SIGINT) and SIGTERM end it at once: the staged work of every case being
    written is dropped, one line says so, and the exit status is 128 + the signal. Exiting from the handler
    (never unwinding through DuckDB's threads and queries: that gave 'connection is busy' tracebacks and
    SIGABRT) is safe because a case is only ever replaced by one atomic swap of a complete new state.
    `then_ignore` (kvir's main(), around the whole command): afterwards the signals are ignored rather than
    given back, because the interpreter's finalization resets a Python handler to the default action, and
    a Ctrl-C there killed a finished run by the signal with no word (any thread may take it: a mask would
    not do). The finished run's own status stands."""
    return _handlers({signal.SIGINT: _on_signal, signal.SIGTERM: _on_signal}, then_ignore=then_ignore)


def python_signals() -> contextlib.AbstractContextManager[None]:
    """Python's own Ctrl-C and SIGTERM handling while a server that shuts down gracefully on them runs (kvir's
    main() has put interruptible()'s handlers in place for the whole process)."""
    return _handlers({signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL})


@contextlib.contextmanager
def _handlers(handlers: dict, *, then_ignore: bool = False) -> Iterator[None]:
    """`handlers` in place while the block runs (signals can only be set from the main thread: elsewhere,
    nothing), then the previous ones back, or SIG_IGN with `then_ignore`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_IGN if then_ignore else handler)


def _on_signal(signum: int, frame: Any) -> None:
    from kvir.case.writer import abandon_all

    try:
        cases = abandon_all()
        what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        kept = "".join(f"; {visible(c)}" for c in cases)
        os.write(2, ("\n" if os.isatty(2) else "").encode() + f"kvir: {what}{kept}\n".encode())
    finally:
        os._exit(128 + signum)


def echo(text: str) -> None:
    """A result line on stdout (a path, a count): control characters visible."""
    typer.echo(visible(text))


def echo_json(obj: Any) -> None:
    """Machine output on stdout: JSON (json.dumps escapes control characters itself)."""
    typer.echo(json.dumps(jsonable(obj), indent=2, default=str))
