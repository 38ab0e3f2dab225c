"""`kvir audit`: every node's KV pool against its context, its build and its safety flags.

    import kvir.audit
    result = kvir.audit.audit(["fleet/engine/"], inventory="fleet/inventory.toml")
    result.node_configs      # pandas: one row per node start (pool, context, limits, flags, evidence)
    result.findings          # pandas: rule_id, severity, status (fail | unknown), node, message, fix, evidence
    result.runtime_indicators
    result.fails("high")     # True when a failed finding is high or critical (the CLI's --fail-on)

With case=CASE_DIR (or an open Case) the tables are written into the case and the manifest records the
inputs (size, SHA-256) and the queries that ran. `load_node_configs(case, paths, ...)` is the same for
`kvir triage --startup`: it gives triage the pool in effect per node and time.

The findings are the incident's mechanism's (kvir.spec.mechanism; its audit part, kvir.audit.plugin):
`incident=` a spec (or its path), else the mechanism the case records, else the default mechanism. Every
registered mechanism adds its columns to node_configs whatever the incident's, so node_configs has the same
columns for every incident; only the findings differ.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.audit.inventory import Inventory, load_inventory
from kvir.core.files import sha256_file
from kvir.audit.rules import FIXED_SGLANG, RULES, RULES_BY_ID, SEVERITIES, SEVERITY_RANK, Rule

__all__ = ["audit", "load_node_configs", "AuditResult", "RULES", "RULES_BY_ID", "Rule", "SEVERITIES",
           "FIXED_SGLANG", "Inventory", "load_inventory"]

RESULT_TABLES = ("node_configs", "findings", "runtime_indicators", "node_exposure", "audit_files", "audit_problems")


@dataclass
class AuditResult:
    node_configs: Any                  # pandas DataFrames
    findings: Any
    runtime_indicators: Any
    node_exposure: Any
    files: Any
    problems: Any
    inputs: list[dict[str, Any]] = field(default_factory=list)
    case_path: Path | None = None
    seconds: float = 0.0

    def counts(self, include_unknown: bool = False) -> dict[str, int]:
        """Findings per severity (status fail; with include_unknown, unknowns too)."""
        f = self.findings
        if not include_unknown:
            f = f[f["status"] == "fail"]
        return {s: int((f["severity"] == s).sum()) for s in SEVERITIES}

    def fails(self, threshold: str | None, include_unknown: bool = False) -> bool:
        """True when a finding at or above `threshold` exists (the CLI's --fail-on gate)."""
        if threshold is None:
            return False
        if threshold not in SEVERITY_RANK:
            raise ValueError(f"unknown severity {threshold!r}; expected one of {', '.join(SEVERITIES)}")
        f = self.findings if include_unknown else self.findings[self.findings["status"] == "fail"]
        return bool((f["severity"].map(SEVERITY_RANK) >= SEVERITY_RANK[threshold]).any())

    def only_current(self) -> "AuditResult":
        """Each node's latest start and the findings about it (or about no start in particular)."""
        from dataclasses import replace

        nc = self.node_configs
        f = self.findings
        return replace(self, node_configs=nc[nc["is_current"].astype(bool)].reset_index(drop=True) if len(nc) else nc,
                       findings=f[f["is_current"].fillna(True).astype(bool)].reset_index(drop=True) if len(f) else f)

    def as_json(self) -> dict[str, Any]:
        from kvir.audit.render import to_json

        return to_json(self)

    def to_sarif(self) -> dict[str, Any]:
        from kvir.audit.sarif import to_sarif

        return to_sarif(self)


def _collect(con, plans, seconds: float, case_path: Path | None) -> AuditResult:
    frames = {t: con.execute(f"SELECT * FROM {t}").df() for t in RESULT_TABLES}
    inputs = [{"path": p.label, "size_bytes": p.size_bytes, "sha256": p.sha256, "node": p.node.name if p.node else None,
               "source_tz": p.tz_text, "skipped": p.skipped} for p in plans]
    return AuditResult(frames["node_configs"], frames["findings"], frames["runtime_indicators"],
                       frames["node_exposure"], frames["audit_files"], frames["audit_problems"], inputs,
                       case_path, seconds)


def _record_manifest(case, plans, inventory, seconds: float) -> None:
    from kvir import __version__

    inv_path = str(inventory.path if isinstance(inventory, Inventory) else inventory) if inventory else None
    counts = {t: case.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in RESULT_TABLES}
    sev = dict(case.con.execute("SELECT severity || '/' || status, count(*) FROM findings GROUP BY 1").fetchall())
    case.manifest["audit"] = {
        "kvir_version": __version__,
        "inventory": inv_path,
        "inventory_sha256": sha256_file(inv_path) if inv_path else None,
        "fixed_sglang": FIXED_SGLANG,
        "inputs": [{"path": p.label, "size_bytes": p.size_bytes, "sha256": p.sha256, "source_tz": p.tz_text,
                    "node": p.node.name if p.node else None, "skipped": p.skipped} for p in plans],
        "counts": counts,
        "findings": sev,
        "seconds": round(seconds, 3),
    }
    case.manifest.setdefault("timings", {})["audit_s"] = round(seconds, 3)


def _mechanism(case, incident) -> dict[str, Any]:
    """run_audit's mechanism and params: from the spec given, else what the case records (kvir triage's),
    else none (the default mechanism, no params)."""
    from kvir.case.spec_tables import case_mechanism
    from kvir.spec.model import IncidentSpec, load_spec

    if incident is not None:
        spec = incident if isinstance(incident, IncidentSpec) else load_spec(incident)
        return {"mechanism": spec.mech, "params": spec.params}
    if case is None or not case.has("incident"):
        return {}
    m, params = case_mechanism(case)
    return {"mechanism": m, "params": params}


def load_node_configs(case, paths: list[str | Path], *, inventory: str | Path | Inventory | None = None,
                      source_tz: str | None = None, year: int | None = None, reporter=None,
                      require_clock: bool = True, incident=None) -> AuditResult:
    """Parse start-up logs into an open case's node_configs (plus findings, runtime_indicators,
    node_exposure). The caller saves the manifest (triage does); the inputs are recorded in it.
    require_clock (kvir triage --startup, which joins start-up times with request times): host-local times
    need a zone (and vLLM's a year), refused otherwise; the audit itself needs no clock."""
    from kvir.audit.core import run_audit

    t0 = time.perf_counter()
    plans = run_audit(case.con, list(paths), inventory=inventory, source_tz=source_tz, year=year, log=case.log,
                      reporter=reporter, require_clock=require_clock, **_mechanism(case, incident))
    seconds = time.perf_counter() - t0
    _record_manifest(case, plans, inventory, seconds)
    return _collect(case.con, plans, seconds, case.path)


def audit(paths: list[str | Path], inventory: str | Path | Inventory | None = None, case=None,
          source_tz: str | None = None, *, year: int | None = None, progress: bool = False,
          current: bool = False, incident=None) -> AuditResult:
    """Audit start-up logs (files, folders or globs). `case`: a case folder or an open Case to write into;
    without it the audit runs in memory. `current`: the result keeps only each node's latest start and its
    findings (the case, when given, still holds every start). `incident`: the spec (or its path) whose
    mechanism's rules run; without it, the case's, else the default mechanism's."""
    result = _audit(paths, inventory, case, source_tz, year=year, progress=progress, incident=incident)
    return result.only_current() if current else result


def _audit(paths, inventory, case, source_tz, *, year, progress, incident) -> AuditResult:
    from kvir.case.store import Case, connect
    from kvir.core.progress import Reporter
    from kvir.core.sql import QueryLog
    from kvir.audit.core import run_audit

    t0 = time.perf_counter()
    reporter = Reporter(enabled=progress)
    if case is None:
        con = connect(":memory:")
        try:
            with reporter.session():
                plans = run_audit(con, list(paths), inventory=inventory, source_tz=source_tz, year=year,
                                  log=QueryLog(), reporter=reporter if progress else None,
                                  **_mechanism(None, incident))
            return _collect(con, plans, time.perf_counter() - t0, None)
        finally:
            con.close()
    own = not isinstance(case, Case)
    c = case if not own else (Case.open(case, staged=True) if (Path(case) / "case.duckdb").exists()
                              else Case.create(case))
    try:
        with reporter.session():
            result = load_node_configs(c, paths, inventory=inventory, source_tz=source_tz, year=year,
                                       reporter=reporter if progress else None, require_clock=False,
                                       incident=incident)
        _export(c)
        c.save_manifest()
        if own:
            c.commit()
        result.case_path = c.path
        return result
    finally:
        if own:
            c.close()


def _export(case) -> None:
    """CSV copies of the audit tables in the case folder (formula-safe, see kvir.case.export; each file's guard
    in manifest["csv"]: exact values in the case tables and `kvir audit --format json`)."""
    from kvir.case.export import write_csv

    guard = case.manifest.setdefault("csv", {})
    for t in ("node_configs", "findings", "runtime_indicators", "node_exposure"):
        write_csv(case.con, t, case.path / f"{t}.csv", guard=guard, exact=f"case.duckdb table {t}; kvir audit --format json")

