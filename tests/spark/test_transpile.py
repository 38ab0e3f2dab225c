"""The Spark form of the triage queries (kvir.triage.transpile), without a JVM: golden SQL for every query
the Spark path runs, and the transpiler's rules on small hand-made queries.

Golden files: tests/spark/golden/<query>.spark.sql. After changing a triage query, look at the new Spark
SQL and rewrite them with `KVIR_UPDATE_GOLDEN=1 python -m pytest -q tests/spark/test_transpile.py`."""
from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pytest

from kvir.core import sql
from kvir.spec.mechanism import mechanisms
from kvir.triage.transpile import (Macro, TranspileError, inline_macros, parse_override, spark_query,
                                   strftime_to_java, transpile)

GOLDEN = Path(__file__).parent / "golden"
# every query kvir.triage.spark runs: each Spark mechanism's list, with and without the pool in effect, each
# named as kvir.core.sql.load finds it (the mechanism's own file, else the shared one)
SPARK_PATH = tuple(dict.fromkeys(sql.load(n, m.folder).name for m in mechanisms() if m.part("triage").spark
                                 for pool_in_effect in (False, True) for n in m.part("triage").queries(pool_in_effect)))


@pytest.mark.parametrize("name", SPARK_PATH)
def test_every_query_of_the_spark_path_transpiles_to_its_golden_sql(name):
    q = spark_query(name)
    assert q.origin == f"queries/{name}.sql"            # transpiled: no .spark.sql override is needed
    assert set(q.params) == set(sql.load(name).params)  # the same values bound, as :name markers
    assert "$" not in q.sql and "kvir_" not in q.sql.lower() and "to_seconds" not in q.sql.lower()
    for p in q.params:
        assert f":{p}" in q.sql
    target = re.search(r"CREATE OR REPLACE (?:TEMP )?TABLE (\w+)", sql.load(name).text).group(1)
    assert q.target == target
    golden = GOLDEN / f"{name.replace('/', '__')}.spark.sql"
    if os.environ.get("KVIR_UPDATE_GOLDEN"):
        golden.write_text(q.sql + "\n")
    assert golden.exists(), f"no golden file {golden.name}: run with KVIR_UPDATE_GOLDEN=1 and read it"
    assert q.sql + "\n" == golden.read_text(), (
        f"the Spark SQL of queries/{name}.sql changed: read the difference, then KVIR_UPDATE_GOLDEN=1")


def test_the_timestamp_format_keeps_its_literal_text():
    assert strftime_to_java("%Y-%m-%dT%H:%M:%SZ") == "yyyy-MM-dd'T'HH:mm:ss'Z'"
    assert strftime_to_java("%d/%m/%Y %H:%M") == "dd/MM/yyyy HH:mm"
    assert strftime_to_java("it's %H") == "'it''s' HH"
    with pytest.raises(TranspileError, match="%Q"):
        strftime_to_java("%Q")
    q = transpile("t/fmt", "-- t\n-- Params: none\nSELECT strftime(ts, '%Y-%m-%dT%H:%M:%SZ') AS s FROM t")
    assert "DATE_FORMAT(ts, 'yyyy-MM-dd\\'T\\'HH:mm:ss\\'Z\\'')" in q.sql and q.rewrites == ("strftime",)


def test_macros_are_inlined_with_their_arguments_grouped():
    import sqlglot

    # m(a, b) = a * b + 1, called with a compound first argument and nested in another macro
    macros = {"m": Macro("m", ("a", "b"), sqlglot.parse_one("a * b + 1", read="duckdb")),
              "n": Macro("n", ("x",), sqlglot.parse_one("m(x, x) - x", read="duckdb"))}
    tree, used = inline_macros(sqlglot.parse_one("SELECT n(v + 1) AS r FROM t", read="duckdb"), macros, "t")
    assert used == ["n", "m"]
    inlined = tree.sql(dialect="duckdb")
    # v = 3: n(4) = m(4, 4) - 4 = 17 - 4 = 13, worked by hand; without the parentheses it would be 3+1*3+1+1-3-1
    assert duckdb.sql(inlined.replace("FROM t", "FROM (SELECT 3 AS v) AS t")).fetchall() == [(13,)]
    with pytest.raises(TranspileError, match="takes 2 arguments"):
        inline_macros(sqlglot.parse_one("SELECT m(1) FROM t", read="duckdb"), macros, "t")


def test_what_spark_would_run_differently_is_refused():
    with pytest.raises(TranspileError, match="ASOF"):
        transpile("t/asof", "SELECT * FROM a ASOF LEFT JOIN b ON a.k = b.k AND a.ts >= b.ts")
    with pytest.raises(TranspileError, match=r"to_seconds\(\) has no Spark translation.*t/secs.spark.sql"):
        transpile("t/secs", "SELECT ts + to_seconds(g) FROM t")
    with pytest.raises(TranspileError, match="2 statements"):
        transpile("t/two", "SELECT 1; SELECT 2")


def test_an_override_is_spark_sql_that_documents_its_parameters():
    q = parse_override("t/o", "-- o: a test\n-- Params: :a, :b\nCREATE OR REPLACE TABLE out_t AS\n"
                              "SELECT x::BIGINT, ':c' AS s FROM t WHERE y = :a AND z = :b;\n")
    assert (q.target, q.params, q.origin) == ("out_t", ("a", "b"), "queries/t/o.spark.sql")
    assert q.sql.startswith("SELECT x::BIGINT") and not q.sql.endswith(";")
    with pytest.raises(TranspileError, match="documents"):
        parse_override("t/o", "-- o\n-- Params: :a\nSELECT :a, :b")
    with pytest.raises(TranspileError, match="Params"):
        parse_override("t/o", "-- o\nSELECT 1")
    assert not any(n.endswith(".spark") for n in sql.all_query_names())   # overrides are not DuckDB queries


def test_a_temporary_table_stays_temporary():
    """A step between two queries (CREATE TEMP TABLE: triage/listed) is a temporary table in the case too,
    from a transpiled file or an override; a case table is not."""
    assert transpile("t/tmp", "-- t: a test\n-- Params: none\nCREATE OR REPLACE TEMP TABLE tmp_t AS SELECT 1 AS x"
                     ).temporary is True
    assert spark_query("triage/listed").temporary and not spark_query("triage/accounts").temporary
    q = parse_override("t/o", "-- o: a test\n-- Params: none\nCREATE OR REPLACE TEMP TABLE step_t AS SELECT 1 AS x")
    assert (q.target, q.temporary, q.sql) == ("step_t", True, "SELECT 1 AS x")
    assert parse_override("t/o", "-- o: a test\n-- Params: none\nCREATE TABLE out_t AS SELECT 1").temporary is False
