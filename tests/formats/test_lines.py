"""The numbered-line reader in text mode (what every line adapter reads) against a plain Python reference."""
from __future__ import annotations

import gzip
import os

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kvir.ingest.lines import iter_line_batches


def reference(data: bytes, max_line_bytes: int) -> list[tuple[int, str, int, bool]]:
    """(line number, text without its terminator or '' when over-long, byte length, valid UTF-8) per line."""
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts = parts[:-1]
    out = []
    for i, p in enumerate(parts, 1):
        raw = p[:-1] if p.endswith(b"\r") else p
        try:
            raw.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        out.append((i, raw.decode("utf-8", "replace") if len(raw) <= max_line_bytes else "", len(raw), valid))
    return out


def read(path, max_line_bytes: int, chunk_bytes: int) -> list[tuple[int, str, int, bool]]:
    rows = []
    for b in iter_line_batches(path, max_line_bytes, chunk_bytes=chunk_bytes, text=True):
        d = b.to_pydict()
        rows += list(zip(d["line_no"], d["line"], d["line_bytes"], d["repaired"]))
    return rows


PIECES = st.sampled_from([b"", b"a", b"{}", b'{"k": 1}', b"\r", b"\xc3\xa9", b"\xff", b"\xe2\x82", b" ", b"x" * 13,
                          b"y" * 200, b"z" * 3000])


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.lists(PIECES, max_size=6).map(b"".join), max_size=40),
       ending=st.sampled_from([b"", b"\n", b"\r\n"]),
       max_line_bytes=st.sampled_from([12, 100, 2500, 1 << 20]),
       chunk_bytes=st.sampled_from([5, 64, 1000, 1 << 16]))
def test_every_line_once_with_its_number_length_and_text(tmp_path_factory, lines, ending, max_line_bytes, chunk_bytes):
    data = b"\n".join(lines) + (ending if lines else b"")
    p = tmp_path_factory.mktemp("lines") / "f.log"
    p.write_bytes(data)
    got = read(p, max_line_bytes, chunk_bytes)
    want = reference(data, max_line_bytes)
    assert [g[0] for g in got] == [w[0] for w in want]                 # every line, once, in order
    chunk_repaired = any(not w[3] for w in want)
    for (no, text, n, repaired), (_, w_text, w_n, valid) in zip(got, want):
        if valid and not chunk_repaired:                                 # valid UTF-8: exact text and length
            assert (text, n, repaired) == (w_text, w_n, False)
        elif valid:                      # a neighbour was repaired: this line's text is exact all the same
            assert (text == w_text or (text == "" and n > max_line_bytes)) and not repaired
        else:                            # invalid bytes became U+FFFD: flagged (or over-long: no text kept)
            assert (repaired and "\ufffd" in text) or (text == "" and n > max_line_bytes)
            assert n >= w_n


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_compressed_files_give_the_same_lines(tmp_path, codec):
    data = b'{"a": 1}\r\n\n{"b": "\xc3\xa9"}\nno newline at the end'
    plain, comp = tmp_path / "f.log", tmp_path / "f.log.c"
    plain.write_bytes(data)
    comp.write_bytes(gzip.compress(data) if codec == "gzip" else zstandard.ZstdCompressor().compress(data))
    assert read(comp, 1 << 20, 7) == read(plain, 1 << 20, 7) == [
        (1, '{"a": 1}', 8, False), (2, "", 0, False), (3, '{"b": "é"}', 11, False), (4, "no newline at the end", 21, False)]


VALID_PIECES = st.sampled_from([b"", b"a", b"{}", b'{"k": 1}', b"\r", b"\xc3\xa9", b" ", b"x" * 13, b"\xe4\xb8\xad"])


def _read_dropping_blanks(path, chunk_bytes: int) -> tuple[list[tuple[int, str, int, bool]], int]:
    rows, blanks = [], []
    for b in iter_line_batches(path, 1 << 20, chunk_bytes=chunk_bytes, text=True, blanks=blanks.append):
        d = b.to_pydict()
        rows += list(zip(d["line_no"], d["line"], d["line_bytes"], d["repaired"]))
    return rows, sum(blanks)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.lists(VALID_PIECES, max_size=5).map(b"".join), max_size=30),
       ending=st.sampled_from([b"", b"\n", b"\r\n"]), chunk_bytes=st.sampled_from([5, 64, 1 << 16]),
       mark=st.sampled_from(["none", "utf-8-sig", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]),
       gz=st.booleans())
def test_blank_lines_and_byte_order_marks(tmp_path_factory, lines, ending, chunk_bytes, mark, gz):
    """Every reader opens files through kvir.ingest.opener: with a UTF-8 byte-order mark, or as UTF-16/UTF-32
    text (with the mark Windows tools write), compressed or not, the lines are those of the plain UTF-8 file;
    with blanks counted, an empty line (after its \\r) is no row but is counted, and every other line keeps
    its number (issue #26 items 4 and 9)."""
    data = b"\n".join(lines) + (ending if lines else b"")
    text = data.decode("utf-8")
    boms = {"none": b"", "utf-8-sig": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff",
            "utf-32-le": b"\xff\xfe\x00\x00", "utf-32-be": b"\x00\x00\xfe\xff"}
    encoded = boms[mark] + (data if mark in ("none", "utf-8-sig") else text.encode(mark))
    if gz:
        encoded = gzip.compress(encoded)
    d = tmp_path_factory.mktemp("enc")
    (d / "plain.log").write_bytes(data)
    (d / "marked.log").write_bytes(encoded)
    want = reference(data, 1 << 20)
    assert read(d / "marked.log", 1 << 20, chunk_bytes) == [(no, t, n, False) for no, t, n, _ in want]
    rows, blanks = _read_dropping_blanks(d / "marked.log", chunk_bytes)
    assert rows == [(no, t, n, False) for no, t, n, _ in want if n > 0]
    assert blanks == sum(1 for w in want if w[2] == 0)


def test_a_file_is_read_only_as_far_as_it_was_when_listed(tmp_path):
    """Lines appended after kvir listed a file are not read, and the digest taken while reading is that of the
    bytes parsed (issue #26 item 5); a file replaced or shrunk underneath is refused."""
    import hashlib

    from kvir.ingest.opener import FileChanged, Stamp

    f = tmp_path / "grow.log"
    f.write_bytes(b"one\ntwo\n")
    stamp = Stamp.take(f)
    with open(f, "ab") as out:
        out.write(b"three\nfour\n")
    h = hashlib.sha256()
    got = [r for b in iter_line_batches(f, text=True, stamp=stamp, digest=h) for r in b.column("line").to_pylist()]
    assert got == ["one", "two"] and h.hexdigest() == hashlib.sha256(b"one\ntwo\n").hexdigest()
    f.write_bytes(b"on")                                        # truncated in place: it shrank
    with pytest.raises(FileChanged, match="shrank while it was read"):
        list(iter_line_batches(f, text=True, stamp=stamp))
    new = tmp_path / "new.log"
    new.write_bytes(b"one\ntwo\n")
    os.replace(new, f)                                          # a new file under the old name (log rotation)
    with pytest.raises(FileChanged, match="replaced by another file"):
        list(iter_line_batches(f, text=True, stamp=stamp))


@pytest.mark.parametrize("chunk_bytes", [5, 7, 12, 13, 64])
def test_a_line_at_the_limit_ending_in_crlf_keeps_its_text_across_chunks(tmp_path, chunk_bytes):
    """Found by the property test above: a 12-byte line ending \\r\\n under a 12-byte limit was read as
    over-long when a chunk ended between the \\r and the \\n (the \\r was counted as the line's)."""
    p = tmp_path / "f.log"
    p.write_bytes(b'{}{}{"k": 1}\r\n' + b"x" * 13 + b"\r\nlast\r")
    assert read(p, 12, chunk_bytes) == [(1, '{}{}{"k": 1}', 12, False), (2, "", 13, False), (3, "last", 4, False)]
