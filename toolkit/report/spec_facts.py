"""The parts of incident.toml a report needs that triage does not store: hand events and [disclosure].

Reports are rendered from the case alone, so these are copied into two case tables once:

    hand_events(seq, ts, title, actor, category, description, visibility, source)
    disclosure(key, value)            value is JSON text (strings, numbers, lists, tables)

The incident's awareness_time (the GDPR clock) is stored in `disclosure` under `awareness_time`
unless [disclosure] sets that key itself. Triage may call `store_spec_facts` right after it records
the spec; `ensure_spec_facts` (called by kvir.report) does it on first use from the spec path and
SHA-256 that triage recorded, and says so in the report when the file changed since.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.spec.model import IncidentSpec, load_spec

TABLES = ("hand_events", "disclosure")


def _jsonable(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            raise KvirError(f"[disclosure] date-time {v.isoformat()} has no UTC offset; write it with Z")
        return v.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v


def store_spec_facts(case: Case, spec: IncidentSpec) -> None:
    """Copy the spec's hand events and [disclosure] table into the case (replacing earlier copies)."""
    con = case.con
    con.execute("CREATE OR REPLACE TABLE hand_events (seq INTEGER, ts TIMESTAMPTZ, title VARCHAR, actor VARCHAR, "
                "category VARCHAR, description VARCHAR, visibility VARCHAR, source VARCHAR)")
    for i, e in enumerate(spec.events):
        con.execute("INSERT INTO hand_events VALUES ($i, $ts, $title, $actor, $cat, $desc, $vis, $src)",
                    {"i": i, "ts": e.ts, "title": e.title, "actor": e.actor, "cat": e.category,
                     "desc": e.description, "vis": e.visibility, "src": f"incident.toml [[events]] #{i + 1}"})
    con.execute("CREATE OR REPLACE TABLE disclosure (key VARCHAR PRIMARY KEY, value VARCHAR)")
    facts = dict(spec.disclosure)
    if spec.awareness_time is not None and "awareness_time" not in facts:
        facts["awareness_time"] = spec.awareness_time
    for k, v in facts.items():
        con.execute("INSERT INTO disclosure VALUES ($k, $v)", {"k": str(k), "v": json.dumps(_jsonable(v))})
    sha = hashlib.sha256(spec.path.read_bytes()).hexdigest() if spec.path and spec.path.exists() else None
    case.manifest["report_spec_facts"] = {"path": str(spec.path) if spec.path else None, "sha256": sha,
                                          "events": len(spec.events), "disclosure_keys": sorted(facts)}


def ensure_spec_facts(case: Case, spec: str | Path | IncidentSpec | None = None) -> list[str]:
    """Make sure hand_events and disclosure exist in the case; returns warnings for the report.

    With `spec` given, its facts replace what the case holds. Without, the case's copy is used; if
    there is none, the spec that triage recorded is read, provided it still exists."""
    warnings: list[str] = []
    if spec is not None:
        s = spec if isinstance(spec, IncidentSpec) else load_spec(spec)
        store_spec_facts(case, s)
        return warnings
    if all(case.has(t) for t in TABLES):
        return warnings
    recorded = case.manifest.get("incident_spec") or {}
    path = recorded.get("path") or _incident_value(case, "spec_path")
    if not path or not Path(path).exists():
        case.con.execute("CREATE OR REPLACE TABLE hand_events (seq INTEGER, ts TIMESTAMPTZ, title VARCHAR, "
                         "actor VARCHAR, category VARCHAR, description VARCHAR, visibility VARCHAR, source VARCHAR)")
        case.con.execute("CREATE OR REPLACE TABLE disclosure (key VARCHAR PRIMARY KEY, value VARCHAR)")
        warnings.append("no hand events or [disclosure] keys: the case holds none and the incident spec "
                        f"({path or 'not recorded'}) cannot be read; pass it with --incident")
        return warnings
    p = Path(path)
    sha = hashlib.sha256(p.read_bytes()).hexdigest()
    if recorded.get("sha256") and recorded["sha256"] != sha:
        warnings.append(f"{p} changed since triage (SHA-256 {recorded['sha256'][:12]}… then, {sha[:12]}… now): "
                        "hand events and [disclosure] were taken from the current file")
    store_spec_facts(case, load_spec(p))
    return warnings


def _incident_value(case: Case, key: str) -> str | None:
    if not case.has("incident"):
        return None
    row = case.con.execute("SELECT value FROM incident WHERE key = $k", {"k": key}).fetchone()
    return row[0] if row else None


def read_disclosure(case: Case) -> dict[str, Any]:
    """The [disclosure] table as stored in the case (JSON values decoded)."""
    if not case.has("disclosure"):
        return {}
    return {k: json.loads(v) for k, v in case.con.execute("SELECT key, value FROM disclosure ORDER BY key").fetchall()}
