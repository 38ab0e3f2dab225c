"""Reading the case for the reports: every question is one file in queries/report/ (or the case's
mechanism's own, queries/mechanisms/<folder>/report/), run once over all accounts through Case.run (so it is
logged in manifest.json and compiled/ like every other query), and evidence files named the way the reports
show them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from kvir.case.store import Case


def rows(case: Case, name: str, params: dict[str, Any] | None = None, *,
         mechanism: str | None = None) -> list[dict[str, Any]]:
    """queries/report/<name>.sql on the case, as dicts (column -> value); bound parameters, logged. With
    `mechanism` (its folder) that mechanism's queries/mechanisms/<folder>/report/<name>.sql comes first."""
    found = case.run(f"report/{name}", params or {}, fetch=True, mechanism=mechanism)
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


def shown_path(path: Any, case_dir: str | Path, resolved: dict[str, str] | None = None) -> str:
    """An input file as the reports name it: relative to the case folder, the one base of every path in
    every document ('../fleet/...' for the demo's fleet beside the case), so the reports travel with the
    investigation folder and carry no local directory layout. A relative path is first made the file it
    named when it was read (`resolved`: the manifest's record of it); one the case cannot place (read before
    the manifest recorded that, or not a local file) stays as the case recorded it."""
    if path is None or path == "":
        return ""
    p = Path(str(path))
    if not p.is_absolute():
        if str(path) not in (resolved or {}):
            return str(path)
        p = Path(resolved[str(path)])
    try:
        return os.path.relpath(p.resolve(), Path(case_dir).resolve())
    except ValueError:                         # another drive (Windows): no relative path exists
        return str(path)


def resolved_inputs(case: Case) -> dict[str, str]:
    """Each relative input path the case recorded -> the file it named when read (manifest.json inputs)."""
    return {f["path"]: f["resolved"] for s in case.manifest.get("inputs") or [] for f in s.get("files") or []
            if isinstance(f, dict) and f.get("resolved")}


@dataclass(frozen=True)
class EvidenceNames:
    """How one case's reports name input files: shown_path with the case's folder and recorded inputs."""
    case_dir: Path
    resolved: dict[str, str]

    @classmethod
    def of(cls, case: Case) -> "EvidenceNames":
        return cls(home(case), resolved_inputs(case))

    def path(self, path: Any) -> str:
        return shown_path(path, self.case_dir, self.resolved)

    def evidence(self, file: Any, line: Any) -> str:
        """'file:line' of a log record, the file as shown_path names it."""
        if not file:
            return ""
        f = self.path(file)
        return f"{f}:{line}" if line is not None else f
