"""Big files of bare SGLang JSON lines are read by DuckDB's own JSON reader (kvir.ingest.native): the
records that reach the case must be exactly the line reader's, row for row (line numbers included),
and a file the JSON reader would read differently must go to the line reader, saying why.

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


def _ingest(tmp_path: Path, files: list[Path], native_min_bytes: int, **kw) -> dict:
    """Ingest the files (sglang-json, UTC, the fixture's model); the case's rows, counts and readers."""
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text())
    opts = IngestOptions(format="sglang-json", source_tz="UTC", served_model="zai-org/GLM-5.3",
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
            "readers": [e.get("reader") for e in case.manifest["inputs"]],
        }
    finally:
        case.close()


def _both(tmp_path: Path, files: list[Path], **kw) -> tuple[dict, dict]:
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
