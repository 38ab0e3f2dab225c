"""`kvir triage`: which responses were exposed, to whom, on which nodes; counted correctly.

    result = kvir.triage("incident.toml", ["logs/"], out="case/")
    result.affected        # pandas DataFrame, one row per affected response
    result.summary         # the headline counts
    result.case            # the open Case, for custom queries

Affected = the model matches (exact, after alias mapping) AND the request started inside the window
(inclusive) AND the trigger rule holds AND the client got a served response. Everything else that a
rule touches is counted apart (rejected, failed, aborted, undecidable), and the other rule's additions
and drops are counted so the public and the engine thresholds can be compared.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.case.carry import Carried, carry_over
from kvir.case.store import Case
from kvir.case.spec_tables import record_spec
from kvir.core.errors import InputError, TooManyBadLines
from kvir.case.export import write_csv, write_parquet
from kvir.ingest.lake import attach_local, lake_paths
from kvir.ingest.run import IngestOptions, ingest, plan_inputs, refuse_naive_without_zone
from kvir.core.progress import Reporter
from kvir.spec.mechanism import PREFIX_CACHE
from kvir.spec.model import IncidentSpec, load_spec
from kvir.triage.models import engine_of_case, model_inventory, record_engine
from kvir.triage.prefix import PREFIX_QUERIES, PrefixCacheRule, prefix_summary
from kvir.triage.summary import TriageOptions, TriageSummary

TRIAGE_QUERIES = ("triage/hits", "triage/affected", "triage/excluded", "triage/accounts", "triage/nodes")


@dataclass
class TriageResult:
    case: Case
    spec: IncidentSpec
    summary: dict[str, Any]
    sources: list[dict[str, Any]]
    outputs: dict[str, Path] = field(default_factory=dict)
    carried: Carried = field(default_factory=Carried)    # what a case triaged again kept, and what it lost

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
    and the query engine: `engine="spark"` runs the same queries on Spark over canonical datasets
    (`kvir ingest` shards; local folders or URIs), with `spark_master` and `spark_conf` for the session
    (kvir.triage.spark). The DuckDB engine reads such datasets too, when every path is one."""
    o = options or TriageOptions.of(**kw)
    return _triage(incident, list(paths or []), Path(out), o)


def _triage(incident: str | Path | IncidentSpec, paths: list[str | Path], out: Path, o: TriageOptions) -> TriageResult:
    format, source_tz, served_model, year, max_bad_lines, keep_raw, hash = (
        o.format, o.source_tz, o.served_model, o.year, o.max_bad_lines, o.keep_raw, o.hash)
    progress, memory_limit, threads, startup, inventory = o.progress, o.memory_limit, o.threads, list(o.startup), o.inventory
    join_tolerance_s, max_line_bytes, engine, spark_master, spark_conf = (
        o.join_tolerance_s, o.max_line_bytes, o.engine, o.spark_master, o.spark_conf)
    t0 = time.perf_counter()
    if hash not in ("auto", "full", "footer", "none"):
        raise InputError(f"--hash must be auto, full, footer or none, not {hash!r}")
    spec = incident if isinstance(incident, IncidentSpec) else load_spec(incident)
    opts = IngestOptions(format=format, source_tz=source_tz, served_model=served_model, year=year,
                         keep_raw=keep_raw, hash=hash)
    if join_tolerance_s is not None:
        opts.join_tolerance_s = float(join_tolerance_s)
    if max_line_bytes is not None:
        if max_line_bytes < 1024:
            raise InputError(f"--max-line-bytes must be at least 1024, not {max_line_bytes}")
        opts.max_line_bytes = int(max_line_bytes)
    if engine not in ("duckdb", "spark"):
        raise InputError(f"--engine must be duckdb or spark, not {engine!r}")
    prefix = spec.mechanism == PREFIX_CACHE
    if prefix and engine == "spark":
        raise InputError("the prefix-cache mechanism is triaged with DuckDB only (its queries have no Spark "
                         "twins yet): run without --engine spark (a lake of canonical requests is read in place)")
    lakes = lake_paths(list(paths or []), spark=engine == "spark")
    plan = plan_inputs(list(paths or []), spec, opts) if lakes is None else None
    sources = plan.sources if plan else []
    lake = None
    case = Case.create(out, memory_limit=memory_limit, threads=threads)
    reporter = Reporter(enabled=progress)
    try:
        with reporter.session():
            record_spec(case, spec)
            if plan is not None:
                ingest(case, sources, opts, reporter, skipped=plan.skipped)
                refuse_naive_without_zone(case)
            elif engine == "duckdb":   # canonical datasets: normalised already, read in place
                lake = attach_local(case, lakes)
            pool_in_effect = False
            if startup:
                # Start-up logs give each node's pool over time: triage then uses, per request, the pool
                # in effect on its node (kvir.audit writes node_configs into the case).
                from kvir.audit import load_node_configs

                load_node_configs(case, list(startup), inventory=inventory, source_tz=source_tz, year=year)
                pool_in_effect = True
            params = spec.query_params()
            bound: list = []            # (engine choice, trigger), once the evidence is in the case
            queries = ("triage/hits_pool_in_effect",) + TRIAGE_QUERIES[1:] if pool_in_effect else TRIAGE_QUERIES
            queries = PREFIX_QUERIES if prefix else queries
            if engine == "spark":      # the lake's side tables (its sources: the evidence of the engine) arrive there
                from kvir.triage.spark import triage_on_spark

                lake = reporter.run("triage on Spark", lambda: triage_on_spark(
                    case, lakes, queries, params, master=spark_master, conf=spark_conf,
                    prepare=lambda c: bound.append(_bind_engine(c, spec, params))))
            else:
                bound.append(_bind_engine(case, spec, params))
            with case.transaction():     # the small tables of a triage: one commit, not one each
                if engine != "spark":
                    for name in queries:
                        reporter.run(name.split("/")[1], lambda n=name: case.run(n, params), con=case.con)
                # aggregate finding: what Prometheus histograms imply (bounds, never requests)
                case.run("triage/aggregate_bounds", params)
                params["requests_total"], params["in_scope"] = (_scope_counts(case, params) if lake is None
                                                                else (lake.requests, None))
                case.run("triage/summary", params)   # the case table triage_summary: what the reports state too
                if prefix:
                    case.run("triage/prefix_cache_summary")
            row = case.con.execute("SELECT * FROM triage_summary").fetchall()
            cols = [d[0] for d in case.con.description]
        choice, trigger = bound[0]
        summary = _summary(spec, trigger, dict(zip(cols, row[0])))
        summary["serving_engine"] = {"engine": choice.name, "source": choice.source}
        summary["models_seen"] = model_inventory(case, spec, summary)
        if prefix:
            summary["prefix_cache"] = prefix_summary(case)
        else:
            summary["threshold"] = ("pool in effect per node and time (node_configs from start-up logs)"
                                    if pool_in_effect else f"one global pool: {spec.params.pool_tokens:,} tokens")
        if pool_in_effect:   # how many flagged requests each threshold judged (a fallback is said, not hidden)
            summary["threshold_sources"] = dict(case.con.execute(
                "SELECT threshold_source, count(*) FROM triage_hits GROUP BY 1 ORDER BY 1").fetchall())
        counts = _source_rows(case)
        outputs = _export(case, keep_raw)
        # a case triaged again keeps what its other stages made while it still holds (kvir.case.carry)
        carried = carry_over(case, Path(out), set(outputs) | {"manifest.json", "summary.json", "compiled"})
        summary["inputs_skipped"] = (len(plan.skipped) if plan else
                                     case.con.execute("SELECT count(*) FROM skipped_inputs").fetchone()[0])
        summary["engine"] = engine
        summary["seconds"] = round(time.perf_counter() - t0, 3)
        case.manifest["triage"] = {"summary": summary, "rule": summary["rule"], "other_rule": summary["other_rule"]}
        case.manifest["counts"] = {"sources": counts}
        case.manifest["timings"]["triage_s"] = summary["seconds"]
        case.manifest["outputs"] = {k: str(v.name) for k, v in outputs.items()}
        case.save_manifest()
        (case.path / "summary.json").write_text(json.dumps({"summary": summary, "sources": counts},
                                                           indent=2, default=str) + "\n")
        case.commit()      # the complete new case replaces the old one in one step
    except BaseException:
        case.close()       # the staged work is dropped: an earlier case at `out` stays whole
        raise
    result = TriageResult(case, spec, summary, counts, {k: case.path / v.name for k, v in outputs.items()}, carried)
    quarantined = sum(s["quarantined"] for s in counts)
    if max_bad_lines is not None and quarantined > max_bad_lines:
        raise TooManyBadLines(f"{quarantined} records quarantined, more than --max-bad-lines {max_bad_lines} "
                              f"(see {case.path / 'quarantine.csv'})")
    return result


def _bind_engine(case: Case, spec: IncidentSpec, params: dict[str, Any]) -> tuple:
    """The serving engine (the spec's, else the evidence's: kvir.triage.models) into the case and into the
    queries' parameters with the rule texts; the engine rule without an engine is refused."""
    choice = engine_of_case(case, spec)
    if spec.mechanism == PREFIX_CACHE:
        rule = PrefixCacheRule.of(spec)
        record_engine(case, choice)
        params.update(rule.query_params(), rule_text=rule.describe(), other_rule_text=None,
                      condition_text=rule.condition())
        return choice, rule
    trigger = spec.params.with_engine(choice.name)
    if not trigger.available():
        raise InputError(f"[trigger] rule = \"engine\" needs the serving engine, and {choice.source}: set "
                         f"[trigger] engine in {spec.path or 'incident.toml'}, or use rule = \"public\"")
    record_engine(case, choice)
    params.update(trigger.query_params(), rule_text=trigger.describe(),
                  other_rule_text=trigger.describe(trigger.other_rule), condition_text=trigger.condition())
    return choice, trigger


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


def _summary(spec: IncidentSpec, trigger, s: dict[str, Any]) -> dict[str, Any]:
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in s.items()}
    out.update({
        "incident": spec.id,
        "models": list(spec.models),
        "window": [spec.window_start.isoformat(), spec.window_end.isoformat()],
        "mechanism": spec.mechanism,
        "rule": trigger.describe(),
        "other_rule": trigger.describe(trigger.other_rule) if spec.mechanism != PREFIX_CACHE else None,
    })
    return out


def _source_rows(case: Case) -> list[dict[str, Any]]:
    from kvir.ingest.run import source_counts

    return source_counts(case)["sources"]


def _export(case: Case, keep_raw: bool) -> dict[str, Path]:
    """The case's files: formula-safe CSVs, each with its guard recorded in manifest["csv"], and Parquet twins
    (exact values, no guard) of the tables matched on downstream: affected, accounts, excluded, nodes."""
    p = case.path
    case.run("triage/source_summary")
    guard = case.manifest.setdefault("csv", {})      # each CSV's guard and where its exact values are
    out = {}
    for table in ("affected", "accounts", "nodes", "excluded"):
        out[f"{table}.parquet"] = write_parquet(case.con, f"SELECT * FROM {table}", p / f"{table}.parquet")
        out[f"{table}.csv"] = write_csv(case.con, table, p / f"{table}.csv", guard=guard, exact=f"{table}.parquet")
    out["conflicts.csv"] = write_csv(case.con, "conflicts", p / "conflicts.csv", guard=guard)
    if case.has("prefix_cache_counts"):        # the prefix-cache mechanism's verdicts per instance and tenant
        out["prefix_cache_counts.csv"] = write_csv(case.con, "prefix_cache_counts", p / "prefix_cache_counts.csv", guard=guard)
    out["sources.csv"] = write_csv(case.con, "source_summary", p / "sources.csv", guard=guard)
    out["quarantine.csv"] = write_csv(case.con, "quarantine", p / "quarantine.csv", guard=guard,
                                      columns=["source_file", "source_line", "format", "reason"] + (["raw"] if keep_raw else []))
    # joins of candidates / identities, and the aggregate finding from histograms: only when there are any
    for name, table in (("evidence_joins.csv", "evidence_joins"), ("aggregate_findings.csv", "aggregate_findings"),
                        ("skipped.csv", "skipped_inputs")):
        if case.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]:   # kvir table names
            out[name] = write_csv(case.con, table, p / name, guard=guard)
    return out
