"""`kvir triage --engine spark`: the triage questions of queries/ on Spark, over canonical datasets.

    kvir.triage("incident.toml", ["s3a://lake/"], out="case/", query_engine="spark", spark_master="yarn")

The lakes (kvir.ingest.lake; local folders or any URI Spark reads) become the temporary view `requests`;
the case's small spec tables (account_rules, node_configs when start-up logs were given) are shipped to
Spark as DataFrames; each query of the mechanism's list (its triage part's, each found in its folder first:
kvir.core.sql.load) runs in its Spark form (kvir.triage.transpile: values bound as Spark named parameters,
never formatted in), its table kept as a cached temporary view for the next query and brought back
through Arrow into the same DuckDB case (a temporary table there too when the DuckDB file makes one).
Audit, replay and reports then read the case as after a DuckDB triage; for a local lake the case's
`requests` is a DuckDB view over the same files (kvir.ingest.lake.requests_view). The manifest records the
query engine, its settings and, per query, the Spark SQL that ran with its parameters.

The session: an active one is reused (a notebook's, spark-submit's); else one is built with `master`
(none: Spark's own default, local[*] from plain Python) and `conf`. kvir always sets the session time
zone to UTC (it decides date_format and casts; a naive datetime parameter would even be read in the
Python process's zone, so only zone-aware ones are bound) and reads partition values as text.
"""
from __future__ import annotations

import datetime as dt
import time
from typing import Any, Callable

import pyarrow as pa

from kvir.case.store import Case
from kvir.core.errors import InputError, KvirError
from kvir.core.sql import load
from kvir.ingest.lake import LakeInfo, attach_lake, is_lake, requests_view, shard_of_path
from kvir.triage.transpile import spark_query

# kvir's settings for a session it starts, over Spark's defaults and under --spark-conf (the time zone
# is kvir's alone); a cluster's own spark-defaults (JVM options and the like) are left as they are
DEFAULT_CONF = {"spark.ui.showConsoleProgress": "false", "spark.log.level": "ERROR"}
LOCAL_CONF = {"spark.ui.enabled": "false"}                  # an explicit local[N] master: no web UI
LOCAL_SHUFFLE_PARTITIONS = "8"                              # local: not 200 tiny tasks per shuffle
SPEC_TABLES = ("account_rules", "node_configs")


def _pyspark():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise KvirError("the Spark engine needs pyspark and sqlglot: pip install 'kvir[spark]'") from None
    return SparkSession


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """--spark-conf KEY=VALUE (repeatable) as a dict."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--spark-conf {item!r}: write KEY=VALUE, e.g. spark.executor.memory=8g")
        out[key.strip()] = value.strip()
    if out.get("spark.sql.session.timeZone", "UTC") != "UTC":
        raise InputError("--spark-conf spark.sql.session.timeZone: kvir runs Spark in UTC only")
    return out


def session(master: str | None = None, conf: dict[str, str] | None = None):
    """The Spark session triage runs on (see the module docstring)."""
    SparkSession = _pyspark()
    from pyspark import SparkContext

    spark = SparkSession.getActiveSession()
    if spark is None and SparkContext._active_spark_context is not None:   # started in another thread
        spark = SparkSession.builder.getOrCreate()
    conf = dict(conf or {})
    if spark is None:
        b = SparkSession.builder.appName("kvir-triage")
        if master:
            b = b.master(master)
        for k, v in {**DEFAULT_CONF, **(LOCAL_CONF if (master or "").startswith("local") else {}), **conf}.items():
            b = b.config(k, v)
        spark = b.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        if spark.sparkContext.master.startswith("local") and "spark.sql.shuffle.partitions" not in conf:
            spark.conf.set("spark.sql.shuffle.partitions", LOCAL_SHUFFLE_PARTITIONS)
    else:
        for k, v in conf.items():      # runtime settings only; static ones were fixed at start
            try:
                spark.conf.set(k, v)
            except Exception as e:
                raise InputError(f"--spark-conf {k}: cannot be changed on the running Spark session "
                                 f"({str(e).splitlines()[0]})") from None
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")   # shard=01 stays "01"
    return spark


def spark_value(name: str, v: Any) -> Any:
    """A parameter as PySpark binds it: datetimes zone-aware (as UTC), tuples as lists."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is None or v.utcoffset() is None:
            raise KvirError(f"parameter ${name} is a naive datetime ({v.isoformat()}): kvir binds UTC instants only")
        return v.astimezone(dt.timezone.utc)
    if isinstance(v, tuple):
        return list(v)
    return v


def _analysis_error():
    from pyspark.errors import AnalysisException

    return AnalysisException


def lake_requests(spark, roots: list[str]):
    """The requests of every lake as one DataFrame (canonical columns, then `shard`; dt dropped), and per
    lake the shards its files belong to."""
    frames, shards = [], []
    for root in roots:
        try:
            df = spark.read.parquet(f"{root.rstrip('/')}/requests")
        except _analysis_error() as e:
            raise InputError(f"not a kvir canonical dataset Spark can read (requests/): {str(e).splitlines()[0]}",
                             path=root, hint="write one with `kvir ingest -o LAKE PATHS`") from None
        cols = [c for c in df.columns if c not in ("dt", "shard")] + ["shard"]
        frames.append(df.select(*cols))
        shards.append({s for s in map(shard_of_path, df.inputFiles()) if s})
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=True)
    return out, shards


def spark_reader(spark):
    def read(root: str, table: str) -> pa.Table:
        try:
            return spark.read.parquet(f"{root.rstrip('/')}/{table}").toArrow()
        except _analysis_error() as e:
            raise InputError(f"not a complete kvir canonical dataset ({table}/): {str(e).splitlines()[0]}",
                             path=root) from None
    return read


def ship(case: Case, spark, table: str) -> None:
    """A small case table to Spark as the temporary view of the same name."""
    import warnings

    t = case.con.sql(f"SELECT * FROM {table}").to_arrow_table()   # kvir's own table names
    with warnings.catch_warnings():     # PySpark 4.3 warns about pandas 3 here; an Arrow table needs no pandas
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        spark.createDataFrame(t).createOrReplaceTempView(table)


def run_query(case: Case, spark, name: str, params: dict[str, Any], cached: list,
              mechanism: str | None = None) -> pa.Table | None:
    """One query in its Spark form (the mechanism's file of that name first: kvir.core.sql.load); a
    table-making query's result is cached in Spark under its name and written into the case. The Spark SQL,
    its parameters and row count go into the case's query log."""
    name = load(name, mechanism).name
    q = spark_query(name)
    missing = [p for p in q.params if p not in params]
    if missing:
        raise KvirError(f"query {q.origin} needs parameter(s) {', '.join('$' + m for m in missing)}, which were not given")
    bound = {p: params[p] for p in q.params}
    t0 = time.perf_counter()
    try:
        df = spark.sql(q.sql, args={p: spark_value(p, v) for p, v in bound.items()})
        if q.target:
            df = df.cache()
            cached.append(df)
            df.createOrReplaceTempView(q.target)
        result = df.toArrow()
    except _analysis_error() as e:
        raise KvirError(f"query {q.origin} failed on Spark: {str(e).splitlines()[0]}") from None
    if q.target:
        con = case.con
        con.register("spark_result", result)
        try:
            kind = "TEMP TABLE" if q.temporary else "TABLE"
            con.execute(f"CREATE OR REPLACE {kind} {q.target} AS SELECT * FROM spark_result")   # a kvir table name
        finally:
            con.unregister("spark_result")
    case.log.record(load(name), q.sql, bound, result.num_rows, time.perf_counter() - t0,
                    extra={"engine": "spark", "spark_sql_from": q.origin, "spark_sql_sha256": q.sha256,
                           "macros_inlined": list(q.macros), "rewrites": list(q.rewrites)})
    return result


def triage_on_spark(case: Case, roots: list[str], queries: tuple[str, ...], params: dict[str, Any], *,
                    master: str | None = None, conf: dict[str, str] | None = None,
                    prepare: Callable[[Case], None] | None = None, mechanism: str | None = None) -> LakeInfo:
    """Attach the lakes to the case and run `queries` on Spark (see the module docstring; `mechanism`: its
    folder, whose files come first). `prepare(case)` runs once the lake's side tables are in the case,
    before the queries (it may complete `params`)."""
    spark = session(master, conf)
    requests, shards = lake_requests(spark, roots)
    # side tables: DuckDB reads a local lake directly (a few small files; Spark would run a job per table)
    from kvir.ingest.lake import read_local

    local = all(is_lake(r) for r in roots)
    info = attach_lake(case, roots, read_local(case.con) if local else spark_reader(spark), shards)
    if local:
        requests_view(case, roots)
    if prepare is not None:
        prepare(case)
    requests.createOrReplaceTempView("requests")
    for t in SPEC_TABLES:
        if case.has(t):
            ship(case, spark, t)
    cached: list = []
    try:
        for name in queries:
            run_query(case, spark, name, params, cached, mechanism)
    finally:
        for df in cached:
            df.unpersist()
        for t in ("requests",) + SPEC_TABLES + tuple(spark_query(load(n, mechanism).name).target or ""
                                                      for n in queries):
            if t:
                spark.catalog.dropTempView(t)
    import pyspark

    case.manifest["query_engine"] = {"name": "spark", "pyspark": pyspark.__version__, "spark": spark.version,
                                     "master": spark.sparkContext.master, "conf": dict(conf or {}),
                                     "requests_in_case": "view over the lake files" if local else
                                     "not attached: the lake is not a local folder (reports and replay read "
                                     "`requests`)"}
    return info
