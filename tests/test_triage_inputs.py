"""Labels and exclusions, bad input, and the promise that nothing read is lost."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

import kvir
from kvir.core.errors import InputError, TooManyBadLines
from tests.conftest import ids, sglang_finished as fin, write

CHI = "America/Chicago"
ACCOUNTS = """
[[accounts]]
id = "cust-researcher"
label = "reporting researcher"
reason = "bug-bounty reproduction"
exclude = {exclude}

[[accounts]]
id = "cust-qa"
label = "provider tests"
reason = "internal verification"
"""


def _page(tmp_path):
    recs = [{"id": f"g{i}", "created_at": f"2026-08-30T0{i}:00:00Z", "model": "@cf/zai-org/glm-5.3",
             "status_code": 200, "tokens_in": 700000 + i, "metadata": json.dumps({"customer_id": c})}
            for i, c in enumerate(["cust-a", "cust-researcher", "cust-researcher", "cust-qa", "cust-b"])]
    return write(tmp_path / "gw.json", json.dumps({"result": recs, "success": True}))


def test_labelled_accounts_stay_counted_and_are_shown(spec, tmp_path):
    r = kvir.triage(spec(extra=ACCOUNTS.replace("{exclude}", "false")), [_page(tmp_path)], out=tmp_path / "c")
    assert len(r.affected) == 5 and r.summary["affected_labelled"] == 3 and r.summary["excluded"] == 0
    labels = dict(zip(r.accounts["account_id"], r.accounts["label"]))
    assert labels["cust-researcher"] == "reporting researcher" and labels["cust-qa"] == "provider tests"
    assert (tmp_path / "c" / "excluded.csv").read_text().count("\n") == 1      # header only


def test_excluded_accounts_are_listed_apart_never_dropped(spec, tmp_path):
    r = kvir.triage(spec(extra=ACCOUNTS.replace("{exclude}", "true")), [_page(tmp_path)], out=tmp_path / "c")
    assert ids(r.affected) == {"g0", "g3", "g4"}
    assert r.summary["excluded"] == 2
    excluded = (tmp_path / "c" / "excluded.csv").read_text().splitlines()
    assert len(excluded) == 3 and all("cust-researcher" in line for line in excluded[1:])


def test_missing_path_and_unknown_format(spec, tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        kvir.triage(spec(), [tmp_path / "nope.log"], out=tmp_path / "c")
    with pytest.raises(InputError, match="glob matches no files"):
        kvir.triage(spec(), [str(tmp_path / "*.nothing")], out=tmp_path / "c")
    odd = write(tmp_path / "notes.txt", "hello\nthis is not a log\n")
    with pytest.raises(InputError) as e:
        kvir.triage(spec(), [odd], out=tmp_path / "c")
    assert "matches no known format" in str(e.value) and "sglang-json" in str(e.value) and "notes.txt" in str(e.value)
    with pytest.raises(InputError, match="unknown format 'apache'"):
        kvir.triage(spec(), [odd], out=tmp_path / "c", format="apache")


def without_file_permission_override(cmd: list[str]) -> list[str]:
    """`cmd` run so that file modes bind it: as root (as CI runs), with the capabilities that let root read
    any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped from its bounding set, which an exec cannot
    regain; as anyone else, as it is."""
    if os.geteuid() != 0:
        return cmd
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed to test unreadable files as root"
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", *cmd]


def test_unreadable_file(spec, tmp_path):
    """An input the user may not read: alone, one error line naming it (exit 2); beside a readable one, skipped
    with its reason and listed, the other triaged. Run where root's override cannot read it (see above)."""
    f = write(tmp_path / "logs" / "d.jsonl", fin("2026-08-30T10:00:00", "a", 700000) + "\n")
    write(tmp_path / "logs" / "e.jsonl", fin("2026-08-30T10:00:00", "b", 700000) + "\n")
    f.chmod(0)
    kvir_cmd = [sys.executable, "-m", "kvir.cli.app", "triage", "-i", str(spec()), "--source-tz", CHI, "-q", "--json"]
    alone = subprocess.run(without_file_permission_override([*kvir_cmd, "-o", str(tmp_path / "c1"), str(f)]),
                           capture_output=True, text=True, timeout=300)
    assert alone.returncode == 2, alone.stderr
    assert alone.stderr.count("\n") == 1 and "no readable input" in alone.stderr and "unreadable" in alone.stderr
    assert str(f) in alone.stderr
    both = subprocess.run(without_file_permission_override([*kvir_cmd, "-o", str(tmp_path / "c2"), str(tmp_path / "logs")]),
                          capture_output=True, text=True, timeout=300)
    assert both.returncode == 0, both.stderr
    summary = json.loads(both.stdout)["summary"]
    assert summary["affected"] == 1 and summary["inputs_skipped"] == 1
    assert "d.jsonl,unreadable: Permission denied" in (tmp_path / "c2" / "skipped.csv").read_text()


def test_empty_special_and_broken_files_in_a_folder_are_skipped_and_listed(spec, tmp_path):
    logs = tmp_path / "logs"
    write(logs / "decode-0.jsonl", fin("2026-08-30T10:00:00", "s1", 700000) + "\n")
    write(logs / "decode-1.jsonl", "")                                  # empty
    os.mkfifo(logs / "pipe.jsonl")                                      # a FIFO: reading it would block forever
    (logs / "null.jsonl").symlink_to("/dev/null")                       # a link to a device
    (logs / "gone.jsonl").symlink_to(logs / "no-such-file")              # a broken link
    write(logs / "fake.jsonl.gz", b"\x1f\x8bnot gzip at all")           # gzip magic over other bytes
    r = kvir.triage(spec(), [logs], out=tmp_path / "c", source_tz=CHI)
    assert ids(r.affected) == {"s1"} and len(r.sources) == 1
    assert r.summary["inputs_skipped"] == 5
    skipped = dict(r.case.con.execute("SELECT regexp_extract(path, '[^/]+$'), reason FROM skipped_inputs").fetchall())
    assert skipped == {"decode-1.jsonl": "empty file (0 bytes)", "pipe.jsonl": "named pipe (FIFO): not read",
                       "null.jsonl": "character device: not read", "gone.jsonl": "broken symbolic link",
                       "fake.jsonl.gz": skipped["fake.jsonl.gz"]}
    assert skipped["fake.jsonl.gz"].startswith("cannot decompress (gzip)")
    csv = (tmp_path / "c" / "skipped.csv").read_text().splitlines()
    assert len(csv) == 6 and csv[0] == "path,reason,size_bytes"
    # only skipped inputs: an error naming them, not an empty case
    with pytest.raises(InputError, match="no readable input .*empty file"):
        kvir.triage(spec(), [logs / "decode-1.jsonl"], out=tmp_path / "c2", source_tz=CHI)


def test_compressed_inputs_and_a_truncated_one(spec, tmp_path):
    body = (fin("2026-08-30T10:00:00", "z1", 700000) + "\n" + fin("2026-08-30T10:00:01", "z2", 5) + "\n").encode()
    write(tmp_path / "logs" / "decode-0.jsonl.gz", gzip.compress(body))
    import zstandard

    write(tmp_path / "logs" / "decode-1.jsonl.zst", zstandard.ZstdCompressor().compress(
        (fin("2026-08-30T10:00:02", "z3", 700001) + "\n").encode()))
    r = kvir.triage(spec(), [tmp_path / "logs"], out=tmp_path / "c", source_tz=CHI)
    assert ids(r.affected) == {"z1", "z3"}
    assert {s["format"] for s in r.sources} == {"sglang-json"}
    broken = write(tmp_path / "bad" / "decode-2.jsonl.gz", gzip.compress(body)[:-12])
    with pytest.raises(InputError) as e:
        kvir.triage(spec(), [broken], out=tmp_path / "c2", source_tz=CHI)
    assert "decode-2.jsonl.gz" in str(e.value)


def test_huge_lines_bad_utf8_and_out_of_range_times_are_counted(spec, tmp_path):
    lines = [
        fin("2026-08-30T10:00:00", "ok", 700000),
        '{"timestamp": "2026-08-30T10:00:01", "pad": "' + "x" * (17 << 20) + '"}',   # > 16 MiB line
        fin("2026-08-30T10:00:02", "utf", 700000).replace('"stream": true', '"stream": true, "note": "caf\xe9"'),
        fin("1989-06-01T00:00:00", "old", 700000),
        fin("2101-01-01T00:00:00", "future", 700000),
    ]
    raw = "\n".join(lines).encode("utf-8")
    raw = raw.replace("caf\xe9".encode("utf-8"), b"caf\xff\xfe")                        # invalid UTF-8
    f = write(tmp_path / "d.jsonl", raw + b"\n")
    r = kvir.triage(spec(), [f], out=tmp_path / "c", source_tz=CHI)
    s = r.sources[0]
    assert (s["read"], s["parsed"] + s["quarantined"]) == (5, 5)
    assert ids(r.affected) == {"ok", "utf"}                 # a repaired byte does not lose the record
    reasons = sorted(r.quarantine["reason"])
    assert any("longer than" in x for x in reasons)
    assert sum("outside 1990-2100" in x for x in reasons) == 2


def test_max_bad_lines_fails_but_keeps_the_case(spec, tmp_path):
    # truncated request-log records (a line that is no JSON at all is another server line: counted, skipped)
    f = write(tmp_path / "d.jsonl", fin("2026-08-30T10:00:00", "a", 700000) + '\n{"not json\n{"not json either\n')
    with pytest.raises(TooManyBadLines, match="2 records quarantined"):
        kvir.triage(spec(), [f], out=tmp_path / "c", source_tz=CHI, max_bad_lines=1)
    assert (tmp_path / "c" / "quarantine.csv").read_text().count("not json") == 0   # raw text only with --keep-raw
    assert (tmp_path / "c" / "manifest.json").exists()
    r = kvir.triage(spec(), [f], out=tmp_path / "c", source_tz=CHI, max_bad_lines=2)
    assert len(r.affected) == 1


def test_keep_raw_keeps_the_quarantined_text_only_on_request(spec, tmp_path):
    f = write(tmp_path / "d.jsonl", '{"secret prompt text that broke the line\n')
    kvir.triage(spec(), [f], out=tmp_path / "c", source_tz=CHI, format="sglang-json")
    assert "secret prompt" not in (tmp_path / "c" / "quarantine.csv").read_text()
    kvir.triage(spec(), [f], out=tmp_path / "c2", source_tz=CHI, format="sglang-json", keep_raw=True)
    assert "secret prompt" in (tmp_path / "c2" / "quarantine.csv").read_text()


def test_naive_timestamps_in_a_generic_source_need_a_zone(spec, tmp_path):
    write(tmp_path / "x.csv", "id,t,m,n\na,2026-08-30 10:00:00,zai-org/GLM-5.3,700000\n")
    extra = ('\n[[sources]]\npath = "x.csv"\nformat = "generic-csv"\n[sources.columns]\nrequest_id = "id"\n'
             'ts = "t"\nmodel = "m"\nprompt_tokens = "n"\n')
    with pytest.raises(InputError) as e:
        kvir.triage(spec(extra=extra), out=tmp_path / "c")
    assert "x.csv:2" in str(e.value) and "source time zone" in str(e.value)
    r = kvir.triage(spec(extra=extra), out=tmp_path / "c", source_tz="UTC")
    assert ids(r.affected) == set() and r.summary["undecidable"] == 1   # no status: outcome unknown


def test_max_line_bytes_quarantines_longer_records_and_reads_on(spec, tmp_path):
    long = fin("2026-08-30T10:00:01", "long", 700000).replace('"stream": true', '"stream": true, "pad": "' + "x" * 1500 + '"')
    f = write(tmp_path / "d.jsonl", "\n".join([fin("2026-08-30T10:00:00", "short", 700000), long,
                                                fin("2026-08-30T10:00:02", "after", 700000)]) + "\n")
    assert 1024 < len(long.encode()) < 16 << 20
    r = kvir.triage(spec(), [f], out=tmp_path / "c", source_tz=CHI, max_line_bytes=1024)
    assert ids(r.affected) == {"short", "after"}
    assert list(r.quarantine["reason"]) == ["line longer than 1024 bytes"]
    assert kvir.triage(spec(), [f], out=tmp_path / "c2", source_tz=CHI).summary["affected"] == 3
    with pytest.raises(InputError, match="--max-line-bytes must be at least 1024"):
        kvir.triage(spec(), [f], out=tmp_path / "c3", source_tz=CHI, max_line_bytes=10)
