"""Issue #26's input faults: byte-order marks and encodings in every reader, files that change while they are
read, a path whose name looks like a glob, a gzip of blank lines, and a folder of files that cannot be read
as they are (all refused in one run)."""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import pytest

import kvir
from kvir.core.errors import InputError
from tests.conftest import ids, sglang_finished as fin, spec_text, write
from tests.formats.expected import COUNTS, FIXTURES

# every reader kvir has: its line reader (sglang-json, vllm), the records reader's NDJSON lines
# (openai-response), CSV (litellm, DuckDB's read_csv) and JSON documents (litellm, cloudflare page:
# DuckDB's read_json_objects), and the OTel spans reader
READERS = {
    "sglang_json/decode-0.jsonl": dict(source_tz="America/Chicago"),
    "vllm/api_server.log": dict(source_tz="Asia/Tokyo"),
    "openai_response/responses.jsonl": {},
    "litellm/LiteLLM_SpendLogs.csv": {},
    "litellm/spend_logs.json": {},
    "cloudflare_gateway/page-1.json": {},
    "otel/traces.jsonl": {},
}
MARKS = {"utf-8-sig": lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"),
         "utf-16-le": lambda t: b"\xff\xfe" + t.encode("utf-16-le"),
         "utf-16-be": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
         "gzip utf-8-sig": lambda t: gzip.compress(b"\xef\xbb\xbf" + t.encode("utf-8"))}


def _triage(tmp_path, files, **kw):
    spec = write(tmp_path / "incident.toml", spec_text())
    return kvir.triage(spec, files, out=tmp_path / "case", hash="full", **kw)


# every reader with a UTF-8 mark and as UTF-16 LE; the other encodings on one line-read and one DuckDB-read file
CASES = ([(n, m) for n in READERS for m in ("utf-8-sig", "utf-16-le")]
         + [(n, m) for n in ("sglang_json/decode-0.jsonl", "litellm/LiteLLM_SpendLogs.csv") for m in ("utf-16-be", "gzip utf-8-sig")])
_PLAIN: dict[str, tuple[set, str]] = {}


def _plain(tmp_path_factory, name: str) -> tuple[set, str]:
    """The affected ids and the sniffed format of the plain fixture (once per reader)."""
    if name not in _PLAIN:
        r = _triage(tmp_path_factory.mktemp("plain"), [FIXTURES / name], **READERS[name])
        _PLAIN[name] = (ids(r.affected), r.sources[0]["format"])
        r.case.close()
    return _PLAIN[name]


@pytest.mark.parametrize("name, mark", CASES)
def test_every_reader_reads_marked_and_utf16_text_as_plain(tmp_path, tmp_path_factory, name, mark):
    """The same records, counts and affected responses as the plain UTF-8 file, its format still sniffed (on
    main a BOM cost a LiteLLM CSV every row, and NDJSON its first record)."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    f = write(tmp_path / "logs" / name.replace("/", "-"), MARKS[mark](text))
    r = _triage(tmp_path, [f], **READERS[name])
    s = r.sources[0]
    assert (s["read"], s["requests"], s["skipped"], s["quarantined"]) == COUNTS[name]
    assert (ids(r.affected), s["format"]) == _plain(tmp_path_factory, name)
    manifest = r.case.manifest["inputs"][0]
    assert manifest["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()     # the file's own bytes


def test_the_native_json_path_and_a_marked_file_agree(tmp_path, monkeypatch):
    """A big file of bare JSON lines with a BOM is not DuckDB's JSON reader's (it starts with the mark): the
    line reader reads it, with the same result as the unmarked file read natively."""
    monkeypatch.setenv("KVIR_NATIVE_MIN_BYTES", "1")
    lines = [fin(f"2026-08-30T10:00:{i:02d}", f"n{i}", 700000 + i) for i in range(20)]
    plain = write(tmp_path / "a" / "decode-0.jsonl", "\n".join(lines) + "\n")
    marked = write(tmp_path / "b" / "decode-0.jsonl", b"\xef\xbb\xbf" + plain.read_bytes())
    kw = dict(source_tz="UTC", served_model="zai-org/GLM-5.3")
    r1, r2 = _triage(tmp_path / "a", [plain], **kw), _triage(tmp_path / "b", [marked], **kw)
    assert r1.case.manifest["inputs"][0]["reader"].startswith("DuckDB read_ndjson")
    assert "reader" not in r2.case.manifest["inputs"][0] or "line reader" in r2.case.manifest["inputs"][0]["reader"]
    assert ids(r1.affected) == ids(r2.affected) and len(ids(r1.affected)) == 20


@pytest.mark.parametrize("mark", [b"\xff\xfe\x00\x00", b"\xff\xfe", b"\xfe\xff"])
def test_a_line_that_begins_with_a_stray_mark_costs_that_line_only(tmp_path, mark):
    """A first line that happens to begin with a UTF-16/32 mark (found by the format fuzz test) is not a
    mark: the file is UTF-8, that line is set aside (skipped or quarantined) and every other line read (it was one line of
    replacement characters: 20 requests became 1 quarantined row)."""
    lines = [fin(f"2026-08-30T10:00:{i:02d}", f"m{i}", 700000 + i) for i in range(20)]
    f = write(tmp_path / "logs" / "decode-0.jsonl", mark + b"garbage\n" + ("\n".join(lines) + "\n").encode())
    r = _triage(tmp_path, [f], source_tz="UTC", served_model="zai-org/GLM-5.3")
    s = r.sources[0]
    assert (s["read"], s["requests"], s["skipped"] + s["quarantined"]) == (21, 20, 1)
    assert ids(r.affected) == {f"m{i}" for i in range(20)}


# ------------------------------------------------------------------------------ files that change while read

def _grow_after_listing(monkeypatch, path, extra: bytes) -> None:
    """Append to `path` after kvir listed its inputs and before it reads them (what a live log does)."""
    import kvir.triage.run as run

    real = run.ingest

    def ingest(*a, **k):
        with open(path, "ab") as f:
            f.write(extra)
        return real(*a, **k)
    monkeypatch.setattr(run, "ingest", ingest)


def test_a_growing_log_is_read_as_it_was_when_listed(spec, tmp_path, monkeypatch):
    """The recorded size and SHA-256 are of exactly the bytes parsed (on main: more lines than they cover)."""
    f = write(tmp_path / "decode-0.jsonl", fin("2026-08-30T10:00:00", "a", 700000) + "\n")
    before = f.read_bytes()
    _grow_after_listing(monkeypatch, f, (fin("2026-08-30T10:00:05", "late", 700001) + "\n").encode())
    r = kvir.triage(spec(), [f], out=tmp_path / "case", source_tz="UTC", served_model="zai-org/GLM-5.3", hash="full")
    entry = r.case.manifest["inputs"][0]
    assert entry["files"][0]["size_bytes"] == len(before) and entry["sha256"] == hashlib.sha256(before).hexdigest()
    assert r.sources[0]["read"] == 1 and ids(r.affected) == {"a"}
    assert any("changed while the run read it" in n and "grew" in n for n in r.sources[0]["notes"])


def test_a_growing_compressed_log_is_read_as_it_was_when_listed(spec, tmp_path, monkeypatch):
    first = (fin("2026-08-30T10:00:00", "a", 700000) + "\n").encode()
    f = write(tmp_path / "decode-0.jsonl.gz", gzip.compress(first))
    before = f.read_bytes()
    _grow_after_listing(monkeypatch, f, gzip.compress((fin("2026-08-30T10:00:05", "late", 700001) + "\n").encode()))
    r = kvir.triage(spec(), [f], out=tmp_path / "case", source_tz="UTC", served_model="zai-org/GLM-5.3", hash="full")
    assert r.case.manifest["inputs"][0]["sha256"] == hashlib.sha256(before).hexdigest()
    assert r.sources[0]["read"] == 1 and ids(r.affected) == {"a"}


def test_a_file_duckdb_reads_that_changes_is_refused(spec, tmp_path, monkeypatch):
    """A CSV is read by DuckDB, which cannot stop at the listed size: a change while the run reads it is
    refused, naming the file (its fingerprint would describe other bytes than those parsed)."""
    f = tmp_path / "spend.csv"
    shutil.copy(FIXTURES / "litellm" / "LiteLLM_SpendLogs.csv", f)
    last = f.read_text().splitlines()[1]
    _grow_after_listing(monkeypatch, f, (last + "\n").encode())
    with pytest.raises(InputError, match=r"changed while they were read.*spend\.csv \(it grew"):
        kvir.triage(spec(), [f], out=tmp_path / "case")
    assert not (tmp_path / "case").exists()


def test_a_file_that_changes_under_the_native_reader_goes_to_the_line_reader(spec, tmp_path, monkeypatch):
    import kvir.ingest.native as native

    monkeypatch.setenv("KVIR_NATIVE_MIN_BYTES", "1")
    f = write(tmp_path / "decode-0.jsonl", "".join(fin(f"2026-08-30T10:00:{i:02d}", f"n{i}", 700000) + "\n"
                                                   for i in range(5)))
    before = f.read_bytes()
    real = native.check_file

    def check_file(path, *a, **k):        # the second read: DuckDB is reading the file now
        with open(path, "ab") as g:
            g.write((fin("2026-08-30T10:01:00", "late", 700000) + "\n").encode())
        return real(path, *a, **k)
    monkeypatch.setattr(native, "check_file", check_file)
    r = kvir.triage(spec(), [f], out=tmp_path / "case", source_tz="UTC", served_model="zai-org/GLM-5.3", hash="full")
    entry = r.case.manifest["inputs"][0]
    assert "changed since it was listed (it grew" in entry["reader"]
    assert entry["sha256"] == hashlib.sha256(before).hexdigest() and r.sources[0]["read"] == 5


# ------------------------------------------------------------------------------ paths, bombs, many bad files

def test_an_existing_path_is_never_read_as_a_glob(spec, tmp_path):
    """`a[1].jsonl` exists: it is read, not its neighbour `a1.jsonl` that the pattern would match; likewise in
    [[sources]], and under a folder whose own name holds glob characters (on main: the neighbour was read)."""
    base = tmp_path / "logs[2026]"
    literal = write(base / "a[1].jsonl", fin("2026-08-30T10:00:00", "literal", 700000) + "\n")
    write(base / "a1.jsonl", fin("2026-08-30T10:00:00", "neighbour", 700000) + "\n")
    kw = dict(source_tz="UTC", served_model="zai-org/GLM-5.3", hash="none")
    r = kvir.triage(spec(), [str(literal)], out=tmp_path / "c1", **kw)
    assert ids(r.affected) == {"literal"}
    r = kvir.triage(spec(), [str(base / "a*.jsonl")], out=tmp_path / "c2", **kw)    # a real glob still expands
    assert ids(r.affected) == {"literal", "neighbour"}
    s = write(base / "incident.toml", spec_text(extra='\n[[sources]]\npath = "a[1].jsonl"\nformat = "sglang-json"\n'
                                                      'source_tz = "UTC"\nserved_model = "zai-org/GLM-5.3"\n'))
    r = kvir.triage(s, out=tmp_path / "c3", hash="none")
    assert ids(r.affected) == {"literal"} and r.sources[0]["source_tz"] == "UTC"


def test_a_gzip_of_blank_lines_costs_no_rows(spec, tmp_path):
    """Blank lines are counted, never stored: 20 M of them (a 20 KB gzip) read = skipped, no record row. (The
    issue's 200 M-line bomb took 3 min 39 s and 1.7 GB on main; measured after the fix: 7 s, 0.4 GB.)"""
    f = tmp_path / "bomb.jsonl.gz"
    f.write_bytes(gzip.compress(b"\n" * 20_000_000 + (fin("2026-08-30T10:00:00", "x", 700000) + "\n").encode(), 9))
    assert f.stat().st_size < 64 << 10
    r = kvir.triage(spec(), [f], out=tmp_path / "case", format="sglang-json", source_tz="UTC",
                    served_model="zai-org/GLM-5.3", hash="none")
    s = r.sources[0]
    assert (s["read"], s["skipped"], s["requests"]) == (20_000_001, 20_000_000, 1)
    assert r.case.con.execute("SELECT count(*) FROM records_text").fetchone()[0] == 1
    assert r.affected.iloc[0]["source_line"] == 20_000_001


def test_every_input_that_cannot_be_read_is_named_in_one_run(spec, tmp_path):
    """Seven files no format recognises (and one that is fine): one error names all seven (on main: the first)."""
    logs = tmp_path / "logs"
    write(logs / "decode-0.jsonl", fin("2026-08-30T10:00:00", "ok", 700000) + "\n")
    bad = [write(logs / f"notes-{i}.txt", f"meeting notes {i}\nnothing to see\n") for i in range(7)]
    with pytest.raises(InputError) as e:
        kvir.triage(spec(), [logs], out=tmp_path / "case", source_tz="UTC")
    msg = str(e.value)
    assert msg.startswith("7 inputs cannot be read as they are")
    assert all(str(b) in msg for b in bad) and "decode-0.jsonl" not in msg


def test_inputs_needing_a_zone_are_all_named_in_one_run(spec, tmp_path):
    """Several engine logs without --source-tz: every one is named at once."""
    files = [write(tmp_path / f"decode-{i}.jsonl", fin("2026-08-30T10:00:00", f"r{i}", 700000) + "\n") for i in range(3)]
    with pytest.raises(InputError) as e:
        kvir.triage(spec(), files, out=tmp_path / "case")
    assert str(e.value).startswith("3 inputs cannot be read as they are") and all(str(f) in str(e.value) for f in files)
    assert str(e.value).count("kvir will not guess the zone") == 3
