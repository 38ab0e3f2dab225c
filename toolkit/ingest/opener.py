"""Opening an input: the bytes kvir parses are exactly the bytes it fingerprints.

Every text reader of kvir (kvir.ingest.lines and whatever sniffs a file's head) opens a file here:

    the file      read from the stamp kvir took when it listed the file (Stamp: size, mtime, inode) and never
                  past that size: a log that grows while it is read is read as it was when the run began (the
                  caller notes the growth); one replaced or shrunk underneath is refused (FileChanged). Every
                  byte read is hashed on the way, so an input's SHA-256 and size are those of the bytes parsed.
    compression   gzip and zstd, by magic bytes (not by name), decompressed on the fly.
    encoding      a UTF-8 byte-order mark (spreadsheet programs write one before a CSV) is dropped; UTF-16 and
                  UTF-32 text (with its BOM: Windows tools write it so) is re-encoded as UTF-8 as it streams.
                  A UTF-16/32 mark is believed only when the text after it is that encoding (see _believed):
                  a log line that happens to begin with those bytes must not turn the whole file into one
                  line of replacement characters. Anything else is read as UTF-8 (invalid sequences are
                  repaired and flagged by the reader).

Readers that hand a path to DuckDB (CSV, JSON documents) use `duckdb_path`: DuckDB skips a UTF-8 BOM itself,
but reads UTF-16 as garbage, so such a file is given to it as a UTF-8 copy in the case's spill folder.
"""
from __future__ import annotations

import codecs
import gzip
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kvir.core.errors import InputError

# (byte-order mark, codec); UTF-32 LE before UTF-16 LE: its mark begins with UTF-16 LE's
BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


class FileChanged(InputError):
    """An input changed under kvir in a way that reading a prefix of it cannot make consistent."""


@dataclass(frozen=True)
class Stamp:
    """What a file was when kvir listed it."""

    size: int
    mtime_ns: int
    ino: int
    dev: int

    @classmethod
    def of(cls, st: os.stat_result) -> "Stamp":
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)

    @classmethod
    def take(cls, path: str | Path) -> "Stamp":
        return cls.of(os.stat(path))

    def same_file(self, st: os.stat_result) -> bool:
        return (st.st_ino, st.st_dev) == (self.ino, self.dev)

    def unchanged(self, st: os.stat_result) -> bool:
        return self.same_file(st) and (st.st_size, st.st_mtime_ns) == (self.size, self.mtime_ns)


def changed_since(path: str | Path, stamp: Stamp | None) -> str | None:
    """How `path` differs from its stamp (None: it does not, or there is no stamp)."""
    if stamp is None:
        return None
    try:
        st = os.stat(path)
    except OSError as e:
        return f"it can no longer be read ({e.strerror or e})"
    if not stamp.same_file(st):
        return "it was replaced by another file"
    if st.st_size != stamp.size:
        verb = "grew" if st.st_size > stamp.size else "shrank"
        return f"it {verb} from {stamp.size:,} to {st.st_size:,} bytes"
    if st.st_mtime_ns != stamp.mtime_ns:
        return "it was rewritten (same size, new modification time)"
    return None


class RawInput(io.RawIOBase):
    """A file's bytes, at most `stamp.size` of them, each one hashed into `digest` as it is read."""

    def __init__(self, path: str | Path, stamp: Stamp | None = None, digest=None):
        super().__init__()
        self.path = str(path)
        self._f = open(path, "rb", buffering=0)
        if stamp is not None and not stamp.same_file(os.fstat(self._f.fileno())):
            self._f.close()
            raise FileChanged("was replaced by another file after kvir listed it; rerun to read the new one",
                              path=self.path)
        self.limit = stamp.size if stamp is not None else None
        self.digest = digest
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._f.fileno()

    def left(self) -> int | None:
        """Bytes still to read (None: not bounded, the file's current size decides)."""
        if self.limit is not None:
            return max(0, self.limit - self.read_bytes)
        try:
            return max(0, os.fstat(self._f.fileno()).st_size - self.read_bytes)
        except OSError:
            return None

    def readinto(self, b) -> int:
        view = memoryview(b).cast("B")
        if self.limit is not None:
            view = view[:max(0, self.limit - self.read_bytes)]
            if not len(view):
                return 0
        n = self._f.readinto(view) or 0
        if n and self.digest is not None:
            self.digest.update(view[:n])
        self.read_bytes += n
        return n

    def finish(self) -> None:
        """Read (and hash) what a decompressor left unread; refuse a file that shrank while it was read."""
        buf = bytearray(1 << 20)
        while self.readinto(buf):
            pass
        if self.limit is not None and self.read_bytes < self.limit:
            raise FileChanged(f"shrank while it was read ({self.read_bytes:,} of the {self.limit:,} bytes it held "
                              "when the run began); rerun once it is stable", path=self.path)

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


class _Transcoded(io.RawIOBase):
    """UTF-16 / UTF-32 text re-encoded as UTF-8 while it streams (an invalid sequence becomes U+FFFD)."""

    def __init__(self, src: BinaryIO, codec: str):
        super().__init__()
        self.src = src
        self.decoder = codecs.getincrementaldecoder(codec)("replace")
        self.pending = b""
        self.eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self.pending and not self.eof:
            data = self.src.read(1 << 20)
            self.eof = not data
            self.pending = self.decoder.decode(data, final=self.eof).encode("utf-8")
        n = min(len(b), len(self.pending))
        memoryview(b).cast("B")[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n

    def close(self) -> None:
        try:
            self.src.close()
        finally:
            super().close()


@dataclass
class Opened:
    """An open input: `stream` gives its text as UTF-8 bytes; `raw` is the file as read."""

    raw: RawInput
    stream: BinaryIO
    compression: str | None
    encoding: str            # utf-8 (no mark), or the codec its byte-order mark named

    def finish(self) -> None:
        self.raw.finish()

    def close(self) -> None:
        self.stream.close()
        self.raw.close()

    def __enter__(self) -> "Opened":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_input(path: str | Path, stamp: Stamp | None = None, digest=None) -> Opened:
    """Open `path` for reading its text as UTF-8 bytes (see the module docstring)."""
    raw = RawInput(path, stamp, digest)
    try:
        head = os.pread(raw.fileno(), 4, 0)
        compression = "gzip" if head[:2] == b"\x1f\x8b" else "zstd" if head == b"\x28\xb5\x2f\xfd" else None
        stream: BinaryIO = raw  # type: ignore[assignment]
        if compression == "gzip":
            stream = gzip.GzipFile(fileobj=io.BufferedReader(raw, 1 << 20))  # type: ignore[assignment]
        elif compression == "zstd":
            import zstandard

            # A one-shot compressed frame's window is as large as its content (zstd --long, or a big file written
            # at once): allow windows up to 2 GiB rather than refuse a valid file (zstd's default stops at 128 MiB).
            stream = io.BufferedReader(zstandard.ZstdDecompressor(max_window_size=1 << 31)
                                       .stream_reader(io.BufferedReader(raw, 1 << 20), closefd=False))
        sample = os.pread(raw.fileno(), _SAMPLE, 0) if compression is None else stream.peek(_SAMPLE)  # type: ignore[attr-defined]
        found = next(((mark, codec) for mark, codec in BOMS if sample.startswith(mark)), None)
        encoding = found[1] if found and (found[1] == "utf-8" or _believed(found[1], sample[len(found[0]):])) else None
        if encoding == "utf-8":                  # the mark is dropped (a plain file's is still hashed)
            stream.read(3) if compression else _skip(raw, 3)
            encoding = "utf-8-sig"
        elif encoding is not None:               # the utf-16 / utf-32 decoders read the mark for the byte order
            stream = _Transcoded(stream, encoding[:6])  # type: ignore[assignment]
        return Opened(raw, stream, compression, encoding or "utf-8")
    except BaseException:
        raw.close()
        raise


_SAMPLE = 1 << 16


def _believed(codec: str, sample: bytes) -> bool:
    """Is the text after a UTF-16/32 mark that encoding? Where the bytes hold a line feed, the decoded text
    must too (ASCII lines behind a stray mark decode as UTF-16 to CJK, but their 0x0A bytes never pair with a
    0x00 into a line feed), and at most half of it may be undecodable (ASCII behind a UTF-32 mark is all
    code points beyond U+10FFFF). A few bad sequences in real UTF-16/32 text are repaired as before."""
    text = codecs.getincrementaldecoder(codec)("replace").decode(sample, final=False)  # a cut character: no error
    return (b"\n" not in sample or "\n" in text) and text.count("\ufffd") * 2 <= len(text)


def _skip(raw: RawInput, n: int) -> None:
    buf = bytearray(n)
    got = 0
    while got < n:
        k = raw.readinto(memoryview(buf)[got:])
        if not k:
            break
        got += k


def duckdb_path(path: str | Path, spill: Path) -> Path:
    """A path DuckDB reads as UTF-8 text: the file itself, or a UTF-8 copy under `spill` for UTF-16/32 text
    and for a compressed file whose name does not say so (DuckDB decompresses by the file's extension)."""
    path = Path(path)
    with open_input(path) as f:
        encoding, compression = f.encoding, f.compression
    named = {"gzip": (".gz", ".gzip"), "zstd": (".zst", ".zstd")}.get(compression or "", ())
    if encoding in ("utf-8", "utf-8-sig") and (compression is None or path.suffix.lower() in named):
        return path
    spill.mkdir(parents=True, exist_ok=True)
    copy = spill / f"utf8-{os.getpid()}-{abs(hash(str(path.resolve())))}{''.join(s for s in path.suffixes if s not in ('.gz', '.zst'))}"
    with open_input(path) as f, open(copy, "wb") as out:
        while block := f.stream.read(1 << 22):
            out.write(block)
    return copy
