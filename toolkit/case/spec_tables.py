"""The incident spec inside the case (tables: queries/case/spec_tables.sql): every later stage and report
reads the case alone, so triage records the whole spec once with `record_spec`.

The incident's awareness_time (the GDPR clock) is stored in `disclosure` under `awareness_time` unless
[disclosure] sets that key itself. `ensure_spec_facts` (called by kvir.report) re-reads hand events and
[disclosure] from a spec given on the command line, or from the spec path triage recorded (and says so in
the report when that file changed since).
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.core.files import sha256_file
from kvir.spec.mechanism import Mechanism, mechanism
from kvir.spec.model import IncidentSpec, load_spec

SPEC_FACT_TABLES = ("hand_events", "disclosure", "defect")


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


def record_spec(case: Case, spec: IncidentSpec) -> None:
    """The whole spec into the case: incident facts, account rules, hand events, [disclosure]."""
    with case.transaction():
        _record_spec(case, spec)


def _record_spec(case: Case, spec: IncidentSpec) -> None:
    con = case.con
    case.run("case/spec_tables")
    for table in ("incident", "account_rules"):
        con.execute(f"DELETE FROM {table}")   # kvir's own table names
    for a in spec.accounts:
        con.execute("INSERT INTO account_rules VALUES ($id, $label, $reason, $exclude)",
                    {"id": a.account_id, "label": a.label, "reason": a.reason, "exclude": a.exclude})
    record = spec.mech.spec.record(spec.params)
    facts = {"id": spec.id, "title": spec.title, "models": json.dumps(list(spec.models)),
             "model_names": json.dumps(list(spec.model_names)),
             "window_start": spec.window_start.isoformat(), "window_end": spec.window_end.isoformat(),
             "mechanism": spec.mechanism, "mechanism_params": json.dumps(record),
             "declared_engine": spec.engine or "",
             "awareness_time": spec.awareness_time.isoformat() if spec.awareness_time else "",
             "spec_path": str(spec.path) if spec.path else ""}
    for k, v in facts.items():
        con.execute("INSERT INTO incident VALUES ($k, $v)", {"k": k, "v": v})
    _insert_spec_facts(case, spec)
    if spec.path:
        # resolved: the file it named from this run's folder (a later stage may run from another one); the
        # reports show only `path`, named from the case folder (kvir.report.build.case_input_hashes)
        case.manifest["incident_spec"] = {"path": str(spec.path), "sha256": sha256_file(spec.path),
                                          "resolved": str(spec.path.resolve())}


def store_spec_facts(case: Case, spec: IncidentSpec) -> None:
    """Replace the case's hand events and [disclosure] with the spec's (kvir report --incident)."""
    _insert_spec_facts(case, spec)


def _insert_spec_facts(case: Case, spec: IncidentSpec) -> None:
    con = case.con
    case.run("case/spec_tables")
    for table in SPEC_FACT_TABLES:
        con.execute(f"DELETE FROM {table}")   # kvir's own table names
    for i, e in enumerate(spec.events):
        con.execute("INSERT INTO hand_events VALUES ($i, $ts, $title, $actor, $cat, $desc, $vis, $src)",
                    {"i": i, "ts": e.ts, "title": e.title, "actor": e.actor, "cat": e.category,
                     "desc": e.description, "vis": e.visibility, "src": f"incident.toml [[events]] #{i + 1}"})
    facts = dict(spec.disclosure)
    if spec.awareness_time is not None and "awareness_time" not in facts:
        facts["awareness_time"] = spec.awareness_time
    for k, v in facts.items():
        con.execute("INSERT INTO disclosure VALUES ($k, $v)", {"k": str(k), "v": json.dumps(_jsonable(v))})
    for k, v in spec.defect.items():
        con.execute("INSERT INTO defect VALUES ($k, $v)", {"k": str(k), "v": json.dumps(_jsonable(v))})
    sha = sha256_file(spec.path) if spec.path and spec.path.exists() else None
    case.manifest["report_spec_facts"] = {"path": str(spec.path) if spec.path else None, "sha256": sha,
                                          "events": len(spec.events), "disclosure_keys": sorted(facts)}


def ensure_spec_facts(case: Case, spec: str | Path | IncidentSpec | None = None) -> list[str]:
    """Make sure hand_events and disclosure exist in the case; returns warnings for the report.

    With `spec` given, its facts replace what the case holds. Without, the case's copy is used; if
    there is none, the spec that triage recorded is read, provided it still exists."""
    warnings: list[str] = []
    if spec is not None and case.read_only:
        raise KvirError("--incident stores the spec's events and [disclosure] in the case, which is opened "
                        "read-only here (--out): drop one of them", path=str(case.home or case.path))
    if spec is not None:
        s = spec if isinstance(spec, IncidentSpec) else load_spec(spec)
        store_spec_facts(case, s)
        return warnings
    if all(case.has(t) for t in SPEC_FACT_TABLES):
        return warnings
    if case.read_only:
        warnings.append("no hand events or [disclosure] keys in this case, and it is read-only: the documents "
                        "have neither (render into the case itself, or triage again, to store them)")
        return warnings
    recorded = case.manifest.get("incident_spec") or {}
    path = recorded.get("resolved") or recorded.get("path") or _incident_value(case, "spec_path")
    if not path or not Path(path).exists():
        case.run("case/spec_tables")
        warnings.append("no hand events or [disclosure] keys: the case holds none and the incident spec "
                        f"({path or 'not recorded'}) cannot be read; pass it with --incident")
        return warnings
    p = Path(path)
    sha = sha256_file(p)
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


def read_disclosure(case: Case, table: str = "disclosure") -> dict[str, Any]:
    """The [disclosure] (or [defect]) table as stored in the case (JSON values decoded)."""
    if table not in SPEC_FACT_TABLES[1:] or not case.has(table):
        return {}
    return {k: json.loads(v) for k, v in case.con.execute(f"SELECT key, value FROM {table} ORDER BY key").fetchall()}


def case_mechanism(case: Case) -> tuple[Mechanism, Any]:
    """The exposure mechanism triage recorded and its params (the mechanism's spec part restores them). A
    case that records none was not triaged by this kvir: triage it again."""
    name, raw = _incident_value(case, "mechanism"), _incident_value(case, "mechanism_params")
    if not name or raw is None:
        raise KvirError("the case records no mechanism (triaged by an older kvir, or not yet): run `kvir triage`",
                        path=str(case.home or case.path))
    m = mechanism(name)
    return m, m.spec.restore(json.loads(raw))
