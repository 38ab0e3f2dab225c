"""Text inputs as Arrow batches of numbered lines, for DuckDB to parse.

Why not DuckDB's own readers for text logs: they cannot say which *line* a record came from
(`file_row_number` is Parquet-only; `row_number() OVER ()` runs the whole scan on one thread; an
order-preserving insert does not survive the adapters' joins: measured), read_csv takes a lone \r for a
line break, cuts a line at its delimiter without an error and refuses invalid UTF-8 (or drops the line
when told to ignore errors), and read_json skips blank lines. An incident count must name the file and
line of every record and lose none, so kvir numbers the lines itself. (The one exception, big files of
big SGLang logs, is kvir.ingest.native: DuckDB's own readers in one order-preserving write, checked
against a line count of the same bytes, with this reader as the fallback.) NumPy finds the newlines of each
chunk; no Python code runs per line. Each batch has:

    line_no     BIGINT   1-based line number in the (decompressed) file
    line        the line: BLOB with its newline (default), or with text=True a VARCHAR without its
                terminator (\\n or \\r\\n), built as an Arrow string view straight over the chunk: no
                copy of the text, no decode in SQL (empty when the line was too long)
    line_bytes  BIGINT   the line's true length, terminator excluded (in a chunk repaired for invalid
                         UTF-8: the repaired length, each invalid sequence counting as the 3 bytes of U+FFFD)
    repaired    BOOLEAN  the line held invalid UTF-8: each invalid sequence became U+FFFD

Files are opened by kvir.ingest.opener: gzip and zstd decompressed on the fly (detected by magic bytes, not
by name), a byte-order mark dropped, UTF-16/32 re-encoded as UTF-8, never more read than the file held when
kvir listed it, and every byte read hashed when asked.

The chunk loop reads into a pooled buffer that the batch then holds (Arrow references it, nothing is
copied but the unfinished last line; the buffer is reused once no batch refers to it, which saves a
page fault per 4 KiB), finds the chunk's newlines with one NumPy pass, checks UTF-8 once per chunk (an
ASCII chunk needs one max()), and numbers lines with one arange per batch. Given a hashlib object it
hashes the file's bytes as they are read, so an input's SHA-256 costs no second read.
"""
from __future__ import annotations

import codecs
import io
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import numpy as np
import pyarrow as pa

from kvir.ingest.opener import Opened, RawInput, Stamp, open_input

CHUNK_BYTES = 8 << 20
DEFAULT_MAX_LINE_BYTES = 16 << 20
SCHEMA = pa.schema([
    ("line_no", pa.int64()),
    ("line", pa.large_binary()),
    ("line_bytes", pa.int64()),
    ("repaired", pa.bool_()),
])
TEXT_SCHEMA = pa.schema([
    ("line_no", pa.int64()),
    ("line", pa.string_view()),
    ("line_bytes", pa.int64()),
    ("repaired", pa.bool_()),
])


def open_maybe_compressed(path: str | Path) -> BinaryIO:
    """Open a file for reading its text as UTF-8 bytes: gzip or zstd decompressed, a byte-order mark dropped,
    UTF-16/32 re-encoded (kvir.ingest.opener)."""
    return _Closing(open_input(path))


class _Closing(io.RawIOBase):
    """An opened input as one file object (closing it closes the file)."""

    def __init__(self, opened: Opened):
        super().__init__()
        self.opened = opened

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self.opened.stream.readinto(b)

    def close(self) -> None:
        try:
            self.opened.close()
        finally:
            super().close()


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
    with open_input(path) as f:
        data = _read_up_to(f.stream, max_bytes)
    return data.decode("utf-8", "replace").splitlines()[:max_lines]


def _read_up_to(f: BinaryIO, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        block = f.read(n - len(out))
        if not block:
            break
        out += block
    return bytes(out)


def iter_line_batches(path: str | Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                      chunk_bytes: int = CHUNK_BYTES, on_bytes: Callable[[int], None] | None = None,
                      text: bool = False, digest=None, stamp: Stamp | None = None,
                      blanks: Callable[[int], None] | None = None) -> Iterator[pa.RecordBatch]:
    """Yield numbered-line batches covering every line of the file exactly once.
    on_bytes(n) is called with the number of (decompressed) bytes of each chunk read, for progress.
    text=True: `line` is VARCHAR without its terminator (TEXT_SCHEMA); else BLOB with it (SCHEMA).
    digest: a hashlib object updated with every byte of the file read (compressed or not), so its SHA-256
    costs no second read. stamp: the file as kvir listed it; no byte past its size is read (kvir.ingest.opener).
    blanks (text mode): empty lines are not emitted but counted, blanks(n) per batch: a file of blank lines
    costs no rows."""
    if blanks is not None and not text:
        raise ValueError("blank lines are dropped in text mode only")
    emit = _text_batch if text else _blob_batch
    with open_input(path, stamp, digest) as f:
        yield from _batches(f.stream, max_line_bytes, chunk_bytes, on_bytes, emit, blanks)
        f.finish()


def line_reader(path: str | Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, on_bytes=None,
                text: bool = False) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(TEXT_SCHEMA if text else SCHEMA,
                                             iter_line_batches(path, max_line_bytes, on_bytes=on_bytes, text=text))


class _BufferPool:
    """Chunk buffers, reused once nothing references them any more.

    A batch's lines are views over its chunk's buffer, so a buffer lives as long as Arrow (and DuckDB's
    scan of it) holds the batch; Python's reference count says when that has ended. A fresh buffer costs a
    page fault per 4 KiB when first written, which is as much CPU as reading the bytes: reusing buffers
    halves the reader's cost. At most `keep` buffers are pooled (the reading pipeline holds a few chunk
    tables at a time); a request larger than a pooled buffer gets a fresh one."""

    def __init__(self, size: int, keep: int = 48):
        import threading

        self.size, self.keep = size, keep
        self.buffers: list[np.ndarray] = []
        self.lock = threading.Lock()

    def take(self, n: int) -> np.ndarray:
        import sys

        if n > self.size:
            return np.empty(n, np.uint8)
        with self.lock:
            for b in self.buffers:
                if sys.getrefcount(b) == 3:      # the list, the loop variable, the call: nobody else
                    return b[:n]
            if len(self.buffers) >= self.keep:
                return np.empty(n, np.uint8)
            b = np.empty(self.size, np.uint8)
            self.buffers.append(b)
            return b[:n]


_POOLS: dict[int, _BufferPool] = {}


def _pool(chunk_bytes: int) -> _BufferPool:
    p = _POOLS.get(chunk_bytes)
    if p is None:
        p = _POOLS.setdefault(chunk_bytes, _BufferPool(chunk_bytes + (1 << 20)))
    return p


def _read_chunk(f: BinaryIO, carry: np.ndarray | bytes, chunk_bytes: int) -> tuple[np.ndarray, int]:
    """A buffer holding carry + up to chunk_bytes new bytes, and the number of new bytes.

    The buffer is never much larger than what it holds: a batch keeps its chunk's buffer alive (the lines
    are views over it), so a one-line file must not pin a whole chunk. A plain file's remaining size
    bounds the buffer; at the end of a stream a short read is copied out of the (pooled) chunk buffer."""
    want = chunk_bytes
    left = _remaining(f)
    if left is not None:
        want = max(1, min(chunk_bytes, left + 1))    # + 1: a file that grew still ends with a short read
    k = len(carry)
    buf = _pool(chunk_bytes).take(k + want) if want == chunk_bytes else np.empty(k + want, np.uint8)
    if k:
        buf[:k] = np.frombuffer(carry, np.uint8) if isinstance(carry, bytes) else carry
    view = memoryview(buf)[k:]
    got = 0
    while got < want:
        n = f.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            break
        got += n
    view.release()
    if got < want and want - got > (64 << 10):
        buf = buf[:k + got].copy()
    return buf, got


def _remaining(f: BinaryIO) -> int | None:
    """Bytes left in a plain file (None for a decompressing stream or a pipe)."""
    if isinstance(f, RawInput):
        return f.left()
    if not isinstance(f, io.BufferedReader) or type(f.raw) is not io.FileIO:
        return None
    try:
        import os

        return max(0, os.fstat(f.fileno()).st_size - f.tell())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def _batches(f: BinaryIO, max_line_bytes: int, chunk_bytes: int, on_bytes, emit, blanks=None) -> Iterator[pa.RecordBatch]:
    line_no = 1
    carry: np.ndarray | bytes = b""
    skipping = 0  # > 0: inside an over-long line; bytes of it seen so far (content dropped)
    skip_cr = False  # the skipped bytes so far end with \r (of a \r\n split across chunks)
    while True:
        buf, got = _read_chunk(f, b"" if skipping else carry, chunk_bytes)
        if not got:
            break
        if on_bytes is not None:
            on_bytes(got)
        start = 0
        size = got if skipping else len(carry) + got
        arr = buf[:size]
        nl = np.flatnonzero(arr == 10)       # every newline of the chunk, found once
        if skipping:
            if not len(nl):
                skipping += size
                skip_cr = arr[size - 1] == 13
                continue
            first = int(nl[0])
            cr = bool(arr[first - 1] == 13) if first > 0 else skip_cr   # \r\n: the \r is not part of the length
            yield emit(None, None, None, line_no, max_line_bytes, skipping + first - cr)
            line_no += 1
            skipping = 0
            start = first + 1
            nl = nl[1:]
        if not len(nl):
            rest = size - start
            if rest - (arr[size - 1] == 13) > max_line_bytes:     # a last \r may be its \r\n's: not counted
                skipping, carry, skip_cr = rest, b"", bool(arr[size - 1] == 13)
            else:
                carry = arr[start:size].copy()
            continue
        last_nl = int(nl[-1])
        body = arr[start: last_nl + 1]
        carry = arr[last_nl + 1: size].copy()
        body, nl, repaired = _validated(body, nl - start if start else nl)
        batch = emit(body, nl, repaired, line_no, max_line_bytes, blanks=blanks)
        line_no += len(nl)
        if batch.num_rows:
            yield batch
        if len(carry) and len(carry) - (carry[-1] == 13) > max_line_bytes:
            skipping, carry, skip_cr = len(carry), b"", bool(carry[-1] == 13)
    if skipping:   # an over-long last line without a newline (a trailing \r ends it, as for short lines)
        yield emit(None, None, None, line_no, max_line_bytes, skipping - skip_cr)
    elif len(carry):  # last line without a trailing newline
        body = np.concatenate([np.frombuffer(carry, np.uint8) if isinstance(carry, bytes) else carry,
                               np.array([10], np.uint8)])
        batch = emit(*_validated(body, np.array([len(body) - 1], np.int64)), line_no, max_line_bytes, blanks=blanks)
        if batch.num_rows:
            yield batch


def _validated(body: np.ndarray, nl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(body, newline offsets, repaired lines or None). body ends with a newline; nl are its newline
    offsets. An ASCII chunk is valid UTF-8 as is; otherwise it is decoded once, and on failure each line
    holding a byte >= 0x80 is checked on its own (the invalid ones are `repaired`: a valid U+FFFD in the
    log is not), then the chunk is re-encoded with U+FFFD for each invalid sequence (a newline byte is
    never part of one, so the lines stay the same lines)."""
    if len(body) and body.max() >= 0x80:
        try:
            codecs.utf_8_decode(body.data, "strict", True)
        except UnicodeDecodeError:
            raw = body.tobytes()
            starts = np.concatenate(([0], nl[:-1] + 1))
            flags = np.zeros(len(nl), bool)
            for i in np.unique(np.searchsorted(nl, np.flatnonzero(body >= 0x80))):   # lines with non-ASCII bytes
                try:
                    raw[starts[i]:nl[i]].decode("utf-8")
                except UnicodeDecodeError:
                    flags[i] = True
            body = np.frombuffer(raw.decode("utf-8", "replace").encode("utf-8"), np.uint8)
            return body, np.flatnonzero(body == 10), flags
    return body, nl, None


def _blob_batch(body: np.ndarray | None, nl: np.ndarray | None, repaired_rows: np.ndarray | None, first_line_no: int,
                max_line_bytes: int, skipped_len: int | None = None, blanks=None) -> pa.RecordBatch:
    """One row per line, BLOB with the newline. Over-long lines keep their length but lose content."""
    if skipped_len is not None:
        return _single(first_line_no, skipped_len, text=False)
    n = len(nl)
    starts = np.empty(n + 1, np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    lengths = nl - starts[:-1]
    too_long = lengths > max_line_bytes
    data = body
    if too_long.any():  # rare: drop those lines' bytes (their length is kept) with one vectorised copy
        sizes = np.diff(starts)
        data = body[np.repeat(~too_long, sizes)]
        starts = np.concatenate(([0], np.cumsum(np.where(too_long, 0, sizes)))).astype(np.int64)
    lines = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(starts), pa.py_buffer(data)])
    repaired = repaired_rows if repaired_rows is not None else np.zeros(n, bool)
    return pa.RecordBatch.from_arrays(
        [pa.array(np.arange(first_line_no, first_line_no + n, dtype=np.int64)), lines,
         pa.array(lengths.astype(np.int64)), pa.array(repaired)], schema=SCHEMA)


def _text_batch(body: np.ndarray | None, nl: np.ndarray | None, repaired_rows: np.ndarray | None, first_line_no: int,
                max_line_bytes: int, skipped_len: int | None = None,
                blanks: Callable[[int], None] | None = None) -> pa.RecordBatch:
    """One row per line, a string view over the chunk without the terminator (\\n or \\r\\n). With blanks,
    empty lines get no row (their number is passed to blanks): a file of blank lines costs no views."""
    if skipped_len is not None:
        return _single(first_line_no, skipped_len, text=True)
    n = len(nl)
    starts = np.empty(n, np.int64)
    if n:
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
    lengths = nl - starts
    numbers: np.ndarray | None = None
    repaired = repaired_rows if repaired_rows is not None else np.zeros(n, bool)
    if blanks is not None:                   # empty lines first, before any per-line work
        keep = np.flatnonzero(lengths)
        if len(keep) < n:
            starts, lengths, nl, repaired = starts[keep], lengths[keep], nl[keep], repaired[keep]
            numbers = keep + first_line_no
    cr = (lengths > 0) & (body[np.maximum(nl - 1, 0)] == 13)
    lengths -= cr
    if numbers is None:
        numbers = np.arange(first_line_no, first_line_no + len(nl), dtype=np.int64)
    if blanks is not None:
        keep = np.flatnonzero(lengths)       # a line of a lone \r is empty too
        if len(keep) < len(lengths):
            starts, lengths, numbers, repaired = starts[keep], lengths[keep], numbers[keep], repaired[keep]
        if len(lengths) < n:
            blanks(n - len(lengths))
    too_long = lengths > max_line_bytes
    shown = np.where(too_long, 0, lengths).astype(np.int32)
    lines = _string_views(body, starts, shown)
    return pa.RecordBatch.from_arrays(
        [pa.array(numbers), lines, pa.array(lengths.astype(np.int64)), pa.array(repaired)],
        schema=TEXT_SCHEMA)


def _string_views(body: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """Arrow Utf8View over `body`: 16 bytes per value. Values of up to 12 bytes are inlined
    (length, 12 data bytes); longer ones hold (length, 4-byte prefix, buffer 0, offset)."""
    n = len(starts)
    v32 = np.zeros((n, 4), np.int32)
    v32[:, 0] = lengths
    long_ = lengths > 12
    if long_.any():
        li = np.flatnonzero(long_)
        # the 4-byte prefixes in one gather, through an unaligned 4-byte view of the chunk (every long
        # value has at least 13 bytes after its start, so the view never reads past the chunk)
        words = np.ndarray((len(body) - 3,), np.int32, buffer=body, strides=(1,))
        v32[li, 1] = words[starts[li]]
        v32[li, 3] = starts[li]
    short = ~long_ & (lengths > 0)
    if short.any():
        views = v32.view(np.uint8)
        si = np.flatnonzero(short)
        idx = np.minimum(starts[si, None] + np.arange(12), len(body) - 1)
        inline = body[idx]
        inline[np.arange(12)[None, :] >= lengths[si, None]] = 0
        views[si, 4:16] = inline
    return pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(v32), pa.py_buffer(body)])


def _single(line_no: int, true_len: int, text: bool) -> pa.RecordBatch:
    """An over-long line: its number and length, no content."""
    return pa.RecordBatch.from_arrays(
        [pa.array([line_no], pa.int64()), pa.array([b"" if not text else ""], pa.string_view() if text else pa.large_binary()),
         pa.array([true_len], pa.int64()), pa.array([False])], schema=TEXT_SCHEMA if text else SCHEMA)
