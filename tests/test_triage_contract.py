"""The triage contract every registered mechanism keeps (kvir.triage.plugin.TriagePart), as the format contract
test runs over every format: whatever its rule, a mechanism's triage leaves the case tables every report
reads with their columns in order and of one type, the headline counts, its typed part of summary.json,
its own exports, and queries that bind only what they use.

The case: one small CSV under each mechanism's own `kvir init` template. The expected columns are the
ones the documents and the exports read (written here by hand, not taken from the code)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import tomllib

import pytest

import kvir
from kvir.spec.mechanism import mechanism, mechanisms
from kvir.spec.model import AccountRule, parse_spec
from kvir.spec.template import template
from kvir.triage.plugin import Shown, triage_part
from kvir.triage.summary import COUNT_COLUMNS, TriageSummary
from tests.conftest import write

AFFECTED = ("request_id", "ts", "ts_end", "account_id", "account_label", "model", "matched_name", "prompt_tokens",
            "prefill_tokens", "completion_tokens", "http_status", "finish_reason", "prefill_node", "decode_node",
            "nodes", "source_format", "source_file", "source_line", "n_records", "conflict", "rule")
EXCLUDED = ("request_id", "ts", "account_id", "account_label", "reason", "model", "prompt_tokens", "http_status",
            "prefill_node", "decode_node", "source_file", "source_line")
MODEL = "acme/contract"
# id, time, account, prompt tokens, cached tokens: long prompts (over the template's 100,000-token pool) that
# were served from cached blocks no earlier request of their tenant wrote; acct-x is excluded by the spec
ROWS = [("c1", "10:00:00", "acct-a", 200000, 0), ("c2", "10:01:00", "acct-b", 200000, 150000),
        ("c3", "10:02:00", "acct-x", 200000, 150000)]
NAMES = [m.name for m in mechanisms()]


def _triage(name: str, tmp_path):
    utc = dt.timezone.utc
    spec = dataclasses.replace(parse_spec(tomllib.loads(template(name))), models=(MODEL,),
                               window_start=dt.datetime(2026, 1, 1, tzinfo=utc), window_end=dt.datetime(2026, 1, 2, tzinfo=utc),
                               accounts=(AccountRule("acct-x", "provider test", "our own test", exclude=True),))
    lines = ["request_id,ts,account_id,model,prompt_tokens,cached_tokens,http_status,prefill_node,decode_node"]
    lines += [f"{i},2026-01-01T{t}Z,{a},{MODEL},{p},{c},200,vllm-0,vllm-0" for i, t, a, p, c in ROWS]
    log = write(tmp_path / "requests.csv", "\n".join(lines) + "\n")
    return kvir.triage(spec, [log], out=tmp_path / "case", format="generic-csv")


@pytest.fixture(scope="module")
def triaged(tmp_path_factory):
    return {name: _triage(name, tmp_path_factory.mktemp(name)) for name in NAMES}


def _columns(r, table: str) -> list[tuple[str, str]]:
    return [(c[0], c[1]) for c in r.case.con.execute(f"DESCRIBE {table}").fetchall()]


@pytest.mark.parametrize("name", NAMES)
def test_affected_and_excluded_start_with_the_columns_every_report_reads(triaged, name):
    r = triaged[name]
    first = triaged[NAMES[0]]
    for table, expected in (("affected", AFFECTED), ("excluded", EXCLUDED)):
        cols = _columns(r, table)
        assert tuple(c for c, _ in cols[:len(expected)]) == expected, (name, table)
        # one type per column, whichever mechanism wrote it
        assert cols[:len(expected)] == _columns(first, table)[:len(expected)], (name, table)
    a = r.affected.set_index("request_id")
    assert set(a.index) == {"c2"} | ({"c1"} if name == "oversized-prompt" else set())   # the rules, by hand
    assert (a.loc["c2", "account_id"], a.loc["c2", "nodes"], a.loc["c2", "rule"]) == (
        "acct-b", "vllm-0 -> vllm-0", r.summary["rule"])
    ex = r.case.df("excluded")
    assert list(ex["request_id"]) == ["c3"] and list(ex["reason"]) == ["our own test"]   # listed apart, kept


@pytest.mark.parametrize("name", NAMES)
def test_the_headline_holds_every_count_the_documents_state(triaged, name):
    r = triaged[name]
    cols = r.case.columns("triage_summary")
    assert set(COUNT_COLUMNS) <= set(cols)
    counts = TriageSummary.from_row(r.summary)
    assert (counts.affected, counts.excluded, counts.requests_total, counts.in_scope) == (len(r.affected), 1, 3, 3)
    assert r.case.run("report/headline", fetch=True)[0][2] == counts.affected     # as the reports read it


@pytest.mark.parametrize("name", NAMES)
def test_the_mechanisms_part_of_the_summary_is_typed_and_under_its_folder(triaged, name):
    r, m = triaged[name], mechanism(name)
    assert dataclasses.is_dataclass(r.mechanism_summary)
    on_disk = json.loads((r.path / "summary.json").read_text())["summary"]
    assert on_disk[m.folder] == json.loads(json.dumps(dataclasses.asdict(r.mechanism_summary), default=str))
    assert on_disk["mechanism"] == name and not {o.folder for o in mechanisms() if o is not m} & set(on_disk)
    shown = triage_part(name).present(r.summary, r.mechanism_summary)
    assert isinstance(shown, Shown) and all(isinstance(label, str) for label, _ in shown.rows)
    for table in triage_part(name).exports:
        assert (r.path / f"{table}.csv").is_file() and f"{table}.csv" in r.outputs


@pytest.mark.parametrize("name", NAMES)
def test_the_mechanisms_queries_bind_only_what_its_rule_gives_them(triaged, name):
    """Every value the rule hands its queries is read by one of them (no placeholder values so that another
    mechanism's query accepts it), and the mechanism's own files are the ones that ran."""
    r, m = triaged[name], mechanism(name)
    ran = r.case.manifest["queries"]
    used = {p for q in ran for p in q["params"]}
    own = triage_part(name).rule(r.spec, _choice(r)).query_params()
    assert set(own) <= used, sorted(set(own) - used)
    mine = {q["query"] for q in ran if q["query"].startswith(f"queries/mechanisms/{m.folder}/")}
    assert f"queries/mechanisms/{m.folder}/triage/hits.sql" in mine or \
        f"queries/mechanisms/{m.folder}/triage/hits_pool_in_effect.sql" in mine
    assert not any(q["query"].startswith("queries/mechanisms/") and q["query"] not in mine for q in ran)


def _choice(r):
    from kvir.rules.engines import EngineChoice, ENGINES

    e = r.summary["serving_engine"]
    return EngineChoice(ENGINES[e["engine"]], e["source"])
