"""The record contract: the columns of `records_text` in queries/case/create_tables.sql.

Every format adapter's output, after the shared epilogue (kvir.ingest.epilogue), has exactly these
columns in this order with these types; tests/formats/test_contract.py checks each registered format.
The table definition is the one source: it is created in an in-memory DuckDB and read back with
`duckdb_columns()`, so names, types and defaults cannot drift from what the case stores. The comment after
a column in the SQL file is its meaning (shown by `kvir formats NAME`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import duckdb

from kvir.core.sql import load, run

__all__ = ["RecordColumn", "record_columns", "record_column_names"]

_COLUMN_LINE = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s+[A-Z][A-Z ]*[^-]*?,?\s*--\s*(.+)$")


@dataclass(frozen=True)
class RecordColumn:
    name: str
    type: str            # DuckDB type name, e.g. BIGINT, TIMESTAMP WITH TIME ZONE
    default: str | None  # the column's DEFAULT as SQL text, or None
    meaning: str         # the comment after the column in create_tables.sql ("" when none)


@lru_cache(maxsize=1)
def record_columns() -> tuple[RecordColumn, ...]:
    con = duckdb.connect()
    try:
        run(con, "case/create_tables")
        rows = con.execute(
            "SELECT column_name, data_type, column_default FROM duckdb_columns() "
            "WHERE table_name = 'records_text' ORDER BY column_index").fetchall()
    finally:
        con.close()
    meanings = _meanings(load("case/create_tables").text)
    return tuple(RecordColumn(n, t, d, meanings.get(n, "")) for n, t, d in rows)


def record_column_names() -> tuple[str, ...]:
    return tuple(c.name for c in record_columns())


def _meanings(sql: str) -> dict[str, str]:
    """column -> the comment on its line, inside the records_text definition."""
    start = sql.index("CREATE TABLE IF NOT EXISTS records_text (")
    body = sql[start: sql.index("\n);", start)]
    out: dict[str, str] = {}
    for line in body.splitlines()[1:]:
        m = _COLUMN_LINE.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out
