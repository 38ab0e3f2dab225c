"""The `records` reader: one numbered record per row, whatever shape the export has.

Customer-side exports come as NDJSON, as one JSON document (an array, or an object holding the array
under `result`, `data`, ...), or as CSV with a header. The adapter of such a format always sees the
same input: `source_id, line_no, line (VARCHAR: one JSON object), line_bytes, repaired, problem`, the
shape the `lines` formats get too (`tagged`): `problem` is the reader's reason for a record it could not
hand over (over the line limit, a CSV row DuckDB rejected, an unreadable document), else NULL.

    NDJSON     line_no = the line number; every line comes out (blank and malformed ones too)
    document   line_no = the record's 1-based position in the file (arrays are streamed by DuckDB)
    CSV        each row as a JSON object of its (text) cells; line_no = the physical line for rows
               DuckDB rejects (problem says why) and the remaining line numbers, in order, for the
               others (line 1 is the header); a quoted cell spanning lines shifts the numbering
A file that cannot be read as its shape at all becomes one record with a problem: nothing is dropped.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvir.ingest.lines import TEXT_SCHEMA, head_lines, iter_line_batches, open_maybe_compressed
from kvir.ingest.opener import duckdb_path
from kvir.ingest.sniff import csv_header

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import IngestOptions, Source

RECORD_SCHEMA = pa.schema([("source_id", pa.int32())] + list(TEXT_SCHEMA) + [("problem", pa.string())])
RECORD_KEYS = ("result", "data", "logs", "items", "rows", "records", "observations", "requests")


def shape_of(path: Path) -> str:
    """ndjson | array | document | csv, from the first lines. A file whose first line is damaged but most of
    whose other lines are JSON objects is NDJSON (few lines of a pretty-printed document are whole objects)."""
    head = head_lines(path, max_lines=40, max_bytes=1 << 16)
    lines = [x.strip() for x in head if x.strip()]
    first = lines[0] if lines else ""
    rest = lines[1:]
    if rest and 2 * sum(_is_object(x) for x in rest) > len(rest):
        return "ndjson"          # whatever the first line holds: a stray or damaged line of NDJSON
    try:
        v = json.loads(first)
    except ValueError:
        v = None
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "document" if any(isinstance(v.get(k), list) for k in RECORD_KEYS) else "ndjson"
    # the first line does not parse: a document opened on it (pretty-printed, or one line too long to
    # read here), or a damaged NDJSON line
    if first in ("{", "[") or first.endswith(("{", "[", ",", ":")) or _OPENS_RECORDS.match(first):
        return "array" if first.startswith("[") else "document"
    if first.startswith("[{"):
        return "array"
    if not first.startswith(("{", "[")) and csv_header(head) is not None:
        return "csv"
    return "ndjson"


_OPENS_RECORDS = re.compile(r'\{\s*"(?:' + "|".join(RECORD_KEYS) + r')"\s*:\s*\[')


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def records_input(case: "Case", group: list["Source"], opts: "IngestOptions",
                  on_bytes: Callable[[int], None] | None = None, note=None, blanks=None) -> pa.RecordBatchReader:
    """The records of every file in the group as one stream, each row tagged with its source_id.
    Documents and CSV files are read first (DuckDB reads them, and a connection cannot run a query
    while it feeds another); NDJSON files are streamed as the adapter consumes them. blanks(source_id):
    the counter of a file's empty lines, which then become no rows (kvir.ingest.run.BatchReading)."""
    shapes = {src.source_id: shape_of(src.paths[0]) for src in group}
    tables = {src.source_id: read_records(case, src, opts, shapes[src.source_id])
              for src in group if shapes[src.source_id] != "ndjson"}

    def batches() -> Iterator[pa.RecordBatch]:
        for src in group:
            if src.source_id in tables:
                if on_bytes is not None:
                    on_bytes(sum(p.stat().st_size for p in src.paths))
                yield from tables[src.source_id].to_batches()
                continue
            for b in iter_line_batches(src.paths[0], opts.max_line_bytes, on_bytes=on_bytes, text=True,
                                       stamp=src.stamp(), blanks=blanks(src.source_id) if blanks else None):
                if note is not None:   # the batch's bookkeeping (repaired lines: kvir.ingest.run.BatchReading.note)
                    note(b, src.source_id)
                yield tagged(b, src.source_id, opts.max_line_bytes)
    return pa.RecordBatchReader.from_batches(RECORD_SCHEMA, batches())


def read_records(case: "Case", src: "Source", opts: "IngestOptions", shape: str | None = None,
                 blanks: Callable[[int], None] | None = None) -> pa.Table:
    """The records of one file as a table; its shape (ndjson | array | document | csv) given or sniffed.
    blanks(n): NDJSON's empty lines are counted there instead of becoming records."""
    shape = shape or shape_of(src.paths[0])
    if shape == "ndjson":
        return pa.Table.from_batches(
            [tagged(b, src.source_id, opts.max_line_bytes)
             for b in iter_line_batches(src.paths[0], opts.max_line_bytes, text=True, stamp=src.stamp(),
                                        blanks=blanks)], RECORD_SCHEMA)
    table = _csv_records(case, src) if shape == "csv" else _document_records(case, src, shape)
    return _with_overlong(table.cast(RECORD_SCHEMA), opts.max_line_bytes)


def tagged(batch: pa.RecordBatch, source_id: int, max_line_bytes: int) -> pa.RecordBatch:
    """Numbered lines as records: each row tagged with its source_id, and the reader's problem for a line
    over the limit (it arrives empty, with its true length)."""
    n = batch.num_rows
    return pa.RecordBatch.from_arrays(
        [pa.array(np.full(n, source_id, np.int32))] + batch.columns
        + [_overlong(batch.column("line_bytes"), max_line_bytes, "line")], schema=RECORD_SCHEMA)


def _overlong(lengths: pa.Array, max_bytes: int, what: str, problem: pa.Array | None = None) -> pa.Array:
    """problem (or NULL) for each row, with `<what> longer than N bytes` where the row is over the limit."""
    too = np.asarray(lengths.to_numpy(zero_copy_only=False)) > max_bytes
    if problem is None:
        problem = pa.nulls(len(lengths), pa.string())
    if not too.any():
        return problem
    return pc.if_else(pc.and_(pa.array(too), pc.is_null(problem)), f"{what} longer than {max_bytes} bytes", problem)


def _with_overlong(table: pa.Table, max_bytes: int) -> pa.Table:
    """A document's or CSV's records with a problem for each record over the limit."""
    problem = _overlong(table.column("line_bytes").combine_chunks(), max_bytes, "record",
                        table.column("problem").combine_chunks())
    return table.set_column(table.schema.get_field_index("problem"), "problem", problem)


_CASES = " ".join(
    f"WHEN json_type(j -> '$.{k}') = 'ARRAY' THEN json_extract(j, '$.{k}[*]')" for k in RECORD_KEYS)
_DOC_SQL = f"""
    WITH d AS (SELECT row_number() OVER () AS doc_no, json AS j
               FROM read_json_objects($p, format = $fmt, maximum_object_size = $max_object)),
    e AS (SELECT doc_no, CASE WHEN json_type(j) = 'ARRAY' THEN json_extract(j, '$[*]') {_CASES} ELSE [j] END AS recs
          FROM d)
    SELECT $sid::INTEGER AS source_id, row_number() OVER (ORDER BY e.doc_no, u.i)::BIGINT AS line_no,
           u.rec::VARCHAR AS line, strlen(u.rec::VARCHAR)::BIGINT AS line_bytes, false AS repaired,
           NULL::VARCHAR AS problem
    FROM e, unnest(e.recs) WITH ORDINALITY AS u(rec, i)
    ORDER BY line_no"""


def _max_object_bytes(case: "Case", path: Path) -> int:
    """read_json_objects' maximum_object_size: DuckDB allocates buffers of about twice it up front, so it
    must not be the 2 GiB maximum under a bounded memory limit. An uncompressed document is no larger than
    its file; a compressed one gets a quarter of the memory limit (a larger document is quarantined with
    DuckDB's reason, never cut)."""
    from kvir.case.store import memory_limit_bytes
    from kvir.ingest.lines import compression_of

    limit = memory_limit_bytes(case.con)
    size = path.stat().st_size + 1 if compression_of(path) is None else limit // 4
    return int(max(1 << 20, min(size, (1 << 31) - 1, max(1 << 20, limit // 3))))


def _document_records(case: "Case", src: "Source", shape: str) -> pa.Table:
    """Records of a JSON document: array elements (streamed), or the array under a known key, or the
    object itself. A document DuckDB cannot parse is one record whose problem says so."""
    fmt = "array" if shape == "array" else "unstructured"
    try:
        path = duckdb_path(src.paths[0], case.path / "tmp")
        return case.con.sql(_DOC_SQL, params={"p": str(path), "fmt": fmt, "sid": src.source_id,
                                              "max_object": _max_object_bytes(case, path)}).to_arrow_table()
    except Exception as e:  # noqa: BLE001 - any reader failure becomes a counted, quarantined record
        with open_maybe_compressed(src.paths[0]) as f:
            size = len(f.read())
        reason = f"malformed JSON document: {str(e).splitlines()[0][:160]}"
        return pa.table({"source_id": pa.array([src.source_id], pa.int32()), "line_no": pa.array([1], pa.int64()),
                         "line": pa.array([""], pa.string()), "line_bytes": pa.array([size], pa.int64()),
                         "repaired": pa.array([False]), "problem": pa.array([reason])})


def _csv_records(case: "Case", src: "Source") -> pa.Table:
    """CSV rows as JSON objects (all cells as text). See the module docstring for line numbers."""
    con = case.con
    rt, rs = f"src{int(src.source_id)}_csv_rejects", f"src{int(src.source_id)}_csv_scan"
    read = ("read_csv($p, all_varchar = true, header = true, store_rejects = true, "
            "rejects_table = $rt, rejects_scan = $rs, max_line_size = 134217728)")
    params = {"p": str(duckdb_path(src.paths[0], case.path / "tmp")), "rt": rt, "rs": rs}
    try:
        good = con.sql(f"SELECT row_number() OVER () AS k, to_json(c)::VARCHAR AS line FROM {read} AS c",
                       params=params).to_arrow_table()
        # DuckDB stores one error per bad column: one rejected record per line (its first error)
        rej = con.sql(f"SELECT line::BIGINT AS line_no, any_value(csv_line) AS raw, "
                      f"arg_min('CSV ' || error_type || ': ' || left(error_message, 120), column_idx) AS problem "
                      f"FROM {rt} GROUP BY line").to_arrow_table()
    except Exception as e:  # noqa: BLE001
        return pa.table({"source_id": pa.array([src.source_id], pa.int32()), "line_no": pa.array([1], pa.int64()),
                         "line": pa.array([""], pa.string()), "line_bytes": pa.array([0], pa.int64()),
                         "repaired": pa.array([False]),
                         "problem": pa.array([f"unreadable CSV: {str(e).splitlines()[0][:160]}"])})
    # good row k takes the k-th line number (from 2) that no rejected row holds
    rej_lines = np.sort(np.asarray(rej.column("line_no").to_numpy(zero_copy_only=False), np.int64))
    n_good = good.num_rows
    candidates = np.arange(2, 2 + n_good + len(rej_lines), dtype=np.int64)
    free = np.setdiff1d(candidates, rej_lines, assume_unique=False)[:n_good]
    lines = good.column("line")
    lens = pc.binary_length(lines).cast(pa.int64())
    good_tbl = pa.table({"source_id": pa.array(np.full(n_good, src.source_id, np.int32)),
                         "line_no": pa.array(free), "line": lines.cast(pa.string()),
                         "line_bytes": lens, "repaired": pa.array(np.zeros(n_good, bool)),
                         "problem": pa.nulls(n_good, pa.string())})
    n_rej = rej.num_rows
    rej_tbl = pa.table({"source_id": pa.array(np.full(n_rej, src.source_id, np.int32)),
                        "line_no": rej.column("line_no"), "line": rej.column("raw").cast(pa.string()),
                        "line_bytes": pc.binary_length(rej.column("raw")).cast(pa.int64()),
                        "repaired": pa.array(np.zeros(n_rej, bool)), "problem": rej.column("problem")})
    return pa.concat_tables([good_tbl, rej_tbl]).sort_by("line_no")
