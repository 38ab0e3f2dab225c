"""`--format auto` per file, `kvir formats`, and a folder mixing every format through the CLI."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvir.core.errors import InputError
from kvir.ingest.formats import FORMATS
from kvir.ingest.run import sniff

from ..conftest import spec_text
from .expected import AFFECTED, AGGREGATE, COUNTS, FIXTURES, FORMAT_OF, POSSIBLY_AFFECTED, SOURCES_TOML


@pytest.mark.parametrize("rel", sorted(COUNTS))
def test_auto_picks_the_format_of_every_fixture(rel):
    fmt, how = sniff(FIXTURES / rel)
    assert fmt.name == FORMAT_OF[rel.split("/")[0]]
    assert how.startswith("sniffed: " + fmt.name) and "tried:" in how


def test_a_file_matching_no_format_names_the_formats_tried(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("dear diary,\nnothing here is a request log\n")
    with pytest.raises(InputError) as e:
        sniff(p)
    msg = str(e.value)
    assert "matches no known format" in msg and str(p) in msg
    for name in FORMATS:
        if FORMATS[name].sniff is not None:
            assert name in msg


def test_kvir_formats_lists_every_format_with_what_it_needs():
    out = subprocess.run([sys.executable, "-m", "kvir.cli.app", "formats"], capture_output=True, text=True, check=True,
                         env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"}).stdout
    # one row per format (name, needs, evidence) and, indented under it, what the format is and its times
    lines: dict[str, str] = {}
    current = None
    for line in out.splitlines()[3:]:                     # the title, the header and its rule
        if not line.startswith(" "):
            current = line.split()[0]
            lines[current] = ""
        lines[current] += " " + " ".join(line.split())
    for name, f in FORMATS.items():
        assert name in lines, name
        row = lines[name]
        if "source_tz" in f.needs:
            assert "--source-tz" in row
        if f.times_utc:
            assert "UTC by definition" in row
    assert "--year" in lines["vllm"]
    assert "candidates" in lines["sglang-router"] and "aggregate bounds only" in lines["prometheus"]


def _mixed_folder(tmp_path: Path) -> Path:
    d = tmp_path / "evidence"
    for folder in FORMAT_OF:
        shutil.copytree(FIXTURES / folder, d / folder)
    # per-source zones for the host-local formats; paths are relative to the spec, which lives outside the
    # evidence folder (every file in it is read as a log)
    (tmp_path / "incident.toml").write_text(spec_text("public", SOURCES_TOML.replace('path = "', 'path = "evidence/')))
    return d


def test_cli_triage_format_auto_on_a_folder_mixing_every_format(tmp_path):
    d = _mixed_folder(tmp_path)
    case = tmp_path / "case"
    proc = subprocess.run([sys.executable, "-m", "kvir.cli.app", "triage", str(d), "--incident", str(tmp_path / "incident.toml"),
                           "--out", str(case), "--format", "auto", "--hash", "none", "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    # every file: its format (sniffed, and said so) and a complete account read = parsed + quarantined
    assert len(result["sources"]) == len(COUNTS)
    got = {}
    for s in result["sources"]:
        rel = Path(s["label"]).relative_to(d).as_posix()
        assert s["read"] == s["parsed"] + s["quarantined"]
        assert s["format"] == FORMAT_OF[rel.split("/")[0]]
        assert s["chosen_by"].startswith("sniffed: " + s["format"])
        got[rel] = (s["read"], s["requests"], s["skipped"], s["quarantined"])
    assert got == COUNTS
    # the affected set is the union of every format's, worked out by hand
    import pyarrow.parquet as pq

    affected = set(pq.read_table(case / "affected.parquet").column("request_id").to_pylist())
    # mixed together, LiteLLM's chatcmpl-l6 (00:00:00.000, 681,281 tokens, a customer) falls within 2 s of
    # SGLang's d7 and d8 (681,281 tokens each, no customer): it is one of them, so it is not counted again
    # (evidence_joins: ambiguous, not a request of its own), and d7 stays the affected response
    assert affected == set().union(*AFFECTED.values()) - {"chatcmpl-l6"}
    summary = result["summary"]
    assert summary["affected"] == len(affected)
    assert summary["possibly_affected"] == len(POSSIBLY_AFFECTED)
    assert (summary["aggregate_lower"], summary["aggregate_upper"]) == tuple(map(sum, zip(*AGGREGATE.values())))
    # the summary on stderr says how each input was read
    assert "How each input was read" in proc.stderr and "sniffed" in proc.stderr
    assert "Aggregate finding (not request-level evidence)" in proc.stderr
