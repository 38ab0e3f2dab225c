"""Triage again into an existing case: what the other stages put there is kept while it still holds for the new
evidence, and everything else the case held is named with the reason it is gone (terminal and manifest).

    audit    node start-ups and findings come from start-up logs, which a triage does not read: kept as they
             were (tables, their CSV copies, the manifest's `audit` entry), unless this triage read start-up
             logs itself (--startup), whose node_configs then replace them
    probe    live probe runs: kept as they were
    replay   each replayed response kept while it still holds (queries/case/carry_replay.sql: still affected,
             same record, same decode-node history, same incident facts and start-ups); the others dropped,
             counted by reason; its CSV/Parquet copies rewritten from the rows kept
    reports  rendered from the previous triage's counts: removed (`kvir report` renders them again)

The result goes to the manifest as `carried_over` ({kept: [...], removed: [{what, why}]}) and is returned
for the command to print. A previous state that cannot be read is said, and nothing of it is kept.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from kvir.case.store import CASE_DB, Case, is_damage, read_manifest
from kvir.case.writer import MARKER, is_case
from kvir.core.errors import KvirError

AUDIT_TABLES = ("node_configs", "findings", "runtime_indicators", "node_exposure", "audit_files", "audit_problems",
                "audit_server_info")
PROBE_TABLES = ("probe_runs", "probe_events", "probe_findings")
REPLAY_TABLES = ("replay_results", "replay_exposure")
_PRIOR = "kvir_prior"


@dataclass
class Carried:
    kept: list[str] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    copied: list[str] = field(default_factory=list, repr=False)     # tables created here (dropped if it fails)

    def as_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "removed": self.removed}

    def __bool__(self) -> bool:
        return bool(self.kept or self.removed)


def carry_over(case: Case, previous: Path, written: set[str]) -> Carried:
    """Into the staged `case` (triage's tables and files written: `written` names its files), what still
    holds of the case at `previous`; recorded in case.manifest["carried_over"]."""
    out = Carried()
    previous = Path(previous).resolve()
    if not (previous / CASE_DB).is_file() or not is_case(previous):
        return out
    try:
        old_manifest = read_manifest(previous) or {}
    except KvirError as e:
        old_manifest = {}
        out.removed.append({"what": "manifest.json entries of other stages", "why": str(e)})
    con = case.con
    try:
        con.execute(f"ATTACH $p AS {_PRIOR} (READ_ONLY)", {"p": str(previous / CASE_DB)})
    except duckdb.Error as e:
        if not is_damage(e):
            raise
        out.removed.append({"what": "everything the previous case held", "why": f"its case.duckdb cannot be read ({e})"})
        return _record(case, out)
    try:
        prior = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = $d",
                                           {"d": _PRIOR}).fetchall()}
        whole = _carry_audit(case, prior, old_manifest, out) | _carry_probe(case, prior, out)
        replayed, partial = _carry_replay(case, prior, old_manifest, out)
    except (duckdb.Error, KvirError) as e:     # damage deeper in the old database than ATTACH reads
        if not is_damage(e.__cause__ or e):
            raise
        for t in out.copied:
            con.execute(f"DROP TABLE IF EXISTS {t}")                 # kvir's own table names
        for key in ("audit", "replay", "carried_queries"):
            case.manifest.pop(key, None)
        return _record(case, Carried(removed=[{"what": "everything the previous case held",
                                                "why": f"its case.duckdb cannot be read ({' '.join(str(e).split())[:200]})"}]))
    finally:
        con.execute(f"DETACH {_PRIOR}")
    _carry_files(case, previous, written, whole | (replayed - partial), partial, out)
    return _record(case, out)


def _record(case: Case, out: Carried) -> Carried:
    if out:
        case.manifest["carried_over"] = out.as_dict()
    return out


def _copy(case: Case, table: str, out: Carried) -> int:
    case.con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {_PRIOR}.{table}")   # kvir's table names
    out.copied.append(table)
    return case.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _carry_audit(case: Case, prior: set[str], manifest: dict[str, Any], out: Carried) -> set[str]:
    tables = [t for t in AUDIT_TABLES if t in prior]
    if not tables:
        return set()
    if case.has("node_configs"):
        out.removed.append({"what": "the audit's tables (" + ", ".join(tables) + ")",
                            "why": "this triage read start-up logs itself (--startup): its node_configs replace them"})
        return set()
    n = {t: _copy(case, t, out) for t in tables}
    for key in ("audit",):
        if key in manifest:
            case.manifest[key] = manifest[key]
    _keep_queries(case, manifest, "queries/audit/")
    out.kept.append(f"audit: {n.get('node_configs', 0):,} node start-ups, {n.get('findings', 0):,} findings "
                    "(from start-up logs, which a triage does not read)")
    return set(tables)


def _carry_probe(case: Case, prior: set[str], out: Carried) -> set[str]:
    tables = [t for t in PROBE_TABLES if t in prior]
    if not tables:
        return set()
    n = {t: _copy(case, t, out) for t in tables}
    counts = case.manifest.setdefault("counts", {})
    counts.update(n)
    out.kept.append(f"probe: {n.get('probe_runs', 0):,} live probe runs (independent of the logs)")
    return set(tables)


def _carry_replay(case: Case, prior: set[str], manifest: dict[str, Any], out: Carried) -> tuple[set[str], set[str]]:
    """The replayed responses that still hold; returns the replay tables kept, and those kept only in part."""
    if "replay_results" not in prior:
        return set(), set()
    con = case.con
    configs_changed = _configs_changed(case, prior)
    case.run("case/carry_replay", {"configs_changed": configs_changed}, inputs={"prior": _PRIOR})
    gone = con.execute("SELECT why_not, count(*) FROM replay_carry WHERE why_not IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1").fetchall()
    kept = con.execute("SELECT count(*) FROM replay_carry WHERE why_not IS NULL").fetchone()[0]
    total = kept + sum(n for _, n in gone)
    for why, n in gone:
        out.removed.append({"what": f"replay results of {n:,} of the {total:,} replayed responses", "why": why})
    if not kept:
        return set(), set()
    con.execute(f"CREATE OR REPLACE TABLE replay_results AS SELECT * FROM {_PRIOR}.replay_results "
                "WHERE request_id IN (SELECT request_id FROM replay_carry WHERE why_not IS NULL)")
    out.copied += ["replay_results", "replay_exposure"]
    if "replay_exposure" in prior:
        con.execute(f"CREATE OR REPLACE TABLE replay_exposure AS SELECT * FROM {_PRIOR}.replay_exposure "
                    "WHERE reader_request_id IN (SELECT request_id FROM replay_carry WHERE why_not IS NULL)")
    if "replay" in manifest:
        case.manifest["replay"] = {**manifest["replay"], "carried_over": {"kept": kept, "dropped": total - kept}}
    _keep_queries(case, manifest, "queries/replay/")
    out.kept.append(f"replay: {kept:,} of {total:,} replayed responses (still affected, same record and node history)")
    tables = {t for t in REPLAY_TABLES if t in prior}
    return tables, tables if kept < total else set()


def _configs_changed(case: Case, prior: set[str]) -> bool:
    if ("node_configs" in prior) != case.has("node_configs"):
        return False if not case.has("node_configs") else True   # carried over as they were, or new ones
    if "node_configs" not in prior:
        return False
    return case.con.execute(
        f"SELECT count(*) FROM ((SELECT * FROM {_PRIOR}.node_configs EXCEPT SELECT * FROM node_configs) "
        f"UNION ALL (SELECT * FROM node_configs EXCEPT SELECT * FROM {_PRIOR}.node_configs))").fetchone()[0] > 0


def _keep_queries(case: Case, manifest: dict[str, Any], prefix: str) -> None:
    """The previous manifest's record of the queries that made carried tables (their provenance): the stage's
    shared ones (`prefix`, e.g. queries/replay/) and any mechanism's of that stage (queries/mechanisms/<m>/replay/)."""
    stage = prefix.removeprefix("queries/")
    old = [q for q in manifest.get("queries", []) if str(q.get("query", "")).startswith(prefix)
           or re.match(rf"queries/mechanisms/[a-z0-9_]+/{re.escape(stage)}", str(q.get("query", "")))]
    if old:
        case.manifest.setdefault("carried_queries", []).extend(old)


def _carry_files(case: Case, previous: Path, written: set[str], whole: set[str], partial: set[str],
                 out: Carried) -> None:
    """Exports of the tables carried: copied when the table came whole, rewritten from the rows kept when in
    part. Every other file of the previous case that this triage did not write again is named as removed."""
    from kvir.case.export import write_csv, write_parquet

    for f in sorted(previous.iterdir()):
        name = f.name
        if name in written or name in (CASE_DB, MARKER) or name.startswith(".") or name == "tmp":
            continue
        table = name.rsplit(".", 1)[0]
        if table in whole | partial and f.suffix in (".csv", ".parquet"):
            dest = case.path / name
            if table in partial and f.suffix == ".csv":
                header = f.open(encoding="utf-8", errors="replace").readline().strip().split(",")
                write_csv(case.con, table, dest, columns=[c for c in header if c])
            elif table in partial:
                write_parquet(case.con, f"SELECT * FROM {table}", dest)
            else:
                shutil.copy2(f, dest)
            continue
        why = ("rendered from the previous triage; `kvir report` renders them from this one" if name == "reports"
               else "written by an earlier run and not by this one")
        out.removed.append({"what": name + ("/" if f.is_dir() else ""), "why": why})
