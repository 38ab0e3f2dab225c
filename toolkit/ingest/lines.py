"""Text inputs as Arrow batches of numbered lines, for DuckDB to parse.

Why not DuckDB's own readers for text logs: they cannot say which *line* a record came from
(`file_row_number` is Parquet-only), read_csv silently drops lines that are not UTF-8 when told to
ignore errors, and read_json skips blank lines. An incident count must name the file and line of
every record and lose none, so kvir numbers the lines itself. NumPy finds the newlines of each
chunk; no Python code runs per line. Each batch has:

    line_no     BIGINT   1-based line number in the (decompressed) file
    line        the line: BLOB with its newline (default), or with text=True a VARCHAR without its
                terminator (\\n or \\r\\n), built as an Arrow string view straight over the chunk: no
                copy of the text, no decode in SQL (empty when the line was too long)
    line_bytes  BIGINT   the line's true length, terminator excluded (in a chunk repaired for invalid
                         UTF-8: the repaired length, each invalid sequence counting as the 3 bytes of U+FFFD)
    repaired    BOOLEAN  the chunk held invalid UTF-8 and this line may carry U+FFFD replacements

gzip and zstd inputs are decompressed on the fly (detected by magic bytes, not by name).

The chunk loop reads into a fresh buffer that the batch then owns (Arrow references it, nothing is
copied but the unfinished last line), checks UTF-8 once per chunk (an ASCII chunk needs one NumPy
comparison), and numbers lines with one arange per batch.
"""
from __future__ import annotations

import codecs
import gzip
import io
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

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
TEXT_SCHEMA = pa.schema([
    ("line_no", pa.int64()),
    ("line", pa.string_view()),
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

        # A one-shot compressed frame's window is as large as its content (zstd --long, or a big file written
        # at once): allow windows up to 2 GiB rather than refuse a valid file (zstd's default stops at 128 MiB).
        return io.BufferedReader(zstandard.ZstdDecompressor(max_window_size=1 << 31).stream_reader(f, closefd=True))
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
                      chunk_bytes: int = CHUNK_BYTES, on_bytes: Callable[[int], None] | None = None,
                      text: bool = False) -> Iterator[pa.RecordBatch]:
    """Yield numbered-line batches covering every line of the file exactly once.
    on_bytes(n) is called with the number of (decompressed) bytes of each chunk read, for progress.
    text=True: `line` is VARCHAR without its terminator (TEXT_SCHEMA); else BLOB with it (SCHEMA)."""
    emit = _text_batch if text else _blob_batch
    with open_maybe_compressed(path) as f:
        yield from _batches(f, max_line_bytes, chunk_bytes, on_bytes, emit)


def line_reader(path: str | Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, on_bytes=None,
                text: bool = False) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(TEXT_SCHEMA if text else SCHEMA,
                                             iter_line_batches(path, max_line_bytes, on_bytes=on_bytes, text=text))


def _read_chunk(f: BinaryIO, carry: bytes, chunk_bytes: int) -> tuple[bytearray, int]:
    """A fresh buffer holding carry + up to chunk_bytes new bytes, and the number of new bytes.

    The buffer is never much larger than what it holds: a batch keeps its chunk's buffer alive (the lines
    are views over it), so a one-line file must not pin (or zero-fill) a whole chunk. A plain file's
    remaining size bounds the buffer; at the end of a stream the unused tail is cut off."""
    want = chunk_bytes
    left = _remaining(f)
    if left is not None:
        want = max(1, min(chunk_bytes, left + 1))    # + 1: a file that grew still ends with a short read
    buf = bytearray(len(carry) + want)
    buf[: len(carry)] = carry
    view = memoryview(buf)[len(carry):]
    got = 0
    while got < want:
        n = f.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            break
        got += n
    view.release()
    if got < want and want - got > (64 << 10):
        del buf[len(carry) + got:]
    return buf, got


def _remaining(f: BinaryIO) -> int | None:
    """Bytes left in a plain file (None for a decompressing stream or a pipe)."""
    if not isinstance(f, io.BufferedReader) or type(f.raw) is not io.FileIO:
        return None
    try:
        import os

        return max(0, os.fstat(f.fileno()).st_size - f.tell())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def _batches(f: BinaryIO, max_line_bytes: int, chunk_bytes: int, on_bytes, emit) -> Iterator[pa.RecordBatch]:
    line_no = 1
    carry = b""
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
        arr = np.frombuffer(buf, np.uint8, count=size)
        if skipping:
            nl = buf.find(b"\n", 0, size)
            if nl < 0:
                skipping += size
                skip_cr = buf[size - 1] == 13
                continue
            cr = buf[nl - 1] == 13 if nl > 0 else skip_cr     # the terminator is \r\n: not part of the length
            yield emit(None, None, False, line_no, max_line_bytes, skipping + nl - cr)
            line_no += 1
            skipping = 0
            start = nl + 1
        last_nl = buf.rfind(b"\n", start, size)
        if last_nl < 0:
            rest = size - start
            if rest > max_line_bytes:
                skipping, carry, skip_cr = rest, b"", buf[size - 1] == 13
            else:
                carry = bytes(buf[start:size])
            continue
        body = arr[start: last_nl + 1]
        carry = bytes(buf[last_nl + 1: size])
        batch = emit(*_validated(body), line_no, max_line_bytes)
        line_no += batch.num_rows
        yield batch
        if len(carry) > max_line_bytes:
            skipping, carry, skip_cr = len(carry), b"", carry.endswith(b"\r")
    if skipping:   # an over-long last line without a newline (a trailing \r ends it, as for short lines)
        yield emit(None, None, False, line_no, max_line_bytes, skipping - skip_cr)
    elif carry:  # last line without a trailing newline
        yield emit(*_validated(np.frombuffer(carry + b"\n", np.uint8)), line_no, max_line_bytes)


def _validated(body: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(body, newline offsets, repaired). body ends with a newline. An ASCII chunk is valid UTF-8 as is;
    otherwise it is decoded once, and on failure re-encoded with U+FFFD for each invalid sequence
    (a newline byte is never part of one, so the lines stay the same lines)."""
    repaired = False
    if (body >= 0x80).any():
        try:
            codecs.utf_8_decode(body.data, "strict", True)
        except UnicodeDecodeError:
            body = np.frombuffer(body.tobytes().decode("utf-8", "replace").encode("utf-8"), np.uint8)
            repaired = True
    return body, np.flatnonzero(body == 10), repaired


def _repaired_rows(body: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    marks = _find_all(body, _REPLACEMENT)
    out = np.zeros(n, bool)
    if len(marks):
        out[np.searchsorted(starts, marks, side="right") - 1] = True
    return out


def _blob_batch(body: np.ndarray | None, nl: np.ndarray | None, repaired_any: bool, first_line_no: int,
                max_line_bytes: int, skipped_len: int | None = None) -> pa.RecordBatch:
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
    repaired = _repaired_rows(data, starts, n) if repaired_any else np.zeros(n, bool)
    return pa.RecordBatch.from_arrays(
        [pa.array(np.arange(first_line_no, first_line_no + n, dtype=np.int64)), lines,
         pa.array(lengths.astype(np.int64)), pa.array(repaired)], schema=SCHEMA)


def _text_batch(body: np.ndarray | None, nl: np.ndarray | None, repaired_any: bool, first_line_no: int,
                max_line_bytes: int, skipped_len: int | None = None) -> pa.RecordBatch:
    """One row per line, a string view over the chunk without the terminator (\\n or \\r\\n)."""
    if skipped_len is not None:
        return _single(first_line_no, skipped_len, text=True)
    n = len(nl)
    starts = np.empty(n, np.int64)
    if n:
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
    lengths = nl - starts
    cr = (lengths > 0) & (body[np.maximum(nl - 1, 0)] == 13)
    lengths -= cr
    too_long = lengths > max_line_bytes
    shown = np.where(too_long, 0, lengths).astype(np.int32)
    lines = _string_views(body, starts, shown)
    repaired = _repaired_rows(body, starts, n) if repaired_any else np.zeros(n, bool)
    return pa.RecordBatch.from_arrays(
        [pa.array(np.arange(first_line_no, first_line_no + n, dtype=np.int64)), lines,
         pa.array(lengths.astype(np.int64)), pa.array(repaired)], schema=TEXT_SCHEMA)


def _string_views(body: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """Arrow Utf8View over `body`: 16 bytes per value. Values of up to 12 bytes are inlined
    (length, 12 data bytes); longer ones hold (length, 4-byte prefix, buffer 0, offset)."""
    n = len(starts)
    views = np.zeros((n, 16), np.uint8)
    v32 = views.view(np.int32)
    v32[:, 0] = lengths
    long_ = lengths > 12
    if long_.any():
        li = np.flatnonzero(long_)
        views[li, 4:8] = body[starts[li, None] + np.arange(4)]
        v32[li, 3] = starts[li]
    short = ~long_ & (lengths > 0)
    if short.any():
        si = np.flatnonzero(short)
        idx = np.minimum(starts[si, None] + np.arange(12), len(body) - 1)
        inline = body[idx]
        inline[np.arange(12)[None, :] >= lengths[si, None]] = 0
        views[si, 4:16] = inline
    return pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), pa.py_buffer(body)])


def _single(line_no: int, true_len: int, text: bool) -> pa.RecordBatch:
    """An over-long line: its number and length, no content."""
    return pa.RecordBatch.from_arrays(
        [pa.array([line_no], pa.int64()), pa.array([b"" if not text else ""], pa.string_view() if text else pa.large_binary()),
         pa.array([true_len], pa.int64()), pa.array([False])], schema=TEXT_SCHEMA if text else SCHEMA)


def _find_all(data: np.ndarray, needle: bytes) -> np.ndarray:
    """Offsets of every occurrence of a 3-byte needle (vectorised)."""
    b = data
    if len(b) < 3:
        return np.empty(0, np.int64)
    hit = (b[:-2] == needle[0]) & (b[1:-1] == needle[1]) & (b[2:] == needle[2])
    return np.flatnonzero(hit)


def interleave(producers: list[Callable[[], Iterator[pa.RecordBatch]]], workers: int | None = None,
               queue_size: int = 4) -> Iterator[pa.RecordBatch]:
    """Run several batch producers (one per file) in threads and yield their batches as they come.

    Each batch carries its own source and line numbers, so arrival order does not matter. NumPy and file
    reads release the GIL, so files are split in parallel while DuckDB parses what is ready; at most
    queue_size batches per worker wait in memory. An exception in a producer is raised here."""
    import os
    import queue
    import threading

    if not producers:
        return
    workers = max(1, min(len(producers), workers or os.cpu_count() or 1))
    if workers == 1:
        for make in producers:
            yield from make()
        return
    q: queue.Queue = queue.Queue(maxsize=queue_size * workers)
    todo = list(reversed(producers))
    lock = threading.Lock()
    stop = threading.Event()
    done = object()

    def work() -> None:
        try:
            while not stop.is_set():
                with lock:
                    if not todo:
                        break
                    make = todo.pop()
                for batch in make():
                    while not stop.is_set():
                        try:
                            q.put(batch, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
        except BaseException as e:  # handed to the consumer, which raises it
            q.put(e)
        finally:
            q.put(done)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    finished = 0
    try:
        while finished < workers:
            item = q.get()
            if item is done:
                finished += 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
