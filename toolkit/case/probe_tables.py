"""Live probe runs inside the case (tables: queries/case/probe_tables.sql). kvir.probe hands over plain
rows; this module owns the tables and binds every value. Re-recording a run id replaces that run."""
from __future__ import annotations

import datetime as dt
from typing import Any

from kvir.case.store import Case
from kvir.core.jsonable import dumps

EVENT_COLUMNS = ("seq", "check", "purpose", "label", "tenant", "request_id", "response_id", "path", "stream",
                 "target_tokens", "sent_tokens", "exact", "max_tokens", "http_status", "attempts", "error",
                 "error_kind", "prompt_tokens", "completion_tokens", "latency_s", "prompt_sha256", "output_sha256",
                 "output_chars", "cached_tokens")


def _ts(iso: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")) if iso else None


def record_probe(case: Case, run: dict[str, Any], events: list[dict[str, Any]], findings: list[dict[str, Any]]) -> None:
    con = case.con
    case.run("case/probe_tables")
    rid = run["run_id"]
    for table in ("probe_runs", "probe_events", "probe_findings"):
        con.execute(f"DELETE FROM {table} WHERE run_id = $r", {"r": rid})   # kvir's own table names
    start = _ts(run.get("started_at"))
    con.execute("INSERT INTO probe_runs VALUES ($run_id, $started, $ended, $endpoint, $model, $engine, $version, "
                "$verdict, $reason, $sent, $checks)",
                {"run_id": rid, "started": start, "ended": _ts(run.get("ended_at")), "endpoint": run["endpoint"],
                 "model": run.get("model"), "engine": run.get("engine"), "version": run.get("version"),
                 "verdict": run["verdict"], "reason": run["reason"], "sent": run.get("requests_sent"),
                 "checks": dumps(run.get("checks") or {})})
    placeholders = ", ".join(f"${i}" for i in range(1, len(EVENT_COLUMNS) + 3))
    rows = []
    for e in events:
        ts = start + dt.timedelta(seconds=float(e.get("started_s") or 0)) if start else None
        rows.append([rid, e.get("seq"), ts, *(e.get(c) for c in EVENT_COLUMNS[1:])])
    if rows:
        con.executemany(f"INSERT INTO probe_events VALUES ({placeholders})", rows)
    for i, f in enumerate(findings, 1):
        con.execute("INSERT INTO probe_findings VALUES ($r, $seq, $check, $rule, $sev, $msg, $ids, $ev)",
                    {"r": rid, "seq": i, "check": f["check"], "rule": f["rule_id"], "sev": f["severity"],
                     "msg": f["message"], "ids": list(f.get("request_ids") or []), "ev": dumps(f.get("evidence") or {})})
    counts = case.manifest.setdefault("counts", {})
    counts["probe_runs"] = con.execute("SELECT count(*) FROM probe_runs").fetchone()[0]
    counts["probe_events"] = con.execute("SELECT count(*) FROM probe_events").fetchone()[0]
    counts["probe_findings"] = con.execute("SELECT count(*) FROM probe_findings").fetchone()[0]
