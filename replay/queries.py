"""The replay stage's SQL: queries/replay/*.sql, loaded, bound and logged by kvir.sql like every query file;
here only returned as DataFrames for the engine."""
from __future__ import annotations

import time
from typing import Any

import duckdb

from kvir.core.errors import KvirError
from kvir.core.sql import Query, bind
from kvir.core.sql import load as load_query


def load(name: str) -> Query:
    return load_query(f"replay/{name}")


def run(case, name: str, params: dict[str, Any] | None = None, *, inputs: dict[str, str] | None = None):
    """Run queries/replay/<name>.sql on the case; returns a DataFrame for SELECTs, None otherwise."""
    q = load(name)
    bound = bind(q, params or {})
    sql = q.compile(inputs)
    t0 = time.perf_counter()
    try:
        cur = case.con.execute(sql, bound) if bound else case.con.execute(sql)
        df = cur.df() if cur.description else None
    except duckdb.Error as e:
        raise KvirError(f"query queries/replay/{name}.sql failed: {e}") from e
    case.log.record(q, sql, bound, None if df is None else len(df), time.perf_counter() - t0, inputs)
    return df
