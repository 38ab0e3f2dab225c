"""queries/: every file documents what it answers and its parameters; values are bound, never pasted."""
from __future__ import annotations

import duckdb
import pytest

from kvir.core import sql
from kvir.core.errors import KvirError


@pytest.mark.parametrize("text, expected", [
    ("SELECT $a, $b_2 FROM t WHERE x = $a", ("a", "b_2")),
    ("SELECT '$not' || $yes -- $comment\n/* $block */", ("yes",)),
    ('SELECT "$ident", $p', ("p",)),
    ("SELECT 'it''s $x', $y", ("y",)),
    ("SELECT $$ $dollar $$, $z", ("z",)),
])
def test_find_params_ignores_strings_and_comments(text, expected):
    assert sql.find_params(text) == expected


def test_every_query_documents_itself():
    names = sql.all_query_names()
    assert "mechanisms/oversized_prompt/triage/hits" in names and "adapters/sglang_json" in names and "macros" in names
    for name in names:
        q = sql.load(name)
        assert q.description, f"queries/{name}.sql: first line must say what it answers"
        header = q.text.split("\n", 10)
        assert any(h.lower().startswith("-- params:") for h in header), f"queries/{name}.sql: no '-- Params:' line"
        assert set(q.declared) == set(q.params), \
            f"queries/{name}.sql documents {sorted(q.declared)} but uses {sorted(q.params)}"


def test_missing_parameter_is_refused_even_with_a_session_variable():
    con = duckdb.connect()
    con.execute("SET VARIABLE rule = 'engine'")   # DuckDB 2.0 would silently read this for $rule
    q = sql.parse_query("t", "-- t: test\n-- Params: $rule\nSELECT $rule AS r")
    with pytest.raises(KvirError, match=r"needs parameter\(s\) \$rule"):
        sql.bind(q, {})
    assert con.execute(q.compile(), sql.bind(q, {"rule": "public"})).fetchone() == ("public",)


def test_inputs_must_be_safe_identifiers():
    q = sql.parse_query("t", "-- t: test\n-- Params: none\nSELECT * FROM __input__")
    assert q.inputs == ("input",)
    assert q.compile({"input": "src3_input"}) == "-- t: test\n-- Params: none\nSELECT * FROM src3_input"
    for bad in ("x; DROP TABLE y", "Src", "a b", '"q"'):
        with pytest.raises(KvirError, match="not a safe relation name"):
            q.compile({"input": bad})
    with pytest.raises(KvirError, match="no relation given"):
        q.compile({})


def test_query_log_keeps_compiled_sql_and_params():
    con = duckdb.connect()
    log = sql.QueryLog()
    sql.run(con, "macros", log=log)
    assert log.entries[0]["query"] == "queries/macros.sql" and len(log.entries[0]["sha256"]) == 64


def test_a_mechanisms_own_query_comes_before_the_shared_one_of_its_name(tmp_path):
    """dbt-style dispatch (kvir.core.sql.load): queries/mechanisms/<folder>/<name>.sql, else queries/<name>.sql;
    the query log names the file that ran."""
    own = sql.load("triage/excluded", mechanism="prefix_cache")
    shared = sql.load("triage/excluded")
    assert own.name == "mechanisms/prefix_cache/triage/excluded" and shared.name == "triage/excluded"
    assert "cached_tokens" in own.text and "cached_tokens" not in shared.text     # two different files
    assert sql.load("triage/excluded", mechanism="oversized_prompt") == shared   # none of its own: the shared one
    with pytest.raises(KvirError, match=r"no query file queries[/]triage[/]affected\.sql"):
        sql.load("triage/affected")                # only the mechanisms have one
    con = duckdb.connect()
    con.execute("CREATE TABLE listed_hits AS SELECT {'request_id': 'r1'} AS excluded_row, 'r1' AS request_id, "
                "TIMESTAMPTZ '2026-01-01 00:00:00+00' AS ts, 5 AS cached_tokens, 'possibly-affected' AS category, "
                "true AS account_excluded")
    log = sql.QueryLog()
    sql.run(con, "triage/excluded", log=log, mechanism="prefix_cache")
    got = con.execute("SELECT request_id, cached_tokens, verdict FROM excluded").fetchall()
    assert got == [("r1", 5, "possibly affected")]
    assert log.entries[0]["query"] == "queries/mechanisms/prefix_cache/triage/excluded.sql"
