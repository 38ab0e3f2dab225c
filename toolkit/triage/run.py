"""`kvir triage`: which responses were exposed, to whom, on which nodes; counted correctly.

    result = kvir.triage("incident.toml", ["logs/"], out="case/")
    result.affected        # pandas DataFrame, one row per affected response
    result.summary         # the headline counts
    result.case            # the open Case, for custom queries

Affected = the model matches (exact, after alias mapping) AND the request started inside the window
(inclusive) AND the incident mechanism's rule holds AND the client got a served response. The mechanism
(the spec's; kvir.spec.mechanism) gives its rule, its questions and its own counts through its triage part
(kvir.triage.plugin.TriagePart); the columns every report reads and the headline are shared. Everything
else a rule touches is counted apart (rejected, failed, aborted, undecidable), never dropped.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kvir.case.carry import Carried, carry_over
from kvir.case.export import write_csv, write_parquet
from kvir.case.spec_tables import record_spec
from kvir.case.store import Case
from kvir.core.errors import InputError, TooManyBadLines
from kvir.core.jsonable import jsonable
from kvir.core.progress import Reporter
from kvir.ingest.lake import LakeInfo, attach_local, lake_paths
from kvir.ingest.run import IngestOptions, ingest, plan_inputs, refuse_naive_without_zone
from kvir.rules.engines import EngineChoice
from kvir.spec.model import IncidentSpec, load_spec
from kvir.triage.models import engine_of_case, model_inventory, record_engine
from kvir.triage.plugin import TriagePart, triage_part
from kvir.triage.summary import TriageOptions, TriageSummary


@dataclass
class TriageResult:
    case: Case
    spec: IncidentSpec
    summary: dict[str, Any]
    sources: list[dict[str, Any]]
    outputs: dict[str, Path] = field(default_factory=dict)
    carried: Carried = field(default_factory=Carried)    # what a case triaged again kept, and what it lost
    mechanism_summary: Any = None   # the mechanism's typed part of the summary (summary[its folder], as JSON)

    @property
    def path(self) -> Path:
        return self.case.path

    @property
    def counts(self) -> TriageSummary:
        """The headline counts, typed (the same row as `summary`)."""
        return TriageSummary.from_row(self.summary)

    @property
    def affected(self):
        return self.case.df("affected")

    @property
    def accounts(self):
        return self.case.df("accounts")

    @property
    def nodes(self):
        return self.case.df("nodes")

    @property
    def quarantine(self):
        return self.case.df("SELECT source_file, source_line, format, reason FROM quarantine ORDER BY source_id, source_line")

    def to_arrow(self, table: str = "affected"):
        return self.case.arrow(table)

    def as_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "sources": self.sources,
                "outputs": {k: str(v) for k, v in self.outputs.items()}, "carried_over": self.carried.as_dict()}


def triage(incident: str | Path | IncidentSpec, paths: list[str | Path] | None = None, *, out: str | Path,
           options: TriageOptions | None = None, **kw: Any) -> TriageResult:
    """Run a triage into the case folder `out` and return its result (see module docstring).

    `options` (kvir.triage.summary.TriageOptions), or its fields as keywords: how inputs are read
    (format, source_tz, served_model, year, max_line_bytes, join_tolerance_s, keep_raw, hash), start-up
    logs that give each node's pool (startup, inventory), limits (max_bad_lines, memory_limit, threads)
    and the query engine: `query_engine="spark"` runs the same queries on Spark over canonical datasets
    (`kvir ingest` shards; local folders or URIs), with `spark_master` and `spark_conf` for the session
    (kvir.triage.spark). The DuckDB engine reads such datasets too, when every path is one."""
    o = options or TriageOptions.of(**kw)
    return _triage(incident, list(paths or []), Path(out), o)


def _triage(incident: str | Path | IncidentSpec, paths: list[str | Path], out: Path, o: TriageOptions) -> TriageResult:
    t0 = time.perf_counter()
    opts = _ingest_options(o)
    spec = incident if isinstance(incident, IncidentSpec) else load_spec(incident)
    part = triage_part(spec.mechanism)
    if o.query_engine not in ("duckdb", "spark"):
        raise InputError(f"--engine must be duckdb or spark, not {o.query_engine!r}")
    if o.query_engine == "spark" and not part.spark:
        raise InputError(f"the {spec.mechanism} mechanism is triaged with DuckDB only (its queries have no Spark "
                         "twins yet): run without --engine spark (a lake of canonical requests is read in place)")
    lakes = lake_paths(list(paths), spark=o.query_engine == "spark")
    plan = plan_inputs(list(paths), spec, opts) if lakes is None else None
    case = Case.create(out, memory_limit=o.memory_limit, threads=o.threads)
    reporter = Reporter(enabled=o.progress)
    try:
        with reporter.session():
            run = _Run(case, spec, part, o, spec.query_params())
            lake = _read(run, plan, lakes, opts, reporter)
            lake = _ask(run, lakes, lake, reporter)
        summary, own = _summary(run)
        summary["inputs_skipped"] = (len(plan.skipped) if plan else
                                     case.con.execute("SELECT count(*) FROM skipped_inputs").fetchone()[0])
        summary["query_engine"] = o.query_engine
        summary["seconds"] = round(time.perf_counter() - t0, 3)
        counts, outputs, carried = _write(case, Path(out), summary, part, o.keep_raw)
        case.commit()      # the complete new case replaces the old one in one step
    except BaseException:
        case.close()       # the staged work is dropped: an earlier case at `out` stays whole
        raise
    result = TriageResult(case, spec, summary, counts, {k: case.path / v.name for k, v in outputs.items()}, carried,
                          own)
    quarantined = sum(s["quarantined"] for s in counts)
    if o.max_bad_lines is not None and quarantined > o.max_bad_lines:
        raise TooManyBadLines(f"{quarantined} records quarantined, more than --max-bad-lines {o.max_bad_lines} "
                              f"(see {case.path / 'quarantine.csv'})")
    return result


@dataclass
class _Run:
    """One triage while its questions run: the case, the spec and its mechanism's part, the options, the
    parameters the queries bind, and what the evidence decided on the way."""

    case: Case
    spec: IncidentSpec
    part: TriagePart
    o: TriageOptions
    params: dict[str, Any]
    pool_in_effect: bool = False
    choice: EngineChoice | None = None     # the serving engine, once the evidence is in the case
    rule: Any = None                       # the mechanism's rule bound to it (kvir.triage.plugin.TriageRule)

    @property
    def folder(self) -> str:
        return self.spec.mech.folder


def _ingest_options(o: TriageOptions) -> IngestOptions:
    if o.hash not in ("auto", "full", "footer", "none"):
        raise InputError(f"--hash must be auto, full, footer or none, not {o.hash!r}")
    opts = IngestOptions(format=o.format, source_tz=o.source_tz, served_model=o.served_model, year=o.year,
                         keep_raw=o.keep_raw, hash=o.hash)
    if o.join_tolerance_s is not None:
        opts.join_tolerance_s = float(o.join_tolerance_s)
    if o.max_line_bytes is not None:
        if o.max_line_bytes < 1024:
            raise InputError(f"--max-line-bytes must be at least 1024, not {o.max_line_bytes}")
        opts.max_line_bytes = int(o.max_line_bytes)
    return opts


def _read(run: _Run, plan, lakes: list[str] | None, opts: IngestOptions, reporter: Reporter) -> LakeInfo | None:
    """The evidence into the case: the spec, the inputs (normalised, or canonical datasets read in place)
    and the start-up logs. Returns the lake attached (None: logs were read)."""
    case, o, lake = run.case, run.o, None
    record_spec(case, run.spec)
    if plan is not None:
        ingest(case, plan.sources, opts, reporter, skipped=plan.skipped)
        refuse_naive_without_zone(case)
    elif o.query_engine == "duckdb":   # canonical datasets: normalised already, read in place
        lake = attach_local(case, lakes)
    if o.startup:
        # Start-up logs give each node's pool over time: triage then uses, per request, the pool
        # in effect on its node (kvir.audit writes node_configs into the case).
        from kvir.audit import load_node_configs

        load_node_configs(case, list(o.startup), inventory=o.inventory, source_tz=o.source_tz, year=o.year)
        run.pool_in_effect = True
    return lake


def _ask(run: _Run, lakes: list[str] | None, lake: LakeInfo | None, reporter: Reporter) -> LakeInfo | None:
    """The mechanism's questions (on Spark, or here), then the headline and its own counts, in the case."""
    case, part, params, o = run.case, run.part, run.params, run.o
    queries = part.queries(run.pool_in_effect)
    if o.query_engine == "spark":      # the lake's side tables (its sources: the evidence of the engine) arrive there
        from kvir.triage.spark import triage_on_spark

        lake = reporter.run("triage on Spark", lambda: triage_on_spark(
            case, lakes, queries, params, master=o.spark_master, conf=o.spark_conf,
            prepare=lambda c: _bind(run), mechanism=run.folder))
    else:
        _bind(run)
    with case.transaction():     # the small tables of a triage: one commit, not one each
        if o.query_engine != "spark":
            for name in queries:
                reporter.run(name.split("/")[1], lambda n=name: case.run(n, params, mechanism=run.folder), con=case.con)
        params["requests_total"], params["in_scope"] = (_scope_counts(case, params) if lake is None
                                                        else (lake.requests, None))
        case.run("triage/summary", params, mechanism=run.folder)   # the case table triage_summary: the reports' too
        for name in part.summary_queries:
            case.run(name, params, mechanism=run.folder)
    return lake


def _bind(run: _Run) -> None:
    """The serving engine (the spec's, else the evidence's: kvir.triage.models) into the case, and the
    mechanism's rule bound to it into the queries' parameters (its part refuses a rule that needs an engine
    the case cannot name)."""
    run.choice = engine_of_case(run.case, run.spec)
    run.rule = run.part.rule(run.spec, run.choice)
    record_engine(run.case, run.choice)
    run.params.update(run.rule.query_params(), rule_text=run.rule.describe(), listed=list(run.part.listed))


def _scope_counts(case: Case, params: dict[str, Any]) -> tuple[int, int | None]:
    """Requests in all, and of the model inside the window. When `requests` reads columnar inputs queried
    in place, the total comes from the source counts (less the records merged into others) and the
    in-window count is not taken (it would cost a scan of every in-window row group; the affected set
    never needs it)."""
    con = case.con
    is_table = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'requests'").fetchone()[0] > 0
    in_place = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'records_src%'").fetchone()[0] > 0
    if is_table or not in_place:   # a table, or a view over the records read into the case: one scan
        total, in_scope = case.run("triage/in_scope", params, fetch=True)[0]
        return total, in_scope
    total = con.execute("SELECT coalesce(sum(n), 0) FROM source_counts WHERE kind = 'request'").fetchone()[0]
    if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'requests_grouped'").fetchone()[0]:
        total -= con.execute("SELECT coalesce(sum(n_records) - count(*), 0) FROM requests_grouped").fetchone()[0]
    return int(total), None


def _summary(run: _Run) -> tuple[dict[str, Any], Any]:
    """The summary (summary.json's): the headline row, the incident, the rule, the engine and the model names,
    and the mechanism's typed part under its folder's name. Returns it and that part."""
    case, spec = run.case, run.spec
    cur = case.con.execute("SELECT * FROM triage_summary")
    row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}
    out.update({
        "incident": spec.id,
        "models": list(spec.models),
        "window": [spec.window_start.isoformat(), spec.window_end.isoformat()],
        "mechanism": spec.mechanism,
        "rule": run.rule.describe(),
        "other_rule": run.rule.other(),
        "serving_engine": {"engine": run.choice.name, "source": run.choice.source},
    })
    out["models_seen"] = model_inventory(case, spec, out)
    own = run.part.summary(case, run.rule, run.pool_in_effect)
    out[run.folder] = jsonable(asdict(own))
    return out, own


def _write(case: Case, out: Path, summary: dict[str, Any], part: TriagePart,
           keep_raw: bool) -> tuple[list[dict[str, Any]], dict[str, Path], Carried]:
    """The case's files and manifest, and what a case triaged again kept (kvir.case.carry)."""
    counts = _source_rows(case)
    outputs = _export(case, keep_raw, part.exports)
    carried = carry_over(case, out, set(outputs) | {"manifest.json", "summary.json", "compiled"})
    case.manifest["triage"] = {"summary": summary, "rule": summary["rule"], "other_rule": summary["other_rule"]}
    case.manifest["counts"] = {"sources": counts}
    case.manifest["timings"]["triage_s"] = summary["seconds"]
    case.manifest["outputs"] = {k: str(v.name) for k, v in outputs.items()}
    case.save_manifest()
    (case.path / "summary.json").write_text(json.dumps({"summary": summary, "sources": counts},
                                                       indent=2, default=str) + "\n")
    return counts, outputs, carried


def _source_rows(case: Case) -> list[dict[str, Any]]:
    from kvir.ingest.run import source_counts

    return source_counts(case)["sources"]


def _export(case: Case, keep_raw: bool, own: tuple[str, ...]) -> dict[str, Path]:
    """The case's files: formula-safe CSVs, each with its guard recorded in manifest["csv"], and Parquet twins
    (exact values, no guard) of the tables matched on downstream: affected, accounts, excluded, nodes; then
    the mechanism's own tables (`own`: its part's exports) as CSV."""
    p = case.path
    case.run("triage/source_summary")
    guard = case.manifest.setdefault("csv", {})      # each CSV's guard and where its exact values are
    out = {}
    for table in ("affected", "accounts", "nodes", "excluded"):
        out[f"{table}.parquet"] = write_parquet(case.con, f"SELECT * FROM {table}", p / f"{table}.parquet")
        out[f"{table}.csv"] = write_csv(case.con, table, p / f"{table}.csv", guard=guard, exact=f"{table}.parquet")
    out["conflicts.csv"] = write_csv(case.con, "conflicts", p / "conflicts.csv", guard=guard)
    for table in own:
        out[f"{table}.csv"] = write_csv(case.con, table, p / f"{table}.csv", guard=guard)
    out["sources.csv"] = write_csv(case.con, "source_summary", p / "sources.csv", guard=guard)
    out["quarantine.csv"] = write_csv(case.con, "quarantine", p / "quarantine.csv", guard=guard,
                                      columns=["source_file", "source_line", "format", "reason"] + (["raw"] if keep_raw else []))
    # joins of candidates / identities, the aggregate finding a mechanism's queries made (bounds from
    # histograms), skipped inputs: only when there are any
    for name, table in (("evidence_joins.csv", "evidence_joins"), ("aggregate_findings.csv", "aggregate_findings"),
                        ("skipped.csv", "skipped_inputs")):
        if case.has(table) and case.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]:   # kvir tables
            out[name] = write_csv(case.con, table, p / name, guard=guard)
    return out
