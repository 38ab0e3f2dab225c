"""Model identity on LiteLLM's own spend-log rows (tests/fixtures/foreign/litellm-1.110.2: two model groups of a
hosted_vllm deployment; the group "llama-long" is served by the deployment `hosted_vllm/acme/Llama-4-Long`, the
group "acme/Llama-4-Long-Canary" by `hosted_vllm/acme/llama-4-long-canary`): an alias of either name finds
a row, affected.csv says which name matched, a near-spelling finds nothing and triage names what the logs
carry; and the customer's LiteLLM-only investigation renders true documents."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kvir
from kvir.cli.app import app
from kvir.report import report

from .facts import documents, reference_leaks, unowned

ROWS = Path(__file__).resolve().parents[1] / "fixtures" / "foreign" / "litellm-1.110.2"
DAY = "2026-12-03"
# the rows (meta.json "calls"), worked by hand: served prompts over the pool of 200 in each group
GROUP_OVER_200 = {"llama-long": [205, 220, 250], "acme/Llama-4-Long-Canary": [210]}


def _spec(tmp: Path, models: list[str]) -> Path:
    p = tmp / "incident.toml"
    p.write_text(f'''[incident]
id = "CUST-42"
title = "Our requests to the hosted long-context model"
models = {json.dumps(models)}
window_start = {DAY}T10:00:00Z
window_end = {DAY}T11:00:00Z
[trigger]
pool_tokens = 200
context_tokens = 256
''')
    return p


def _triage(tmp: Path, models: list[str]):
    rows = tmp / "SpendLogs.json"
    shutil.copy(ROWS / "SpendLogs.json", rows)
    return kvir.triage(_spec(tmp, models), [rows], out=tmp / "case")


@pytest.mark.parametrize("alias, matched", [
    ("llama-long", "llama-long"),                                  # the model group clients ask for
    ("acme/Llama-4-Long", "acme/Llama-4-Long"),                    # the deployment, provider prefix stripped
    ("hosted_vllm/acme/Llama-4-Long", "acme/Llama-4-Long"),        # the deployment as LiteLLM's config writes it
])
def test_group_or_deployment_alias_finds_the_same_rows(tmp_path, alias, matched):
    r = _triage(tmp_path, [alias])
    aff = r.affected
    assert sorted(aff["prompt_tokens"]) == GROUP_OVER_200["llama-long"]
    assert set(aff["matched_name"]) == {matched}
    assert set(aff["account_id"]) == {"cust-river", "cust-delta", "cust-lake"}
    with open(r.path / "affected.csv") as f:
        assert {row["matched_name"] for row in csv.DictReader(f)} == {matched}
    assert r.summary["models_seen"]["note"] == ""


def test_a_row_whose_deployment_is_the_alias_but_its_group_is_not(tmp_path):
    r = _triage(tmp_path, ["acme/llama-4-long-canary"])
    assert list(r.affected["prompt_tokens"]) == GROUP_OVER_200["acme/Llama-4-Long-Canary"]
    assert list(r.affected["model"]) == ["acme/Llama-4-Long-Canary"]                 # its group ...
    assert list(r.affected["matched_name"]) == ["acme/llama-4-long-canary"]          # ... matched by its deployment


def test_a_case_variant_matches_nothing_and_triage_names_what_the_logs_carry(tmp_path):
    r = _triage(tmp_path, ["acme/llama-4-long"])
    assert r.summary["affected"] == 0
    seen = r.summary["models_seen"]
    assert seen["matched_requests"] == 0
    assert seen["note"].startswith("the incident's models (acme/llama-4-long) match none of the 16 requests in the window")
    assert seen["names"][0]["name"] == "acme/Llama-4-Long"          # the case variant first, with its count
    assert "acme/Llama-4-Long (6 requests)" in seen["note"]


def test_a_small_share_beside_near_spellings_is_said(tmp_path):
    r = _triage(tmp_path, ["acme/Llama-4-Long-Canary"])
    note = r.summary["models_seen"]["note"]
    assert note.startswith("the incident's models match 2 requests, while near-spellings match")
    assert "acme/Llama-4-Long (6 requests" in note and "add them to [incident] models" in note


def test_the_no_match_message_on_stderr_and_list_models(tmp_path):
    rows = tmp_path / "SpendLogs.json"
    shutil.copy(ROWS / "SpendLogs.json", rows)
    spec = _spec(tmp_path, ["acme/llama-4-long"])
    res = CliRunner().invoke(app, ["triage", "-i", str(spec), "-o", str(tmp_path / "case"), str(rows)])
    assert res.exit_code == 0, res.output
    assert "warning: models: the incident's models (acme/llama-4-long) match none" in res.stderr
    res = CliRunner().invoke(app, ["triage", "--list-models", str(rows)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["requests", "model"]
    assert [ln.split()[-1] for ln in lines[1:]] == ["acme/Llama-4-Long", "llama-long", "acme/Llama-4-Long-Canary",
                                                   "acme/llama-4-long-canary"]
    assert not (tmp_path / "case-list").exists()


def test_litellm_only_customer_investigation_documents(tmp_path):
    r = _triage(tmp_path, ["llama-long"])
    r.case.close()
    result = report(tmp_path / "case")
    m = result.model
    assert m.counts.affected == 3 and m.facts.engine == "unknown" and m.defect is None
    assert m.replay is None and "replay not run" in (result.out_dir / "public_report.md").read_text()
    docs = documents(result.out_dir)
    assert reference_leaks(docs) == []
    assert unowned(docs, {DAY, m.generated_at.date().isoformat()}, {kvir.__version__}) == []
    pub = (result.out_dir / "public_report.md").read_text()
    assert "The serving engine has not been identified." in pub
    assert "has not been established yet" in pub
