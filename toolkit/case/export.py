"""Exports of case tables: Parquet as is; CSV safe to open in a spreadsheet.

CSV cells that start with = + - @ (or a tab / carriage return) are prefixed with a single quote so a
spreadsheet shows them as text instead of running them as formulas (OWASP CSV injection): a log-derived
account id or model name is attacker-controlled. Control characters inside a cell (ESC of an ANSI or OSC
sequence, other C0 controls, DEL, C1 controls) are written as visible escapes (\x1b), as on the terminal
(kvir.core.text), so a `cat` of the file cannot drive a terminal. Timestamps are written as UTC ISO-8601 with a Z.
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


def csv_select(con: duckdb.DuckDBPyConnection, table: str, columns: list[str] | None = None) -> str:
    """A SELECT over `table` (a kvir table name) rendering every column CSV-safe."""
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
    unsafe = _columns_to_neutralise(con, table, texts)
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


def _columns_to_neutralise(con: duckdb.DuckDBPyConnection, table: str, texts: dict[str, str]) -> set[str]:
    """The text columns of `table` with a cell that starts like a formula or holds a control character:
    only those get the neutralising expression, whose per-column binding (a lambda over the characters)
    cost 20-85 ms per export, most of a small triage's exports. One aggregate finds them, evaluating the
    same test the expression's guard would. A view is not checked (every text column is neutralised): it
    can read files outside the case, which could change between the check and the export."""
    if not texts:
        return set()
    if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = $t", {"t": table}).fetchone()[0]:
        return set(texts)
    tests = [f"coalesce(bool_or(regexp_matches({e}, '{_CONTROLS}') OR left({e}, 1) IN {_FORMULA_STARTS}), false)"
             for e in texts.values()]
    flags = con.execute(f"SELECT {', '.join(tests)} FROM {_quote(table)}").fetchone()
    return {c for c, flag in zip(texts, flags) if flag}


def _safe(c: str) -> str:
    return _SAFE.format(c=c, v=_VISIBLE.format(c=c))


def write_csv(con: duckdb.DuckDBPyConnection, table: str, path: Path, columns: list[str] | None = None) -> Path:
    con.execute(f"COPY ({csv_select(con, table, columns)}) TO $p (FORMAT csv, HEADER true)", {"p": str(path)})
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
