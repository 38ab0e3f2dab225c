"""Inputs whose columns the user maps onto kvir's fields: CSV and JSON Lines (read once into the case)
and Parquet (queried in place through views, never copied).

Column names cannot be bound as SQL values, so every mapped name is checked against the file's own
schema before it is quoted into a projection (a whitelist); JSON paths and file paths are bound values.
"""
from __future__ import annotations

import json as _json
from typing import Any

import pyarrow as pa

from kvir.case.store import Case
from kvir.core.errors import InputError
from kvir.ingest.epilogue import compile_adapter
from kvir.ingest.lines import head_lines
from kvir.ingest.opener import duckdb_path
from kvir.ingest.sources import IngestOptions, Source
from kvir.spec.model import MAPPABLE_FIELDS

_TIME_FIELDS = ("ts", "ts_end")


def _mapping(src: Source, available: list[str]) -> dict[str, str]:
    """field -> column. Defaults to columns already named like kvir's fields."""
    cols = dict(src.columns)
    cols.pop("ts_unit", None)
    if not cols:
        cols = {f: f for f in MAPPABLE_FIELDS if f in available}
    for f_, c in cols.items():
        if isinstance(c, list):
            raise InputError(f"{src.format.name} maps a field to one column, not a list of paths (JSON Lines only)",
                             path=src.label, key=f"sources.columns.{f_}")
        if c not in available:
            raise InputError(f"column {c!r} (mapped to {f_}) is not in the file; it has: {', '.join(available)}",
                             path=src.label, key=f"sources.columns.{f_}")
    if "request_id" not in cols or not ({"ts", "ts_end"} & cols.keys()):
        raise InputError(f"{src.format.name} needs a column mapping with at least request_id and ts "
                         f"(columns in the file: {', '.join(available)})", path=src.label,
                         hint="add [sources.columns] to incident.toml")
    return cols


def _quote_ident(name: str, available: list[str]) -> str:
    """A column name that exists in the file (whitelisted), quoted as an SQL identifier."""
    assert name in available, name
    return '"' + name.replace('"', '""') + '"'


_ID_FIELDS = ("request_id", "bootstrap_room", "account_id")
_FLOAT_TYPES = ("DOUBLE", "FLOAT")


def _column(f_: str, cols: dict[str, str], types: dict[str, str], available: list[str]) -> str:
    """The mapped column; an id held as a floating-point number as the text every reader gives that number
    (queries/macros.sql kvir_number_id: a CAST would write 1e-06 where a JSON log's 0.000001 is the same id)."""
    q = _quote_ident(cols[f_], available)
    return f"json_extract_string(to_json({q}), '$')" if f_ in _ID_FIELDS and types.get(cols[f_]) in _FLOAT_TYPES else q


def _mapped_projection(cols: dict[str, str], types: dict[str, str], available: list[str]) -> str:
    """SELECT list giving the generic adapter its fixed input columns (see queries/adapters/generic.sql)."""
    parts = []
    for f_ in MAPPABLE_FIELDS:
        if f_ in _TIME_FIELDS:
            continue
        parts.append(f"{_column(f_, cols, types, available)} AS {f_}" if f_ in cols else f"NULL AS {f_}")
    for f_ in _TIME_FIELDS:
        c = cols.get(f_)
        t = types.get(c, "") if c else ""
        q = _quote_ident(c, available) if c else None
        # nanosecond types (Parquet TIMESTAMP(NANOS)) go as text, which keeps the digits below the
        # microsecond for the window test (queries/macros.sql kvir_ts_extra_ns)
        typed = t.startswith("TIMESTAMP") and not t.endswith("_NS")
        parts.append(f"{q}::TIMESTAMPTZ AS {f_}_tz" if c and typed and "TIME ZONE" in t else f"NULL::TIMESTAMPTZ AS {f_}_tz")
        parts.append(f"{q}::TIMESTAMP AS {f_}_naive" if c and typed and "TIME ZONE" not in t else f"NULL::TIMESTAMP AS {f_}_naive")
        parts.append(f"CAST({q} AS VARCHAR) AS {f_}_text" if c and not typed else f"NULL::VARCHAR AS {f_}_text")
    return ", ".join(parts)


def mapped_input(case: Case, src: Source, opts: IngestOptions, blanks=None) -> pa.Table:
    """A CSV (with a header) or a JSON Lines file with mapped fields, for queries/adapters/generic.sql.

    Both come from the shared records reader (kvir.formats.readers: one JSON object per record, every line
    numbered, CSV rows DuckDB rejects kept with their reason), and each mapped field is read with a bound
    JSON path: a CSV column name is one key, a JSON Lines key may be a dotted path into nested objects."""
    from kvir.ingest.readers import read_records

    csv = src.format.reader == "csv-mapped"
    if csv:
        available = _csv_columns(case, src)
        cols = _mapping(src, available)
        paths = {f_: ['$."' + c.replace('"', '\\"') + '"'] for f_, c in cols.items()}
    else:
        first = next((line for line in head_lines(src.paths[0], 50) if line.strip()), "{}")
        try:
            keys = list(_json.loads(first).keys())
        except Exception:
            keys = []
        cols = dict(src.columns)
        cols.pop("ts_unit", None)
        if not cols:
            cols = {f_: f_ for f_ in MAPPABLE_FIELDS if f_ in keys}
        if "request_id" not in cols or not ({"ts", "ts_end"} & cols.keys()):
            raise InputError("generic-jsonl needs a mapping with at least request_id and ts", path=src.label,
                             hint="add [sources.columns] to incident.toml")
        # a field may name several paths, tried in order (a body and a stream's chunks: "body.id", "body.0.id")
        paths = {f_: [_json_path(x) for x in (c if isinstance(c, list) else [c])] for f_, c in cols.items()}
    records = read_records(case, src, opts, "csv" if csv else "ndjson", blanks)
    params: dict[str, Any] = {"maxb": opts.max_line_bytes}
    parts = []
    for f_ in MAPPABLE_FIELDS:
        names = [f"{f_}_text"] if f_ in _TIME_FIELDS else [f_]
        if f_ in _TIME_FIELDS:
            parts += [f"NULL::TIMESTAMPTZ AS {f_}_tz", f"NULL::TIMESTAMP AS {f_}_naive"]
        if f_ in paths:
            tried = []
            for i, path in enumerate(paths[f_]):
                params[f"p_{f_}_{i}"] = path
                tried.append(f"json_extract_string(text, $p_{f_}_{i})")
            parts.append(f"CASE WHEN ok THEN coalesce({', '.join(tried)}) END AS {names[0]}")
        else:
            parts.append(f"NULL::VARCHAR AS {names[0]}")
    name = f"mapped{int(src.source_id)}_records"
    case.con.register(name, records)
    try:
        return case.con.sql(f"""
            WITH v AS (SELECT source_id, line_no, line_bytes, problem, line AS text,
                              CASE WHEN problem IS NULL AND line_bytes <= $maxb AND json_valid(line)
                                   THEN json_type(line) = 'OBJECT' ELSE false END AS ok
                       FROM {name})
            SELECT source_id, line_no,
                CASE WHEN problem IS NOT NULL THEN problem
                     WHEN trim(text) = '' THEN 'blank line'
                     WHEN line_bytes > $maxb THEN 'line longer than ' || $maxb || ' bytes'
                     WHEN NOT json_valid(text) THEN 'malformed JSON'
                     WHEN NOT ok THEN 'JSON value is not an object' END AS _problem,
                CASE WHEN NOT ok THEN text END AS _raw,
                {', '.join(parts)},
                NULL::VARCHAR AS source_path
            FROM v ORDER BY line_no""", params=params).to_arrow_table()
    finally:
        case.con.unregister(name)


def _csv_columns(case: Case, src: Source) -> list[str]:
    """The header of a CSV as DuckDB reads it with the records reader's options (the names it then uses as
    JSON keys; rejecting bad rows matters: without it the sniffer can take a ragged file for one column)."""
    n = int(src.source_id)
    try:
        desc = case.con.execute(
            "DESCRIBE SELECT * FROM read_csv($p, all_varchar = true, header = true, store_rejects = true, "
            "rejects_table = $rt, rejects_scan = $rs, max_line_size = 134217728)",
            {"p": str(duckdb_path(src.paths[0], case.path / "tmp")), "rt": f"src{n}_hdr_rejects",
             "rs": f"src{n}_hdr_scan"}).fetchall()
    except Exception as e:
        raise InputError(f"cannot read as CSV: {e}", path=src.label) from None
    return [r[0] for r in desc]


def _json_path(key: str) -> str:
    """A dotted key as a JSON path: "usage.prompt_tokens"; a whole-number part indexes an array ("body.0.id";
    "body.-1.usage": the last element, as a stream's last chunk). A key starting with $ is a path already."""
    if key.startswith("$"):
        return key
    return "$" + "".join(f"[{p}]" if p.isdigit() else f"[#{p}]" if p.startswith("-") and p[1:].isdigit()
                         else '."' + p.replace('"', '\\"') + '"' for p in key.split("."))


_INT_TYPES = ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT", "HUGEINT")
_TEXT_FIELDS = ("request_id", "account_id", "model", "finish_reason", "prefill_node", "decode_node")
_COUNT_FIELDS = ("prompt_tokens", "cached_tokens", "completion_tokens", "http_status", "prefill_tokens")


def _typed(cols: dict[str, str], types: dict[str, str]) -> bool:
    """Do the mapped Parquet columns already have kvir's types (so the lean adapter applies)?"""
    if "ts" not in cols or "latency_s" in cols:
        return False
    for f_, c in cols.items():
        t = types[c]
        if f_ in _TIME_FIELDS and t != "TIMESTAMP WITH TIME ZONE":
            return False
        if f_ in _COUNT_FIELDS and t not in _INT_TYPES:
            return False
        if f_ in _TEXT_FIELDS and t != "VARCHAR":
            return False
    return True


def _typed_projection(cols: dict[str, str], types: dict[str, str], available: list[str], source_id: int,
                      served_model: str | None) -> str:
    parts = []
    for f_ in MAPPABLE_FIELDS:
        if f_ == "latency_s":
            continue
        name = f"{f_}_tz" if f_ in _TIME_FIELDS else f_
        col = _column(f_, cols, types, available) if f_ in cols else None
        typ = "TIMESTAMPTZ" if f_ in _TIME_FIELDS else "BIGINT" if f_ in _COUNT_FIELDS else "VARCHAR"
        if f_ == "model" and served_model is not None:
            # the served model fills rows without one; read from the settings table (views take no
            # parameters; the id is a kvir-generated integer)
            fallback = f"(SELECT served_model FROM source_settings WHERE source_id = {int(source_id)})"
            parts.append(f"coalesce({col or 'NULL'}, {fallback}) AS model")
        elif col:
            parts.append(f"{col} AS {name}")
        else:
            parts.append(f"NULL::{typ} AS {name}")
    return ", ".join(parts)


def ingest_parquet(case: Case, src: Source) -> None:
    """Parquet stays where it is: a view maps its columns, another normalises them (no rows copied).
    Typed columns get the lean adapter (filters reach the Parquet scan); when the row-group statistics
    prove that no row is bad, the counts come from the footers and nothing is scanned."""
    con = case.con
    raw = f"src{src.source_id}_raw"
    files = [str(p) for p in src.paths]
    rel = con.read_parquet(files, hive_partitioning=True, file_row_number=True, filename=True)
    rel.create_view(raw, replace=True)   # DuckDB quotes the file paths itself
    desc = con.execute(f"DESCRIBE {raw}").fetchall()
    available = [r[0] for r in desc if r[0] not in ("file_row_number", "filename")]
    types = {r[0]: r[1] for r in desc}
    cols = _mapping(src, available)
    typed = _typed(cols, types)
    proj = (_typed_projection(cols, types, available, src.source_id, src.served_model) if typed
            else _mapped_projection(cols, types, available))
    extra = "" if typed else "NULL::VARCHAR AS _problem, NULL::VARCHAR AS _raw, "
    # A view cannot take bound parameters; the source id is a kvir-generated integer (int() makes sure).
    # source_line is the row's number in its file; a dataset of several files names the file too
    path = "filename" if len(files) > 1 else "NULL::VARCHAR"
    con.execute(f"CREATE OR REPLACE VIEW src{src.source_id}_input AS SELECT {int(src.source_id)}::INTEGER AS source_id, "
                f"file_row_number + 1 AS line_no, {extra}{proj}, {path} AS source_path FROM {raw}")
    adapter = "adapters/parquet_typed" if typed else src.format.adapter
    sql = compile_adapter(case, adapter, f"src{src.source_id}_input")
    con.execute(f"CREATE OR REPLACE VIEW records_src{src.source_id} AS {sql}")
    src.notes.append("typed columns: lean adapter, filters pushed into the Parquet scan" if typed
                     else "generic adapter (columns need conversion)")
    if typed:
        required = [cols[f_] for f_ in ("request_id", "ts") if f_ in cols]
        if src.served_model is None:
            required.append(cols.get("model", "model"))
        proof = case.run("case/parquet_clean", {
            "files": files, "required": required, "nonempty": [cols["request_id"]],
            "nonneg": [cols["prompt_tokens"]] if "prompt_tokens" in cols else []}, fetch=True)[0]
        row_groups, n_rows, unproven = proof
        if unproven == 0:
            con.execute("INSERT INTO source_counts VALUES ($id, 'request', NULL, $n)",
                        {"id": src.source_id, "n": n_rows})
            src.notes.append(f"counts from {row_groups} row-group footers: statistics prove no row is bad")
            return
    case.run("case/view_counts", {"source_id": src.source_id},
             inputs={"records": f"records_src{src.source_id}"})


