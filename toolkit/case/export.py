"""Exports of case tables: Parquet as is; CSV safe to open in a spreadsheet.

CSV cells that start with = + - @ (or a tab / carriage return) are prefixed with a single quote so a
spreadsheet shows them as text instead of running them as formulas (OWASP CSV injection): a log-derived
account id or model name is attacker-controlled. Control characters inside a cell (ESC of an ANSI or OSC
sequence, other C0 controls, DEL, C1 controls) are written as visible escapes (\x1b), as on the terminal
(kvir.core.text), so a `cat` of the file cannot drive a terminal. Timestamps are written as UTC ISO-8601 with a Z.

The guard changes values: `'@cf/zai-org/glm-5.3` no longer matches `@cf/zai-org/glm-5.3`. So each CSV's
guard is recorded in the case's manifest (`csv`: the rule, and per file the cells changed per column and
where the exact values are: a Parquet twin, the case table, --json), and the tables people match on
downstream (affected, accounts, excluded, nodes, replay_exposure) have a Parquet twin, which needs no guard.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

# Defined here (not in macros.sql) so exports also work on a read-only case. Newlines and tabs stay: CSV
# quoting carries them, and they cannot drive a terminal. Other controls become \xNN, one character at a time.
_CONTROLS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
_VISIBLE = ("CASE WHEN regexp_matches({c}, '" + _CONTROLS + "') THEN "
            "array_to_string(list_transform(string_split({c}, ''), "
            "lambda ch: CASE WHEN regexp_matches(ch, '" + _CONTROLS + "') THEN '\\x' || lower(printf('%02X', unicode(ch))) "
            "ELSE ch END), '') ELSE {c} END")
_FORMULA_STARTS = "('=', '+', '-', '@', chr(9), chr(13))"
_SAFE = ("CASE WHEN {c} IS NULL THEN NULL WHEN left({c}, 1) IN " + _FORMULA_STARTS + " "
         "THEN '''' || {v} ELSE {v} END")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def csv_select(con: duckdb.DuckDBPyConnection, table: str, columns: list[str] | None = None,
               unsafe: set[str] | None = None) -> str:
    """A SELECT over `table` (a kvir table name) rendering every column CSV-safe (`unsafe`: the text columns
    to neutralise, when the caller has found them already)."""
    types, cols, texts = _text_columns(con, table, columns)
    unsafe = _columns_to_neutralise(con, table, texts) if unsafe is None else unsafe
    parts = []
    for c in cols:
        q, t = _quote(c), types[c]
        if t.startswith("TIMESTAMP WITH TIME ZONE"):
            expr = f"strftime(timezone('UTC', {q}), '%Y-%m-%dT%H:%M:%S.%fZ')"
        elif t.startswith("TIMESTAMP"):
            expr = f"strftime({q}, '%Y-%m-%dT%H:%M:%S.%f')"
        elif c in texts:
            expr = _safe(texts[c]) if c in unsafe else texts[c]
        else:
            expr = q
        parts.append(f"{expr} AS {q}")
    return f"SELECT {', '.join(parts)} FROM {_quote(table)}"


def _text_columns(con: duckdb.DuckDBPyConnection, table: str, columns: list[str] | None):
    desc = con.execute(f"DESCRIBE {_quote(table)}").fetchall()
    types = {r[0]: r[1] for r in desc}
    cols = columns or [r[0] for r in desc]
    texts = {}       # the text form of every column that holds text
    for c in cols:
        q, t = _quote(c), types[c]
        if t.endswith("[]"):
            texts[c] = f"array_to_string({q}, ';')"
        elif t in ("VARCHAR", "JSON") or t.startswith("STRUCT") or t.startswith("MAP"):
            texts[c] = f"CAST({q} AS VARCHAR)"
    return types, cols, texts


def _changed_cells(con: duckdb.DuckDBPyConnection, table: str, texts: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Per text column of `table`: (cells that start like a formula, cells with a control character), by one
    aggregate that evaluates the same tests as the neutralising expression."""
    if not texts:
        return {}
    tests = [f"coalesce(count_if(left({e}, 1) IN {_FORMULA_STARTS}), 0), coalesce(count_if(regexp_matches({e}, '{_CONTROLS}')), 0)"
             for e in texts.values()]
    row = con.execute(f"SELECT {', '.join(tests)} FROM {_quote(table)}").fetchone()
    return {c: (int(row[2 * i]), int(row[2 * i + 1])) for i, c in enumerate(texts)}


def _is_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = $t", {"t": table}).fetchone()[0])


def _columns_to_neutralise(con: duckdb.DuckDBPyConnection, table: str, texts: dict[str, str]) -> set[str]:
    """The text columns of `table` with a cell that starts like a formula or holds a control character:
    only those get the neutralising expression, whose per-column binding (a lambda over the characters)
    cost 20-85 ms per export, most of a small triage's exports. One aggregate finds them, evaluating the
    same test the expression's guard would. A view is not checked (every text column is neutralised): it
    can read files outside the case, which could change between the check and the export."""
    if not texts:
        return set()
    if not _is_table(con, table):
        return set(texts)
    return {c for c, (formula, controls) in _changed_cells(con, table, texts).items() if formula or controls}


def _safe(c: str) -> str:
    return _SAFE.format(c=c, v=_VISIBLE.format(c=c))


GUARD = ("CSV cells that start with =, +, -, @, a tab or a carriage return are written with a leading "
         "apostrophe (') so that a spreadsheet shows them as text instead of running them as formulas (OWASP CSV "
         "injection); control characters are written as visible escapes (\\x1b). Such a cell no longer equals the "
         "value in the logs: match on the exact values, in each file's `exact` (a Parquet twin or the case table; "
         "--json output is exact too).")


def write_csv(con: duckdb.DuckDBPyConnection, table: str, path: Path, columns: list[str] | None = None, *,
              guard: dict | None = None, exact: str | None = None) -> Path:
    """`table` as a formula-safe CSV at `path`. With `guard` (the manifest's `csv` section), the file's entry
    says which cells the guard changed, per column, and where the exact values are (`exact`, else the case
    table)."""
    unsafe, changed = None, {}
    if guard is not None:
        _, _, texts = _text_columns(con, table, columns)
        counts = _changed_cells(con, table, texts)
        changed = {c: {"formula_prefixed": f, "controls_escaped": k} for c, (f, k) in counts.items() if f or k}
        unsafe = set(changed) if _is_table(con, table) else set(texts)      # a view: every text column
        guard["guard"] = GUARD
        guard.setdefault("files", {})[path.name] = {"exact": exact or f"case.duckdb table {table}",
                                                     "changed_cells": changed}
    con.execute(f"COPY ({csv_select(con, table, columns, unsafe)}) TO $p (FORMAT csv, HEADER true)", {"p": str(path)})
    return path


def write_parquet(con: duckdb.DuckDBPyConnection, select_sql: str, path: Path) -> Path:
    con.execute(f"COPY ({select_sql}) TO $p (FORMAT parquet, COMPRESSION zstd)", {"p": str(path)})
    return path


def neutralise_cell(value: str) -> str:
    """The same rules in Python, for CSVs written without DuckDB (reports)."""
    from kvir.core.text import visible

    if value and value[0] in ("=", "+", "-", "@", "\t", "\r"):
        value = "'" + value
    return visible(value).replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
