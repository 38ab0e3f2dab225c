"""The replay stage's SQL: files in replay/sql/, parsed and bound exactly like queries/*.sql (kvir.sql),
and logged into the case's manifest (query, SHA-256, bound parameters, compiled SQL)."""
from __future__ import annotations

import time
from functools import lru_cache
from importlib import resources
from typing import Any

import duckdb

from ..errors import KvirError
from ..sql import Query, bind, parse_query


@lru_cache(maxsize=None)
def load(name: str) -> Query:
    text = resources.files("kvir.replay").joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")
    q = parse_query(f"replay/{name}", text)
    return q


def run(case, name: str, params: dict[str, Any] | None = None, *, inputs: dict[str, str] | None = None):
    """Run replay/sql/<name>.sql on the case; returns a DataFrame for SELECTs, None otherwise."""
    q = load(name)
    bound = bind(q, params or {})
    sql = q.compile(inputs)
    t0 = time.perf_counter()
    try:
        cur = case.con.execute(sql, bound) if bound else case.con.execute(sql)
        df = cur.df() if cur.description else None
    except duckdb.Error as e:
        raise KvirError(f"query replay/sql/{name}.sql failed: {e}") from e
    case.log.record(q, sql, bound, None if df is None else len(df), time.perf_counter() - t0, inputs)
    case.log.entries[-1]["query"] = f"replay/sql/{name}.sql"
    return df
