"""Big SGLang logs are read by DuckDB's own readers (kvir.ingest.native: its JSON reader for bare JSON
lines, its CSV reader for the logger's prefixed lines): the records that reach the case must be exactly
the line reader's, row for row (line numbers included), and a file DuckDB would read differently must
go to the line reader, saying why.

The bare files are the JSON payloads of SGLang's own request-log lines in the generated fixtures
(tests/fixtures/sglang-json: each build's RequestLogger), as a log shipper that keeps only the message
writes them; the hostile variants are those lines with one fault each."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kvir.case.store import Case
from kvir.ingest.native import check_file
from kvir.ingest.run import IngestOptions, ingest, plan_sources
from kvir.spec.model import load_spec

from ..conftest import spec_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-json"
NATIVE = 0                  # native_min_bytes: every eligible file goes to DuckDB's JSON reader
LINES = 1 << 62             # none does


def _bare_lines(path: Path) -> list[str]:
    """The request-log records of a fixture, without the handler's prefix (other server lines dropped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        i = line.find("{")
        if i >= 0 and '"event": "request.' in line:
            out.append(line[i:])
    return out


def _ingest(tmp_path: Path, files: list[Path], native_min_bytes: int, source_tz: str = "UTC", **kw) -> dict:
    """Ingest the files (sglang-json, the fixture's model); the case's rows, counts, requests and readers."""
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text().replace("2026-09-09T19:40:00Z", "2026-11-30T00:00:00Z"))   # DST ends inside
    opts = IngestOptions(format="sglang-json", source_tz=source_tz, served_model="zai-org/GLM-5.3",
                         native_min_bytes=native_min_bytes, **kw)
    case = Case.create(tmp_path / f"case-{native_min_bytes}")
    try:
        ingest(case, plan_sources(files, load_spec(spec), opts), opts)
        con = case.con
        return {
            "records": con.execute("SELECT * EXCLUDE (source_id) FROM records ORDER BY source_id, source_line").fetchall(),
            "counts": con.execute("SELECT source_id, kind, reason, n FROM source_counts ORDER BY ALL").fetchall(),
            "quarantine": con.execute("SELECT source_id, source_line, reason FROM quarantine ORDER BY ALL").fetchall(),
            "sha256": con.execute("SELECT sha256 FROM sources ORDER BY source_id").fetchall(),
            "requests": con.execute("SELECT * FROM requests ORDER BY ALL").fetchall(),
            "conflicts": con.execute("SELECT * FROM conflicts ORDER BY ALL").fetchall(),
            "readers": [e.get("reader") for e in case.manifest["inputs"]],
        }
    finally:
        case.close()


def _both(tmp_path: Path, files: list[Path], **kw) -> tuple[dict, dict]:
    """The same files read natively (every eligible file) and by the line reader alone."""
    return _ingest(tmp_path, files, NATIVE, **kw), _ingest(tmp_path, files, LINES, **kw)


def _write(tmp_path: Path, name: str, lines: list[str], end: str = "\n") -> Path:
    p = tmp_path / name
    p.write_bytes((end.join(lines) + end).encode("utf-8", "surrogateescape"))
    return p


def test_every_builds_request_log_reads_the_same_natively(tmp_path):
    files = []
    for log in sorted(FIXTURES.glob("*/*.log")):
        lines = _bare_lines(log)
        if lines:
            files.append(_write(tmp_path, f"{log.parent.name}-{log.stem}.jsonl", lines))
    assert len(files) >= 12
    native, lines = _both(tmp_path, files)
    assert all(r.startswith("DuckDB read_ndjson") for r in native["readers"]), native["readers"]
    assert all(r is None for r in lines["readers"])          # never tried: below the size
    assert native["records"] == lines["records"]
    assert native["counts"] == lines["counts"] and native["quarantine"] == lines["quarantine"]
    assert native["sha256"] == lines["sha256"]
    kinds = {k for _, k, _, _ in native["counts"]}
    assert "request" in kinds and "skip" in kinds             # requests and request.received lines both seen


def test_every_builds_server_log_as_written_reads_the_same_natively(tmp_path):
    """The fixtures as the servers wrote them: the logger's `[YYYY-MM-DD HH:MM:SS] ` before each record,
    between the server's other lines (rejections, start-up): DuckDB's CSV reader, then the same parse."""
    files = sorted(FIXTURES.glob("*/*.log"))
    assert len(files) >= 12
    native, lines = _both(tmp_path, files)
    assert all(r.startswith("DuckDB read_csv") for r in native["readers"]), native["readers"]
    for key in ("records", "counts", "quarantine", "requests", "sha256"):
        assert native[key] == lines[key], key


def _record(i: int, **over) -> str:
    r = {"timestamp": f"2026-08-28T10:00:{i:02d}.250000", "event": "request.finished", "rid": f"r{i}",
         "obj": {"rid": f"r{i}", "bootstrap_room": None},
         "out": {"meta_info": {"id": f"r{i}", "finish_reason": {"type": "length", "length": 8},
                               "prompt_tokens": 681281 + i, "completion_tokens": 8, "cached_tokens": 0,
                               "e2e_latency": 1.5}}}
    r.update(over)
    return json.dumps(r)


# fault -> (the lines, the reason the manifest gives for reading it line by line)
FAULTS = {
    "blank line": ([_record(1), "", _record(2)], "rows for 3 lines"),
    "null line": ([_record(1), "null", _record(2)], "hold no field"),
    "malformed": ([_record(1), '{"event": "request.finished", "rid": ', _record(2)], "refused it (malformed JSON)"),
    "invalid UTF-8": ([_record(1), _record(2).replace('"r2"', '"r\udcff2"', 1)], "refused it (invalid UTF-8)"),
    "field of another shape": ([_record(1), _record(2, obj="secret prompt")], "refused it (a field of another shape)"),
    "duplicate key": ([_record(1), _record(2)[:-1] + ', "rid": "other"}'], "refused it (a duplicate key)"),
    "prefix line": ([_record(1), "[2026-08-28 10:00:02] " + _record(2)], "refused it (malformed JSON)"),
    "other log line": ([_record(1), "INFO: Started server process", _record(2)], "refused it (malformed JSON)"),
}


def test_a_file_the_json_reader_would_read_otherwise_goes_to_the_line_reader(tmp_path):
    """One ingest, one file per fault: each source is read natively or not on its own."""
    names = sorted(FAULTS)
    files = [_write(tmp_path, f"fault{i}.jsonl", FAULTS[name][0]) for i, name in enumerate(names)]
    native, plain = _both(tmp_path, files)
    for name, reader in zip(names, native["readers"]):
        assert reader.startswith("kvir line reader") and FAULTS[name][1] in reader, (name, reader)
        assert "secret" not in reader and "r2" not in reader       # the reason names no record's content
    assert native["records"] == plain["records"] and native["counts"] == plain["counts"]
    assert native["quarantine"] == plain["quarantine"]
    assert sum(n for *_, n in native["counts"]) == sum(len(FAULTS[n][0]) for n in names)   # every line counted


# fault -> (lines as the logger writes them, the reason the manifest gives for reading it line by line,
# or None: DuckDB's CSV reader reads it as the line reader does)
PREFIXED = "[2026-08-28 10:00:00] "
CSV_FAULTS = {
    "blank lines": ([PREFIXED + _record(1), "", "   ", PREFIXED + _record(2)], None),
    "CRLF": ([PREFIXED + _record(1) + "\r", PREFIXED + _record(2) + "\r"], None),
    "lone carriage return": ([PREFIXED + _record(1) + "\r" + PREFIXED + _record(2)], "2 rows for 1 lines"),
    "delimiter byte": ([PREFIXED + _record(1), PREFIXED + _record(2).replace("length", "len\x01gth")], "\\x01 byte"),
    "invalid UTF-8": ([PREFIXED + _record(1), PREFIXED + _record(2).replace('"r2"', '"r\udcff2"', 1)],
                      "refused it (invalid UTF-8)"),
    "other server lines": ([PREFIXED + "Started server process", PREFIXED + _record(1), "Traceback (most recent call last):",
                            "[2026-08-28 10:00:00 TP0] Input length (700000 tokens) exceeds the maximum allowed length "
                            "(681274 tokens). Use a shorter input or enable --allow-auto-truncate., self.rid='r9'"], None),
}


def test_logger_lines_the_csv_reader_would_read_otherwise_go_to_the_line_reader(tmp_path):
    names = sorted(CSV_FAULTS)
    files = [_write(tmp_path, f"fault{i}.log", CSV_FAULTS[name][0]) for i, name in enumerate(names)]
    native, plain = _both(tmp_path, files)
    for name, reader in zip(names, native["readers"]):
        why = CSV_FAULTS[name][1]
        assert reader.startswith("DuckDB read_csv") if why is None else (why in reader), (name, reader)
        assert "r2" not in reader                               # the reason names no record's content
    for key in ("records", "counts", "quarantine", "requests"):
        assert native[key] == plain[key], key


def test_over_long_line_goes_to_the_line_reader_and_is_quarantined(tmp_path):
    limit = 1 << 20
    long = _record(2, pad="x" * limit)
    f = _write(tmp_path, "requests.jsonl", [_record(1), long, _record(3)])
    native, plain = _both(tmp_path, [f], max_line_bytes=limit)
    assert f"over {limit} bytes" in native["readers"][0]
    assert native["records"] == plain["records"]
    assert [(line, reason) for _, line, reason in native["quarantine"]] == [(2, f"line longer than {limit} bytes")]


def test_crlf_and_a_last_line_without_newline_read_natively(tmp_path):
    f = _write(tmp_path, "requests.jsonl", [_record(i) for i in range(1, 6)], end="\r\n")
    f.write_bytes(f.read_bytes()[:-2])              # no terminator after the last record
    native, plain = _both(tmp_path, [f])
    assert native["readers"][0].startswith("DuckDB read_ndjson")
    assert native["records"] == plain["records"]
    assert [r[0] for r in native["records"]] == [1, 2, 3, 4, 5]   # source_line


@pytest.mark.parametrize("tail, lines", [(b"", 3), (b"{}", 4), (b"\n", 4)])
def test_check_file_counts_lines_like_the_line_reader(tmp_path, tail, lines):
    p = tmp_path / "f"
    p.write_bytes(b'{"a":1}\n{"a":2}\n{"a":3}\n' + tail)
    assert check_file(p, 1 << 20, None, hashed=False).lines == lines


@pytest.mark.parametrize("length, too_long", [(99, False), (100, False), (101, True)])
@pytest.mark.parametrize("where", ["first", "middle", "last", "last without newline"])
def test_check_file_finds_a_line_over_the_limit_wherever_it_is(tmp_path, length, too_long, where):
    """Lines of 99 / 100 / 101 bytes against a 100-byte limit: blocks are 101 bytes here, so the long
    line crosses block boundaries at every offset as the short lines before it vary."""
    short = [b"s" * k for k in (3, 50, 7, 88, 1, 64)]
    body = [b"x" * length]
    parts = {"first": body + short, "middle": short[:3] + body + short[3:], "last": short + body,
             "last without newline": short + body}[where]
    data = b"\n".join(parts) + (b"" if where == "last without newline" else b"\n")
    p = tmp_path / "f"
    p.write_bytes(data)
    got = check_file(p, 100, None, hashed=True)
    assert got.too_long is too_long
    assert got.lines == len(parts)
    assert got.sha256 == hashlib.sha256(data).hexdigest()


def test_kvir_native_min_bytes_sets_the_threshold_from_the_command_line(tmp_path, monkeypatch):
    """KVIR_NATIVE_MIN_BYTES: a size (0: every eligible file) or `off` (always the line reader); any
    other value is refused in one line with exit status 2."""
    from typer.testing import CliRunner

    from kvir.cli.app import app

    f = _write(tmp_path, "requests.jsonl", [_record(i) for i in range(1, 4)])
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text())
    readers = {}
    for value in ("0", "off"):
        monkeypatch.setenv("KVIR_NATIVE_MIN_BYTES", value)
        out = tmp_path / f"case-{value}"
        res = CliRunner().invoke(app, ["triage", "-q", "-i", str(spec), "-o", str(out), "--source-tz", "UTC",
                                       "--served-model", "zai-org/GLM-5.3", str(f)])
        assert res.exit_code == 0, res.output
        readers[value] = json.loads((out / "manifest.json").read_text())["inputs"][0].get("reader")
        assert json.loads((out / "summary.json").read_text())["summary"]["requests_total"] == 3
    assert readers["0"].startswith("DuckDB read_ndjson") and readers["off"] is None
    monkeypatch.setenv("KVIR_NATIVE_MIN_BYTES", "64MB")
    res = CliRunner().invoke(app, ["triage", "-q", "-i", str(spec), "-o", str(tmp_path / "case-bad"),
                                   "--source-tz", "UTC", str(f)])
    assert res.exit_code == 2 and "KVIR_NATIVE_MIN_BYTES must be a size in bytes or 'off'" in res.output


def _suite_faults() -> dict[str, list[str | bytes]]:
    """The faults the rest of the suite puts in SGLang JSON request logs (tests/test_volume_faults.py,
    tests/test_triage_inputs.py, tests/test_triage_sglang.py), and more of each kind, as bare JSON lines:
    file name -> lines (bytes where the line is not valid UTF-8)."""
    from tests.conftest import sglang_finished as fin, sglang_received as rec
    from tests.test_volume_faults import _conflicting_lines

    bad_utf8 = fin("2026-08-30T10:00:00", "rid-@@-1", 700000).encode().replace(b"@@", b"\xff\xfe")
    return {
        "conflicts.jsonl": _conflicting_lines(),
        "conflicts-reversed.jsonl": _conflicting_lines()[::-1],
        "prefill-0.jsonl": [fin("2026-08-30T10:00:01", "p1", 1, room=42), fin("2026-08-30T10:00:02", "p2", 5, room=43)],
        "decode-0.jsonl": [fin("2026-08-30T10:00:09", "d1", 700000, room=42), rec("2026-08-30T10:00:00", "d1")],
        "bad-utf8.jsonl": [bad_utf8, fin("2026-08-30T10:00:05", "rid-ok", 700001),
                           fin("2026-08-30T10:00:07", "rid-\ufffd-real", 700002)],
        "times.jsonl": [fin("1989-06-01T00:00:00", "old", 700000), fin("2101-01-01T00:00:00", "future", 700000),
                        fin("2026-11-01T01:30:00", "fold", 700000, latency=0.0),     # twice in America/Chicago
                        fin("2026-03-08T02:30:00", "gap", 700000, latency=0.0),      # never in America/Chicago
                        fin("not a time", "nat", 700000), fin("2026-08-30T10:00:00+02:00", "offset", 700000),
                        fin("2026-08-30 10:00", "minutes", 700000), fin("1788000000", "epoch", 700000)],
        "fields.jsonl": [fin("2026-08-30T10:00:00", "neg", -1), fin("2026-08-30T10:00:00", "frac", 700000.5),
                         fin("2026-08-30T10:00:00", "float", 700000.0), fin("2026-08-30T10:00:00", "str", "700000"),
                         fin("2026-08-30T10:00:00", "bool", True), fin("2026-08-30T10:00:00", "nolen", None),
                         fin("2026-08-30T10:00:00", "lat-neg", 700000, latency=-1.0),
                         fin("2026-08-30T10:00:00", "lat-huge", 700000, latency=1e9),
                         fin("2026-08-30T10:00:00", "abort400", 700000, ftype="abort", status=400),
                         fin("2026-08-30T10:00:00", "abort", 700000, ftype="abort"),
                         fin("2026-08-30T10:00:00", "noreason", 700000, ftype=None),
                         fin("2026-08-30T10:00:00", "  ", 700000),
                         json.dumps({"timestamp": "2026-08-30T10:00:00", "event": "request.finished"}),
                         json.dumps({"timestamp": "2026-08-30T10:00:00", "rid": "noevent"}),
                         json.dumps({"timestamp": "2026-08-30T10:00:00", "event": "request.other", "rid": "x"}),
                         json.dumps({"event": "request.finished", "rid": "notime",
                                     "out": {"meta_info": {"prompt_tokens": 700000}}}),
                         json.dumps({"timestamp": "2026-08-30T10:00:00", "event": "request.finished", "rid": "\u00e9t\u00e9",
                                     "out": {"meta_info": {"prompt_tokens": 7e5, "e2e_latency": "1.5"}}})],
        "empty-object.jsonl": [fin("2026-08-30T10:00:00", "e1", 700000), "{}"],     # the line reader only
    }


@pytest.mark.parametrize("prefixed", [False, True])
@pytest.mark.parametrize("zone", ["UTC", "America/Chicago", "+05:30"])
def test_every_fault_of_the_suite_reads_the_same_natively(tmp_path, zone, prefixed):
    """Each fault file on its own (one ingest, each source decided alone), as bare JSON lines (DuckDB's
    JSON reader) and as the logger writes them (its CSV reader): what reaches the case - records,
    counts, quarantine, requests (merged), conflicts - is the line reader's, whichever reader DuckDB's
    checks let read it."""
    files = []
    for name, lines in _suite_faults().items():
        pre = b"[2026-08-30 10:00:00] " if prefixed else b""
        data = b"\n".join(pre + (x if isinstance(x, bytes) else x.encode()) for x in lines) + b"\n"
        files.append(tmp_path / name)
        files[-1].write_bytes(data)
    native, plain = _both(tmp_path, files, source_tz=zone)
    read_natively = [r for r in native["readers"] if r.startswith("DuckDB")]
    # all but invalid UTF-8 and, read as JSON, {}: no blanket refusal
    assert len(read_natively) == (7 if prefixed else 6), native["readers"]
    for key in ("records", "counts", "quarantine", "requests", "conflicts", "sha256"):
        assert native[key] == plain[key], key
    assert plain["conflicts"] and plain["quarantine"]          # the faults are there to be compared


def test_a_file_of_many_blocks_keeps_every_line_number(tmp_path):
    """DuckDB's reader parses a file in blocks on every thread: the line numbers must still be the lines'
    (each record's id here says its line). 200,000 lines in blocks of a few MiB (--max-line-bytes 1 MiB)."""
    from tests.conftest import sglang_finished as fin, sglang_received as rec

    n = 100_000
    lines = [x for i in range(n) for x in (rec("2026-08-30T10:00:00", f"r{2 * i + 2}"),
                                           fin("2026-08-30T10:00:01", f"r{2 * i + 2}", 700000 + i))]
    f = _write(tmp_path, "decode-0.jsonl", lines)
    got = _ingest(tmp_path, [f], NATIVE, max_line_bytes=1 << 20)
    assert got["readers"][0].startswith("DuckDB read_ndjson")
    numbered = [(line, rid) for line, rid in ((r[0], r[3]) for r in got["records"])]
    assert len(numbered) == n and all(rid == f"r{line}" for line, rid in numbered)
    assert got["counts"] == [(1, "request", None, n), (1, "skip", "request.received event (not a request)", n)]


def test_a_plan_that_could_reorder_rows_is_refused(tmp_path):
    """The order check reads DuckDB's plan: a cross product with one settings row keeps the file's order
    (its first child streams), a hash join does not (measured: most rows of a 1 M-line file moved)."""
    import duckdb

    from kvir.ingest.native import _keeps_order

    f = _write(tmp_path, "a.jsonl", [json.dumps({"rid": f"r{i}"}) for i in range(3)])
    con = duckdb.connect()
    con.execute("CREATE TABLE s AS SELECT 1 AS source_id, 'UTC' AS tz")
    read = "(SELECT 1 AS source_id, rid FROM read_ndjson($p, columns = {rid: 'VARCHAR'}))"
    assert _keeps_order(con, f"SELECT r.rid, s.tz FROM {read} AS r CROSS JOIN s", {"p": str(f)})
    assert not _keeps_order(con, f"SELECT r.rid, s.tz FROM {read} AS r JOIN s USING (source_id)", {"p": str(f)})
    assert not _keeps_order(con, f"SELECT rid FROM {read} ORDER BY rid DESC", {"p": str(f)})


def test_a_file_that_grows_while_it_is_read_is_noticed(tmp_path):
    """The digest must be of exactly the bytes parsed: a file that changes between the two reads (here:
    lines appended during the check's read) goes to the line reader, which hashes what it parses."""
    p = _write(tmp_path, "f.jsonl", [_record(i) for i in range(1, 4)])
    assert not check_file(p, 1 << 20, None, hashed=True).changed

    grown = []

    def grow(_n: int) -> None:       # once: appending at every block read would never end
        if not grown:
            with p.open("a") as fh:
                grown.append(fh.write(_record(9) + "\n"))
    assert check_file(p, 1 << 20, grow, hashed=True).changed
