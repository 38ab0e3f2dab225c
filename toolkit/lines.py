"""Text inputs as Arrow batches of numbered lines, for DuckDB to parse.

Why not DuckDB's own readers for text logs: they cannot say which *line* a record came from
(`file_row_number` is Parquet-only), read_csv silently drops lines that are not UTF-8 when told to
ignore errors, and read_json skips blank lines. An incident count must name the file and line of
every record and lose none, so kvir numbers the lines itself. NumPy finds the newlines of each
chunk; no Python code runs per line. Each batch has:

    line_no     BIGINT   1-based line number in the (decompressed) file
    line        BLOB     the line's bytes, newline included (empty when the line was too long)
    line_bytes  BIGINT   the line's true length, newline excluded
    repaired    BOOLEAN  the chunk held invalid UTF-8 and this line may carry U+FFFD replacements

gzip and zstd inputs are decompressed on the fly (detected by magic bytes, not by name).
"""
from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa

CHUNK_BYTES = 8 << 20
DEFAULT_MAX_LINE_BYTES = 16 << 20
SCHEMA = pa.schema([
    ("line_no", pa.int64()),
    ("line", pa.large_binary()),
    ("line_bytes", pa.int64()),
    ("repaired", pa.bool_()),
])
_REPLACEMENT = "\ufffd".encode()


def open_maybe_compressed(path: str | Path) -> BinaryIO:
    """Open a file for reading bytes, transparently decompressing gzip or zstd."""
    f = open(path, "rb")
    head = f.peek(4)[:4] if hasattr(f, "peek") else b""
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f)  # type: ignore[return-value]
    if head == b"\x28\xb5\x2f\xfd":
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(f, closefd=True))
    return f


def compression_of(path: str | Path) -> str | None:
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head == b"\x28\xb5\x2f\xfd":
        return "zstd"
    return None


def head_lines(path: str | Path, max_lines: int = 50, max_bytes: int = 1 << 20) -> list[str]:
    """The first lines of a (possibly compressed) file, decoded leniently: for sniffing formats."""
    with open_maybe_compressed(path) as f:
        data = f.read(max_bytes)
    return data.decode("utf-8", "replace").splitlines()[:max_lines]


def iter_line_batches(path: str | Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                      chunk_bytes: int = CHUNK_BYTES, on_bytes=None) -> Iterator[pa.RecordBatch]:
    """Yield numbered-line batches covering every line of the file exactly once.
    on_bytes(n) is called with the number of (decompressed) bytes of each chunk read, for progress."""
    with open_maybe_compressed(path) as f:
        yield from _batches(f, max_line_bytes, chunk_bytes, on_bytes)


def line_reader(path: str | Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, on_bytes=None) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(SCHEMA, iter_line_batches(path, max_line_bytes, on_bytes=on_bytes))


def _batches(f: BinaryIO, max_line_bytes: int, chunk_bytes: int, on_bytes=None) -> Iterator[pa.RecordBatch]:
    line_no = 1
    carry = b""
    skipping = 0  # > 0: inside an over-long line; bytes of it seen so far (content dropped)
    while True:
        chunk = f.read(chunk_bytes)
        if not chunk:
            break
        if on_bytes is not None:
            on_bytes(len(chunk))
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipping += len(chunk)
                continue
            yield _single(line_no, b"", skipping + nl)
            line_no += 1
            skipping = 0
            chunk = chunk[nl + 1:]
            if not chunk:
                continue
        data = carry + chunk if carry else chunk
        last_nl = data.rfind(b"\n")
        if last_nl < 0:
            if len(data) > max_line_bytes:
                skipping, carry = len(data), b""
            else:
                carry = data
            continue
        body, carry = data[: last_nl + 1], data[last_nl + 1:]
        batch = _split(body, line_no, max_line_bytes)
        line_no += batch.num_rows
        yield batch
        if len(carry) > max_line_bytes:
            skipping, carry = len(carry), b""
    if skipping:
        yield _single(line_no, b"", skipping)
    elif carry:  # last line without a trailing newline
        yield _split(carry + b"\n", line_no, max_line_bytes)


def _single(line_no: int, content: bytes, true_len: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([line_no], pa.int64()), pa.array([content], pa.large_binary()),
         pa.array([true_len], pa.int64()), pa.array([False])], schema=SCHEMA)


def _split(body: bytes, first_line_no: int, max_line_bytes: int) -> pa.RecordBatch:
    """body ends with b'\\n'; one row per line. Over-long lines keep their length but lose content."""
    repaired_any = False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        body = body.decode("utf-8", "replace").encode("utf-8")
        repaired_any = True
    buf = np.frombuffer(body, np.uint8)
    nl = np.flatnonzero(buf == 10)
    n = len(nl)
    starts = np.empty(n + 1, np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    lengths = nl - starts[:-1]  # without the newline
    too_long = lengths > max_line_bytes
    if too_long.any():  # rare: drop those lines' bytes (their length is kept) with one vectorised copy
        sizes = np.diff(starts)
        body = buf[np.repeat(~too_long, sizes)].tobytes()
        starts = np.concatenate(([0], np.cumsum(np.where(too_long, 0, sizes)))).astype(np.int64)
    lines = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(starts), pa.py_buffer(body)])
    if repaired_any:
        marks = _find_all(body, _REPLACEMENT)
        repaired = np.zeros(n, bool)
        if len(marks):
            repaired[np.searchsorted(starts, marks, side="right") - 1] = True
    else:
        repaired = np.zeros(n, bool)
    return pa.RecordBatch.from_arrays(
        [pa.array(np.arange(first_line_no, first_line_no + n, dtype=np.int64)), lines,
         pa.array(lengths.astype(np.int64)), pa.array(repaired)], schema=SCHEMA)


def _find_all(data: bytes, needle: bytes) -> np.ndarray:
    """Offsets of every occurrence of a 3-byte needle (vectorised)."""
    b = np.frombuffer(data, np.uint8)
    if len(b) < 3:
        return np.empty(0, np.int64)
    hit = (b[:-2] == needle[0]) & (b[1:-1] == needle[1]) & (b[2:] == needle[2])
    return np.flatnonzero(hit)
