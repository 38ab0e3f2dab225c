"""Big files of bare JSON lines read by DuckDB's own JSON reader, every line still numbered and counted.

kvir's line reader (kvir.ingest.lines) numbers every line and hands it to DuckDB as text, which then
parses it with a JSON function: on a 10 M-line SGLang log that is ~6x a bare `read_ndjson`. DuckDB's
JSON reader parses on every thread but cannot say which line a row came from (`WITH ORDINALITY` runs
the scan on one thread: 13.6 s against 4.1 s on that log). What it does keep is the order: one
CREATE TABLE AS over it writes the rows in file order (DuckDB's preserve_insertion_order), so a row's
rowid is its line's index, provided that every line gave exactly one row. That is what is checked here,
from a second read of the same bytes that also takes the SHA-256:

    lines       the file's lines (newlines, plus a last line without one) = the stage's rows
    empty       no row without any of the format's top-level fields (a `null` line reads so, and the
                line reader counts such a line otherwise)
    long        no line over --max-line-bytes (the JSON reader does not refuse long lines; the line
                reader quarantines them)

and the JSON reader itself refuses what the line path would read differently: malformed JSON, invalid
UTF-8, a field of another shape, a duplicate key. Blank lines it skips (the count then differs). When
any check fails, the stage is dropped and the file goes to the line reader, so what reaches the case
is the same either way (tests/formats/test_native_json.py compares the two paths record by record);
the manifest says which reader read each input and why. Which files try: sglang-json files of bare JSON
lines, uncompressed, of at least 64 MiB (KVIR_NATIVE_MIN_BYTES: another size, or `off` for none).
"""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import numpy as np

from kvir.case.store import Case
from kvir.core.errors import InputError, disk_problem
from kvir.core.sql import bind, load
from kvir.ingest.epilogue import compile_adapter
from kvir.ingest.lines import compression_of
from kvir.ingest.opener import changed_since
from kvir.ingest.sources import IngestOptions, Source, hashed_while_read
from kvir.ingest.stage import run_adapter

_BLOCK = 16 << 20


@dataclass
class FileCheck:
    """What the second read of a file found."""
    lines: int = 0
    sha256: str | None = None
    too_long: bool = False
    error: str | None = None


def eligible(src: Source, opts: IngestOptions) -> str | None:
    """Why `src` cannot be read natively (None: it can)."""
    if src.format.native is None:
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
        if fh.read(1) != b"{":
            return "not bare JSON lines"
    return None


def check_file(path: Path, max_line_bytes: int, on_bytes: Callable[[int], None] | None, hashed: bool) -> FileCheck:
    """Count the lines, hash the bytes and check every newline-free stretch that crosses a block
    boundary against the limit, in one read. Blocks are at most max_line_bytes + 1 bytes, so a stretch
    inside one block is too short to be an over-long line: checking the stretches across boundaries
    checks them all (a \r before the newline counts, which can only send a file to the line reader)."""
    out = FileCheck()
    h = hashlib.sha256() if hashed else None
    block = min(_BLOCK, max_line_bytes + 1)
    try:
        with open(path, "rb", buffering=0) as fh:
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
    except OSError as e:
        out.error = str(e)
    out.sha256 = h.hexdigest() if h is not None else None
    return out


# What the JSON reader's refusal says, by kind only: its message can quote the record (a prompt).
_REFUSALS = (("invalid UTF-8", "invalid UTF-8"), ("duplicate key", "a duplicate key"),
             ("transform error", "a field of another shape"), ("Malformed JSON", "malformed JSON"))


def _refusal(message: str) -> str:
    return next((what for key, what in _REFUSALS if key in message), "a line it cannot read")


def stage(case: Case, src: Source, opts: IngestOptions, on_bytes: Callable[[int], None] | None,
          hashed: bool) -> tuple[str | None, str, FileCheck]:
    """Read `src` into a temp stage table with DuckDB's JSON reader, checked against a second read of the
    file. Returns (stage table or None, how it was read or why not, the check); with None the caller
    reads the file with the line reader (the stage is gone)."""
    con = case.con
    name = f"native{src.source_id}_stage"
    q = load(src.format.native[0])
    params = {"path": str(src.paths[0]), "source_id": src.source_id,
              "max_object_bytes": int(opts.max_line_bytes) + 2}   # + the terminator (\r\n)
    refused = None
    with ThreadPoolExecutor(max_workers=1) as pool:     # the second read runs while DuckDB parses
        second_read = pool.submit(check_file, src.paths[0], opts.max_line_bytes, on_bytes, hashed)
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {q.compile()}", bind(q, params))
        except (duckdb.InvalidInputException, duckdb.ConversionException) as e:   # what the reader refuses
            refused = _refusal(str(e))
        except duckdb.Error as e:
            if disk_problem(str(e)) or isinstance(e, duckdb.InterruptException):
                raise                # the case's disk, or Ctrl-C: not the input's fault
            raise InputError(f"cannot read as {src.format.name}: {e}", path=src.label) from None
        check = second_read.result()
    why = None
    if refused is not None:
        why = f"DuckDB's JSON reader refused it ({refused})"
    elif check.error:
        why = f"cannot read it twice: {check.error}"
    else:
        rows, empty = con.execute(f"SELECT count(*), count(*) FILTER (WHERE empty) FROM {name}").fetchone()
        if check.too_long:
            why = f"it holds a line over {opts.max_line_bytes} bytes"
        elif rows != check.lines:
            why = f"the JSON reader gave {rows} rows for {check.lines} lines (blank lines?)"
        elif empty:
            why = f"{empty} lines hold no field of the format (or are null)"
    if why is not None:
        con.execute(f"DROP TABLE IF EXISTS {name}")
        return None, f"kvir line reader: {why}", check
    return name, "DuckDB read_ndjson (lines checked: count, length, fields)", check


def read_natively(case: Case, group: list[Source], opts: IngestOptions, digests: dict[int, str],
                  on_bytes: Callable[[int], None] | None = None) -> list[Source]:
    """Read the group's big files of bare JSON lines with DuckDB's JSON reader into records_text (their
    SHA-256 into `digests`); returns the sources left for the line reader. Each input's manifest entry
    says which reader read it, and why not the JSON reader when it tried."""
    entries = {e["source_id"]: e for e in case.manifest["inputs"]}
    rest = []
    for src in group:
        if eligible(src, opts) is not None:
            rest.append(src)
            continue
        table, how, check = stage(case, src, opts, on_bytes, hashed=hashed_while_read(src, opts))
        moved = changed_since(src.paths[0], src.stamp()) if table is not None else None
        if moved:   # the line reader reads the file as it was listed; DuckDB's reader cannot
            case.con.execute(f"DROP TABLE IF EXISTS {table}")
            table, how = None, f"kvir line reader: the file changed while DuckDB read it ({moved})"
        entries[src.source_id]["reader"] = how
        if table is None:
            rest.append(src)      # read again, line by line (the progress bar counts its bytes twice)
            continue
        try:
            sql = compile_adapter(case, src.format.adapter, table, parse=src.format.native[1], request_fields_only=True)
            run_adapter(case.con, table, None, sql)
        finally:
            try:
                case.con.execute(f"DROP TABLE IF EXISTS {table}")
            except duckdb.Error:
                pass              # the error that brought us here is the one to report
        if check.sha256 is not None:
            digests[src.source_id] = check.sha256
    return rest
