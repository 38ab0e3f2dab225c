"""Reading the case for the reports: every question is one file in queries/report/, run once over all
accounts through Case.run (so it is logged in manifest.json and compiled/ like every other query), and
evidence files named the way the reports show them.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from kvir.case.store import Case


def rows(case: Case, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """queries/report/<name>.sql on the case, as dicts (column -> value); bound parameters, logged."""
    found = case.run(f"report/{name}", params or {}, fetch=True)
    cols = [d[0] for d in case.con.description]
    return [dict(zip(cols, r)) for r in found]


def grouped(found: Iterable[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    """Rows of one set-based query, split by `key` (an account id): each account gets exactly its own rows."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for r in found:
        out.setdefault(r[key], []).append(r)
    return out


def home(case: Case) -> Path:
    """The case's own folder (not the staging folder a run writes into before it is swapped in)."""
    return Path(case.home or case.path)


def shown_path(path: Any, case_dir: str | Path) -> str:
    """An input file as the reports name it: relative to the case folder when it lies in the folder that
    holds the case (inside the case, or beside it as the demo's fleet is: '../fleet/...'), so the reports
    travel with the investigation folder and carry no local directory layout; anywhere else, as the case
    recorded it (the path given on the command line)."""
    if path is None or path == "":
        return ""
    p = Path(str(path))
    if not p.is_absolute():
        return str(path)
    case = Path(case_dir).resolve()
    if case.parent == Path(case.anchor):       # a case at the top of the file system: nothing beside it
        return str(path)
    real = p.resolve()
    if not real.is_relative_to(case.parent):
        return str(path)
    return os.path.relpath(real, case)


def evidence(file: Any, line: Any, case_dir: str | Path) -> str:
    """'file:line' of a log record, the file as shown_path names it."""
    if not file:
        return ""
    f = shown_path(file, case_dir)
    return f"{f}:{line}" if line is not None else f
