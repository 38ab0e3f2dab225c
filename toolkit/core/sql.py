"""Query files: found by name in queries/, parameters bound by DuckDB, compiled SQL kept for the record.

A query file starts with a comment header:

    -- name: one line saying what question the query answers.
    -- Params: $models, $window_start   (or: Params: none)
    -- Inputs: __input__, __settings__  (optional: relations the caller names)

Values are always bound (`$name`), never pasted into the SQL text. The only substitution is of the
double-underscore input names, which must be kvir-generated identifiers (`[a-z][a-z0-9_]*`).
DuckDB 2.0 reads a session variable when a `$name` parameter is not supplied, so a query whose
`$names` are not all given is refused here, before it reaches DuckDB.
"""
from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import duckdb

from kvir.core.errors import KvirError
from kvir.core.jsonable import jsonable

_IDENT = re.compile(r"[a-z][a-z0-9_]*")
_INPUT = re.compile(r"\b__([a-z][a-z0-9_]*)__\b")


@dataclass(frozen=True)
class Query:
    name: str
    text: str
    description: str
    params: tuple[str, ...]          # $names found in the SQL (outside strings and comments)
    declared: tuple[str, ...]        # $names the header documents
    inputs: tuple[str, ...]          # __names__ the caller must map to relations

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def compile(self, inputs: dict[str, str] | None = None) -> str:
        """The SQL with the caller's relation names in place of __inputs__ (values stay `$params`)."""
        inputs = inputs or {}
        missing = [i for i in self.inputs if i not in inputs]
        if missing:
            raise KvirError(f"query {self.name}: no relation given for input(s) {', '.join(missing)}")
        for k, v in inputs.items():
            if not _IDENT.fullmatch(v):
                raise KvirError(f"query {self.name}: {v!r} is not a safe relation name for input {k}")
        return _INPUT.sub(lambda m: inputs.get(m.group(1), m.group(0)), self.text)


def strip_sql_literals(sql: str) -> str:
    """SQL with comments, string literals and quoted identifiers blanked out (for finding $params)."""
    out, i, n = [], 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in ("'", '"'):
            j = i + 1
            while j < n:
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:   # doubled quote inside the literal
                        j += 2
                        continue
                    break
                j += 1
            out.append(" ")
            i = j + 1
        elif sql.startswith("$$", i):
            j = sql.find("$$", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def find_params(sql: str) -> tuple[str, ...]:
    names = re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", strip_sql_literals(sql))
    return tuple(dict.fromkeys(names))


def parse_query(name: str, text: str) -> Query:
    header = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        header.append(line[2:].strip())
    if not header or ":" not in header[0]:
        raise KvirError(f"query {name}: the first line must be '-- {name.rsplit('/', 1)[-1]}: what it answers'")
    description = header[0].split(":", 1)[1].strip()
    declared: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    for h in header:
        if h.lower().startswith("params:"):
            declared = tuple(re.findall(r"\$([A-Za-z_]\w*)", h))
        elif h.lower().startswith("inputs:"):
            inputs = tuple(re.findall(r"__([a-z][a-z0-9_]*)__", h))
    used_inputs = tuple(dict.fromkeys(_INPUT.findall(strip_sql_literals(text))))
    return Query(name, text, description, find_params(text), declared, used_inputs or inputs)


@lru_cache(maxsize=None)
def load(name: str, mechanism: str | None = None) -> Query:
    """queries/<name>.sql, e.g. load("triage/summary") or load("adapters/sglang_json"). With `mechanism` (a
    mechanism's folder, kvir.spec.mechanism.Mechanism.folder) its own queries/mechanisms/<folder>/<name>.sql
    comes first: as in dbt's adapter dispatch, a mechanism's file of a name overrides the shared one."""
    if mechanism is not None:
        own = f"mechanisms/{mechanism}/{name}"
        if resources.files("kvir.queries").joinpath(*f"{own}.sql".split("/")).is_file():
            return load(own)
    path = resources.files("kvir.queries").joinpath(*f"{name}.sql".split("/"))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KvirError(f"no query file queries/{name}.sql") from None
    return parse_query(name, text)


def all_query_names() -> list[str]:
    root = resources.files("kvir.queries")
    names: list[str] = []

    def walk(node, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir() and not child.name.startswith("__"):
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".sql") and not child.name.endswith(".spark.sql"):   # Spark overrides
                names.append(prefix + child.name[:-4])

    walk(root, "")
    return names


@dataclass
class QueryLog:
    """What ran: kept in manifest.json so anyone can see and re-run exactly the SQL of a result."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def record(self, q: Query, sql: str, params: dict[str, Any], rows: int | None, seconds: float,
               inputs: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> None:
        """`extra`: more keys for the entry (e.g. the engine that ran `sql` when it is not DuckDB)."""
        self.entries.append({
            "query": f"queries/{q.name}.sql",
            "sha256": q.sha256,
            "inputs": inputs or {},
            "params": jsonable(params),
            "compiled_sql": sql,
            "rows": rows,
            "seconds": round(seconds, 4),
            **(extra or {}),
        })


def bind(q: Query, params: dict[str, Any]) -> dict[str, Any]:
    """Exactly the parameters q uses; refuse to run with any missing (see module docstring)."""
    missing = [p for p in q.params if p not in params]
    if missing:
        raise KvirError(f"query {q.name} needs parameter(s) {', '.join('$' + m for m in missing)}, which were not given")
    return {p: params[p] for p in q.params}


def run(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None, *,
        inputs: dict[str, str] | None = None, log: QueryLog | None = None,
        fetch: bool | Literal["df"] = False, mechanism: str | None = None):
    """Run queries/<name>.sql (the mechanism's own first, see load) with bound parameters. Returns fetched rows
    (tuples) when fetch=True, a pandas DataFrame when fetch="df", None otherwise."""
    q = load(name, mechanism)
    bound = bind(q, params or {})
    sql = q.compile(inputs)
    t0 = time.perf_counter()
    try:
        if bound:   # DuckDB binds parameters of one statement only: a file of several runs them one by one
            for st in con.extract_statements(sql):
                cur = con.execute(st, {k: bound[k] for k in st.named_parameters})
        else:
            cur = con.execute(sql)
        rows = cur.df() if fetch == "df" else cur.fetchall() if fetch else None
    except duckdb.Error as e:
        raise KvirError(f"query queries/{q.name}.sql failed: {e}") from e
    if log is not None:
        log.record(q, sql, bound, len(rows) if rows is not None else None, time.perf_counter() - t0, inputs)
    return rows
