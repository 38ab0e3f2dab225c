"""Big log files read by DuckDB's own readers, every line still numbered and counted.

kvir's line reader (kvir.ingest.lines) numbers every line in Python and hands it to DuckDB as text.
DuckDB's readers parse on every thread, but cannot say which line a row came from (`WITH ORDINALITY`
runs the scan on one thread). What they keep is the order: one CREATE TABLE AS over them writes the
rows in file order (preserve_insertion_order), so a row's rowid is its line's index, provided that
every line gave exactly one row and that nothing in the plan reorders rows. So the format's adapter runs
inside that one statement, over the reader's rows (the source's settings come in as constants, by a
cross product: a join would reorder), and the table it fills holds the records themselves: the view
records_nat<N> numbers them (rowid + 1) and adds what is the same on every row (source, model, node,
role). Nothing is written twice. A file of bare JSON objects goes to the JSON reader (the format's
`native` query); any other, e.g. SGLang's logger with its `[YYYY-MM-DD HH:MM:SS] ` before each
record, to the CSV reader as one column of lines (queries/parse/lines_csv.sql), then the line path's
own parse query. Checked, before the table is kept:

    plan        every operator between the reader and the table keeps order (EXPLAIN)
    refusal     the reader refused nothing: malformed JSON, invalid UTF-8, a field of another shape, a
                duplicate key, a line over the limit make it raise, where the line reader reads each
                line on its own
    lines       the file's lines (newlines, plus a last line without one), counted by a second read of
                the same bytes that also takes the SHA-256, equal the table's rows (the JSON reader
                skips blank lines; the CSV reader also breaks a line at a lone \r)
    delimiter   no \x01 byte (the CSV reader's delimiter: it would cut the line there)
    empty       no JSON line without any of the format's fields (`null` and `{}` read alike there)
    long        no line over --max-line-bytes (the JSON reader does not refuse long lines)
    unchanged   the file's size, modification time and inode are the same after both reads as before
                (a file that grows while it is read goes to the line reader, whose digest is of exactly
                the bytes it parsed)

When any check fails, the table is dropped and the file goes to the line reader, so what reaches the
case is the same either way (tests/formats/test_native_json.py compares them on every fixture and
fault); the manifest says which reader read each input and why. Which files try: files of a format
with a `native` query (sglang-json), uncompressed, not starting with a byte-order mark, of at least
64 MiB (KVIR_NATIVE_MIN_BYTES: another size, or `off`).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import numpy as np

from kvir.case.store import Case
from kvir.core.errors import InputError, disk_problem
from kvir.core.sql import load
from kvir.ingest.epilogue import VERDICT_TYPE, adapter_query, epilogue
from kvir.ingest.lines import compression_of
from kvir.ingest.opener import changed_since
from kvir.ingest.sources import IngestOptions, Source, hashed_while_read

_BLOCK = 16 << 20
# The problem the native parse query gives a line with none of the format's fields; a file with one goes
# to the line reader (which tells `null`, another log line, from `{}`, a record missing its fields).
EMPTY_PROBLEM = "no field of the format (or null)"
# Operators that pass rows on in the order they get them; from the table down to the reader, the plan
# may hold only these (a cross product streams its first child: the settings are its second).
_ORDERED = {"PROJECTION", "FILTER", "CROSS_PRODUCT", "READ_NDJSON", "READ_JSON", "READ_CSV"}
# The columns every row gets from the view, not from the table.
_FROM_VIEW = ("source_id", "source_line", "raw")


@dataclass
class FileCheck:
    """What the second read of a file found."""
    lines: int = 0
    sha256: str | None = None
    too_long: bool = False
    delimiter: bool = False       # a \x01 byte (the CSV reader's delimiter: it would cut the line there)
    changed: bool = False
    error: str | None = None


_LINES_CSV = "parse/lines_csv"


def eligible(src: Source, opts: IngestOptions) -> str | None:
    """Why `src` cannot be read natively (None: it can)."""
    if src.format.native is None or src.format.parse is None:
        return "format"
    if len(src.paths) != 1 or compression_of(src.paths[0]) is not None:
        return "compressed or several files"
    if opts.keep_raw:
        return "--keep-raw keeps the text of quarantined lines, which only the line reader has"
    if opts.max_line_bytes < 1 << 20:
        return "--max-line-bytes under 1 MiB"
    path = src.paths[0]
    if path.stat().st_size < opts.native_min_bytes:
        return "small file"
    with open(path, "rb") as fh:
        if fh.read(1) == b"\xef":
            return "it starts with a byte-order mark, which DuckDB's readers drop and kvir's line reader reads"
    return None


def _steps(path: Path) -> tuple[str | None, bool]:
    """(the reader query, or None when the format's native query reads the file; and whether that is
    DuckDB's JSON reader): bare JSON objects by the JSON reader, any other lines by the CSV reader."""
    with open(path, "rb") as fh:
        json_lines = fh.read(1) == b"{"
    return (None if json_lines else _LINES_CSV), json_lines


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


def check_file(path: Path, max_line_bytes: int, on_bytes: Callable[[int], None] | None, hashed: bool) -> FileCheck:
    """Count the lines, hash the bytes and check every newline-free stretch that crosses a block
    boundary against the limit, in one read. Blocks are at most max_line_bytes + 1 bytes, so a stretch
    inside one block is too short to be an over-long line: checking the stretches across boundaries
    checks them all (a \\r before the newline counts, which can only send a file to the line reader)."""
    out = FileCheck()
    h = hashlib.sha256() if hashed else None
    block = min(_BLOCK, max_line_bytes + 1)
    try:
        with open(path, "rb", buffering=0) as fh:
            before = _identity(os.fstat(fh.fileno()))
            buf = bytearray(block)
            view = memoryview(buf)
            arr = np.frombuffer(buf, np.uint8)
            offset = 0          # file offset of buf[0]
            last_nl = -1        # file offset of the last newline seen
            while True:
                n = fh.readinto(buf)
                if not n:
                    break
                if h is not None:
                    h.update(view[:n])
                out.delimiter = out.delimiter or buf.find(b"\x01", 0, n) >= 0
                first = buf.find(b"\n", 0, n)
                if first < 0:
                    out.too_long |= offset + n - last_nl - 1 > max_line_bytes
                else:
                    out.too_long |= offset + first - last_nl - 1 > max_line_bytes
                    out.lines += int(np.count_nonzero(arr[:n] == 10))   # NumPy: ~1.5x bytes.count
                    last_nl = offset + buf.rfind(b"\n", 0, n)
                offset += n
                if on_bytes is not None:
                    on_bytes(n)
            out.too_long |= offset - last_nl - 1 > max_line_bytes
            if offset and last_nl != offset - 1:
                out.lines += 1        # a last line without its newline
            out.changed = offset != before[0] or _identity(os.fstat(fh.fileno())) != before
    except OSError as e:
        out.error = str(e)
    out.sha256 = h.hexdigest() if h is not None else None
    return out


# What a reader's refusal says, by kind only: its message can quote the record (a prompt).
_REFUSALS = (("invalid UTF-8", "invalid UTF-8"), ("Invalid unicode", "invalid UTF-8"),
             ("duplicate key", "a duplicate key"), ("transform error", "a field of another shape"),
             ("Malformed JSON", "malformed JSON"), ("Maximum line size", "a line over --max-line-bytes"))


def _refusal(message: str) -> str:
    return next((what for key, what in _REFUSALS if key in message), "a line it cannot read")


def _keeps_order(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> bool:
    """Does every operator from the plan's root down to the file reader pass rows on in order?"""
    node = json.loads(con.execute(f"EXPLAIN (FORMAT json) {sql}", params).fetchall()[0][1])[0]
    while node["name"] in _ORDERED:
        if node["name"].startswith("READ_"):
            return True
        node = node["children"][0]
    return False


@dataclass
class NativeRead:
    """The table a source's records went into, and how to number them."""
    table: str
    view: str
    counts: list[tuple[str, str | None, int]]      # kind, reason, rows


def _read(case: Case, src: Source, opts: IngestOptions, on_bytes: Callable[[int], None] | None,
          hashed: bool) -> tuple[NativeRead | None, str, FileCheck]:
    """Fill table native<N> with the adapter's records of `src`, read by DuckDB's own reader (see the
    module docstring), checked against a second read of the file. Returns (the read or None, how it was read or why not, the
    check); with None the caller reads the file with the line reader (the table is gone)."""
    con, sid = case.con, int(src.source_id)
    table, view = f"native{sid}", f"records_nat{sid}"
    reader, json_lines = _steps(src.paths[0])
    params = {"path": str(src.paths[0]), "source_id": sid}
    if json_lines:
        params.update(empty_problem=EMPTY_PROBLEM, max_object_bytes=int(opts.max_line_bytes) + 2)   # + \r\n
    else:
        params.update(max_line_size=int(opts.max_line_bytes) + 2,
                      buffer_size=max(32 << 20, 2 * (int(opts.max_line_bytes) + 2)))
    fmt = src.format
    prefix, sql, emitted = adapter_query(case, fmt.adapter, table, parse=fmt.native if json_lines else fmt.parse,
                                         params=params, settings_columns=fmt.settings_columns, one_source=True,
                                         reader=reader)
    stored = [c for c in emitted if c not in _FROM_VIEW and c != "verdict"]
    select = (prefix + "SELECT a.verdict, " + ", ".join(f"CASE WHEN a.verdict IS NULL THEN a.{c} END AS {c}" for c in stored)
              + f"\nFROM (\n{sql}\n) AS a")
    if not _keeps_order(con, select, params):
        return None, "kvir line reader: DuckDB planned the read out of file order", FileCheck()
    refused, t0 = None, time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as pool:     # the second read runs while DuckDB parses
        second_read = pool.submit(check_file, src.paths[0], opts.max_line_bytes, on_bytes, hashed)
        try:
            con.execute(f"CREATE OR REPLACE TABLE {table} AS {select}", params)
        except (duckdb.InvalidInputException, duckdb.ConversionException) as e:   # what the reader refuses
            refused = _refusal(str(e))
        except duckdb.Error as e:
            if disk_problem(str(e)) or isinstance(e, duckdb.InterruptException):
                raise                # the case's disk, or Ctrl-C: not the input's fault
            raise InputError(f"cannot read as {src.format.name}: {e}", path=src.label) from None
        check = second_read.result()
    case.log.record(load(fmt.adapter), f"CREATE OR REPLACE TABLE {table} AS {select}", params, None,
                    time.perf_counter() - t0, {"settings": "source_settings"})
    why, counts = None, []
    if refused is not None:
        why = f"DuckDB's {'JSON' if json_lines else 'CSV'} reader refused it ({refused})"
    elif check.error:
        why = f"cannot read it twice: {check.error}"
    elif check.changed:
        why = "it changed while it was read"
    elif moved := changed_since(src.paths[0], src.stamp()):   # the bytes parsed must be the bytes listed
        why = f"the file changed since it was listed ({moved})"
    elif check.too_long:
        why = f"it holds a line over {opts.max_line_bytes} bytes"
    elif check.delimiter and not json_lines:
        why = "it holds a \\x01 byte, where DuckDB's CSV reader would cut the line"
    else:
        counts = con.execute(f"SELECT coalesce(verdict.kind, 'request'), verdict.reason, count(*) FROM {table} "
                             "GROUP BY ALL ORDER BY ALL").fetchall()
        rows, empty = sum(n for *_, n in counts), sum(n for _, r, n in counts if r == EMPTY_PROBLEM)
        if rows != check.lines:
            why = (f"DuckDB's {'JSON' if json_lines else 'CSV'} reader gave {rows} rows for {check.lines} lines "
                   f"({'blank lines' if json_lines else 'a lone carriage return'}?)")
        elif empty:
            why = f"{empty} lines hold no field of the format (or are null)"
    if why is not None:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        return None, f"kvir line reader: {why}", check
    cols = ", ".join(stored)
    numbered = (f"SELECT {sid}::INTEGER AS source_id, rowid + 1 AS source_line, NULL::VARCHAR AS raw, verdict, {cols} "
                f"FROM {table}")   # rowid + 1: the line number, as the table was written in file order
    types = {"source_id": "INTEGER", "source_line": "BIGINT", "raw": "VARCHAR", "verdict": VERDICT_TYPE,
             **{c: emitted[c] for c in stored}}
    con.execute(f"CREATE OR REPLACE VIEW {view} AS "
                + epilogue(numbered, types, "source_settings", request_fields_only=True))
    how = "read_ndjson" if json_lines else "read_csv, one column"
    return NativeRead(table, view, counts), f"DuckDB {how} (lines checked: count, length, fields, order)", check


def read_natively(case: Case, group: list[Source], opts: IngestOptions, digests: dict[int, str],
                  native: dict[int, NativeRead], on_bytes: Callable[[int], None] | None = None) -> list[Source]:
    """Read the group's big files with DuckDB's own readers (each into native<N>, numbered by the view
    records_nat<N>, counted into source_counts; the SHA-256 into `digests`, the read into `native`);
    returns the sources left for the line reader. Each input's manifest entry says which reader read it,
    and why not DuckDB's when it tried."""
    entries = {e["source_id"]: e for e in case.manifest["inputs"]}
    rest = []
    for src in group:
        if eligible(src, opts) is not None:
            rest.append(src)
            continue
        got, how, check = _read(case, src, opts, on_bytes, hashed=hashed_while_read(src, opts))
        entries[src.source_id]["reader"] = how
        if got is None:
            rest.append(src)      # read again, line by line (the progress bar counts its bytes twice)
            continue
        case.con.executemany("INSERT INTO source_counts VALUES ($1, $2, $3, $4)",
                             [(src.source_id, kind, None if kind == "request" else reason, n)
                              for kind, reason, n in got.counts])
        native[src.source_id] = got
        if check.sha256 is not None:
            digests[src.source_id] = check.sha256
    return rest
