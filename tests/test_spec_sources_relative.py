"""[[sources]] paths are relative to the spec, however the spec was named (issue 36 item 4).

`kvir triage -i incident.toml` from the spec's own folder (as the README shows it) names the spec by a bare
file name, whose folder is `.`: a glob such as `*.csv` must match there, and a file given on the command line
must get its [[sources]] settings, exactly as with an absolute `-i`."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import kvir
from kvir.core.errors import InputError
from kvir.ingest.inputs import glob_under

from .conftest import spec_text, write

UTC = dt.timezone.utc

# a gateway export with its own column names: without the [[sources]] mapping it cannot be read at all, and
# its naive times are Chicago time (CDT, UTC-5 in September): 10:00 local is 15:00 UTC
CSV = "rid,started,who,n_prompt,code\ng1,2026-09-01 10:00:00,acct-1,681281,200\ng2,2026-09-01 10:00:05,acct-2,900,200\n"
SOURCES = '''
[[sources]]
path = "*.csv"
format = "generic-csv"
source_tz = "America/Chicago"
node = "edge-7"
[sources.columns]
request_id = "rid"
ts = "started"
account_id = "who"
prompt_tokens = "n_prompt"
http_status = "code"
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    spec = spec_text("public", SOURCES)
    write(tmp_path / "incident.toml", spec)
    write(tmp_path / "gateway.csv", CSV)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(r) -> None:
    src = r.sources[0]
    assert (src["format"], src["chosen_by"], src["source_tz"], src["node"]) == \
        ("generic-csv", "given: [[sources]] format", "America/Chicago", "edge-7")
    assert (src["read"], src["requests"], src["quarantined"]) == (2, 2, 0)     # 2 rows (the header is no record)
    row = r.case.con.execute("SELECT ts, account_id FROM requests WHERE request_id = 'g1'").fetchone()
    assert row == (dt.datetime(2026, 9, 1, 15, 0, tzinfo=UTC), "acct-1")


def test_a_glob_source_matches_when_the_spec_is_named_from_its_own_folder(folder):
    # served_model: the export names no model
    r = kvir.triage(Path("incident.toml"), [], out=Path("case"), served_model="zai-org/GLM-5.3", hash="none")
    _check(r)
    assert set(r.affected["request_id"]) == {"g1"}


def test_a_file_on_the_command_line_gets_its_sources_settings(folder):
    r = kvir.triage(Path("incident.toml"), [Path("gateway.csv")], out=Path("case"), served_model="zai-org/GLM-5.3",
                    hash="none")
    _check(r)


def test_a_relative_spec_in_a_subfolder_and_an_absolute_one_agree(folder, monkeypatch):
    monkeypatch.chdir(folder.parent)
    r = kvir.triage(Path(folder.name) / "incident.toml", [], out=folder / "case2", served_model="zai-org/GLM-5.3",
                    hash="none")
    _check(r)
    r = kvir.triage(folder / "incident.toml", [], out=folder / "case3", served_model="zai-org/GLM-5.3", hash="none")
    _check(r)


def test_glob_under_the_current_folder(folder):
    write(folder / "logs[2026]" / "a1.jsonl", "{}\n")
    assert sorted(Path(h) for h in glob_under(Path("."), "*.csv")) == [Path("gateway.csv")]
    assert sorted(Path(h) for h in glob_under(Path(""), "*.csv")) == [Path("gateway.csv")]
    # a folder that exists as written is literal, brackets and all; the rest is the pattern
    assert [Path(h) for h in glob_under(Path("."), "logs[2026]/a*.jsonl")] == [Path("logs[2026]/a1.jsonl")]
    assert glob_under(Path("."), "nothing-*.csv") == []


def test_a_glob_that_matches_nothing_still_names_itself(folder):
    (folder / "gateway.csv").unlink()
    with pytest.raises(InputError, match="glob matches no files"):
        kvir.triage(Path("incident.toml"), [], out=Path("case"), hash="none")


def test_the_recorded_spec_is_found_from_another_folder(folder, monkeypatch):
    """A case made with `-i incident.toml` and reported on from elsewhere reads the same spec (the case's copy of
    its hand events gone, as in a case from before they were stored)."""
    from kvir.case.spec_tables import SPEC_FACT_TABLES, ensure_spec_facts
    from kvir.case.store import Case

    write(folder / "incident.toml", spec_text("public", SOURCES + '\n[[events]]\nts = 2026-09-09T13:22:00Z\n'
                                                                  'title = "incident declared"\n'))
    kvir.triage(Path("incident.toml"), [], out=Path("case"), served_model="zai-org/GLM-5.3", hash="none").case.close()
    case = Case.open(folder / "case")
    for t in SPEC_FACT_TABLES:
        case.con.execute(f"DROP TABLE IF EXISTS {t}")
    monkeypatch.chdir(folder.parent)
    assert ensure_spec_facts(case) == []
    assert case.con.execute("SELECT count(*) FROM hand_events").fetchone()[0] == 1
    case.close()
