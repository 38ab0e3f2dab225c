"""The shared epilogue of every format adapter: from the columns an adapter knows to the record contract.

An adapter (queries/adapters/<name>.sql) emits `source_id, source_line, verdict`, `raw` (the record's
text, unmasked) where it has one, and whichever contract columns its format knows, with the contract's
types. `verdict` is NULL for a request, kvir_skip(why) for a record counted but not a request, kvir_bad(why)
for one quarantined (queries/macros.sql): one CASE per adapter says what a record is and why. The epilogue
wraps the adapter in one projection built from the contract (kvir.case.records: the columns of
records_text), joined once to the source's settings:

    kind, reason                      from the verdict (request when it is NULL)
    column the adapter emits          the adapter's value, as is
    column it does not emit           the contract's DEFAULT, a default from the source's settings, or NULL
    prefill_node, decode_node         coalesce(the adapter's value, node when role is prefill|mixed / decode|mixed)
    prefill_tokens                    coalesce(the adapter's value, prompt_tokens when role is prefill)
    raw                               only for quarantined rows of a source read with keep_raw

Identifiers (request_id, bootstrap_room, account_id) go through kvir_id: one documented normalisation for
every format (whitespace at either end is not part of an id).

Settings defaults: model = the source's served model (engine logs: from server_args= or --served-model;
other formats: --served-model, used where a record names none); role and node = the source's.

Request fields need no mask: records_text keeps every row an adapter produced, but requests are read only
through the view `records` (kind = 'request'), and in-place sources (Parquet views) are filtered by kind
wherever they are read. Every identifier pasted
here is either a contract column name (checked against [a-z_][a-z0-9_]*) or a kvir-generated relation
name; the adapter's own columns are read from DuckDB (DESCRIBE), never from user input.
"""
from __future__ import annotations

import re

import duckdb
import pyarrow as pa

from kvir.case.records import record_columns
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.core.sql import load

__all__ = ["REQUIRED", "VERDICT_TYPE", "adapter_columns", "adapter_query", "compile_adapter", "epilogue"]

REQUIRED = ("source_id", "source_line", "verdict")   # every adapter emits these (raw where it has text)
VERDICT_TYPE = "STRUCT(kind VARCHAR, reason VARCHAR)"
_PROTOCOL = {"verdict": VERDICT_TYPE}                 # adapter columns that are not contract columns
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
# defaults from the source's settings (s) for columns an adapter does not emit
_FROM_SETTINGS = {"model": "s.served_model", "role": "s.role", "node": "s.node"}


_ALWAYS = ("source_id", "source_line", "kind", "reason", "raw")   # what a row that is no request keeps
IDENTIFIERS = ("request_id", "bootstrap_room", "account_id")      # normalised by kvir_id


def epilogue(adapter_sql: str, emitted: dict[str, str], settings: str, request_fields_only: bool = False) -> str:
    """SELECT over the adapter giving exactly the contract's columns. `emitted`: the adapter's output
    columns and their DuckDB types (adapter_columns). With request_fields_only, a row that is not a
    request (skip or bad) keeps only its source, line, kind, reason and raw, all any query reads of it
    (counts and the quarantine): writing its other fields cost a tenth of a big log's ingest."""
    for name in (*emitted, settings):
        if not _IDENT.fullmatch(name):
            raise KvirError(f"adapter column or relation {name!r} is not a plain identifier")
    missing = [c for c in REQUIRED if c not in emitted]
    if missing:
        raise KvirError(f"adapter output lacks {', '.join(missing)} (every adapter emits {', '.join(REQUIRED)})")
    cols = {c.name: c for c in record_columns()}
    extra = [c for c in emitted if c not in cols and c not in _PROTOCOL or c in ("kind", "reason")]
    if extra:
        raise KvirError(f"adapter emits {', '.join(extra)}, which the record contract "
                        f"(queries/case/create_tables.sql records_text) does not take from an adapter")

    def plain(name: str) -> str:
        c = cols[name]
        if name in emitted:
            return f"a.{name}" if emitted[name] == c.type else f"CAST(a.{name} AS {c.type})"
        if name in _FROM_SETTINGS:
            return _FROM_SETTINGS[name]
        return c.default if c.default is not None else f"NULL::{c.type}"

    role, node = plain("role"), plain("node")
    derived = {
        "prefill_node": f"CASE WHEN {role} IN ('prefill', 'mixed') THEN {node} END",
        "decode_node": f"CASE WHEN {role} IN ('decode', 'mixed') THEN {node} END",
        "prefill_tokens": (f"CASE WHEN {role} = 'prefill' THEN {plain('prompt_tokens')} END"
                           if "prompt_tokens" in emitted else "NULL::BIGINT"),
    }
    parts = []
    for name, c in cols.items():
        if name == "kind":
            expr = "coalesce(a.verdict.kind, 'request')"
        elif name == "reason":
            expr = "a.verdict.reason"
        elif name == "raw":
            expr = "CASE WHEN a.verdict.kind = 'bad' AND s.keep_raw THEN a.raw END" if "raw" in emitted else "NULL::VARCHAR"
        elif name in derived:
            expr = f"coalesce({plain(name)}, {derived[name]})" if name in emitted else derived[name]
        else:
            # one normalisation of ids, whatever the format (queries/macros.sql kvir_id)
            expr = f"kvir_id({plain(name)})" if name in IDENTIFIERS and name in emitted else plain(name)
        if request_fields_only and name not in _ALWAYS:
            expr = f"CASE WHEN a.verdict IS NULL THEN {expr} END"
        parts.append(f"{expr} AS {name}")
    return ("SELECT\n    " + ",\n    ".join(parts) +
            f"\nFROM (\n{adapter_sql.rstrip().rstrip(';')}\n) AS a\nJOIN {settings} AS s ON s.source_id = a.source_id")


def adapter_columns(con: duckdb.DuckDBPyConnection, adapter_sql: str, input_name: str | None = None,
                    schema: pa.Schema | None = None, params: dict | None = None) -> dict[str, str]:
    """The adapter's output columns and types, as DuckDB binds them. When the input relation is a stream
    (not yet in the database), an empty table of its schema stands in for it."""
    if schema is not None and input_name is not None:
        con.register(input_name, schema.empty_table())
    try:
        return {r[0]: r[1] for r in con.execute(f"DESCRIBE {adapter_sql}", params or {}).fetchall()}
    finally:
        if schema is not None and input_name is not None:
            con.unregister(input_name)


def adapter_query(case: Case, adapter: str, input_name: str, schema: pa.Schema | None = None,
                  settings: str = "source_settings", parse: str | None = None, params: dict | None = None,
                  settings_columns: tuple[str, ...] = (), one_source: bool = False,
                  reader: str | None = None) -> tuple[str, str, dict[str, str]]:
    """queries/<adapter>.sql over `input_name`: (prefix, SQL, its output columns and types). The prefix
    holds the steps before the adapter, as CTEs: `reader` (a query under queries/parse/ that reads a
    file itself, given the bound `params`, in place of `input_name`), `parse` (a query under
    queries/parse/ over the rows before it: one adapter for inputs that reach it by different readers)
    and, with `settings_columns`, those columns of the source's settings attached to every row: joined by
    source_id, or with `one_source` (every row is $source_id's) by a cross product with its one settings
    row, which keeps the rows in the order they came (a join would not: kvir.ingest.native)."""
    q = load(adapter)
    ctes: list[tuple[str, str]] = []
    rows = input_name
    for step, name in ((reader, "read_input"), (parse, "parse_input")):
        if step is not None:
            ctes.append((name, load(step).compile({"input": rows, "settings": settings})))
            rows = name
    if settings_columns:
        for c in settings_columns:
            if not _IDENT.fullmatch(c):
                raise KvirError(f"settings column {c!r} is not a plain identifier")
        attach = (f"CROSS JOIN (SELECT * FROM {settings} WHERE source_id = $source_id) AS z" if one_source
                  else f"LEFT JOIN {settings} AS z ON z.source_id = p.source_id")
        ctes.append(("settled_input", f"SELECT p.*, {', '.join('z.' + c for c in settings_columns)} FROM {rows} AS p {attach}"))
        rows = "settled_input"
    prefix = ("WITH " + ",\n".join(f"{n} AS NOT MATERIALIZED (\n{sql}\n)" for n, sql in ctes) + "\n") if ctes else ""
    sql = q.compile({"input": rows, "settings": settings})
    try:
        emitted = adapter_columns(case.con, f"{prefix}SELECT * FROM (\n{sql}\n)" if prefix else sql, input_name,
                                  schema, params)
    except duckdb.Error as e:
        raise KvirError(f"query queries/{adapter}.sql does not bind: {e}") from e
    return prefix, sql, emitted


def compile_adapter(case: Case, adapter: str, input_name: str, schema: pa.Schema | None = None,
                    settings: str = "source_settings", parse: str | None = None,
                    request_fields_only: bool = False, settings_columns: tuple[str, ...] = ()) -> str:
    """queries/<adapter>.sql over `input_name` (see adapter_query), wrapped in the epilogue: the SQL that
    fills a stage table or defines an in-place view. Logged in the manifest as the adapter's compiled SQL."""
    prefix, sql, emitted = adapter_query(case, adapter, input_name, schema, settings, parse,
                                         settings_columns=settings_columns)
    full = prefix + epilogue(sql, emitted, settings, request_fields_only)
    case.log.record(load(adapter), full, {}, None, 0.0, {"input": input_name, "settings": settings})
    return full
