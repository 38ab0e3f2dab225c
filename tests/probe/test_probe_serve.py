"""The probe against kvir serve: a leaking build is exposed (the canary found, its tenant named, the request
ids those of the server's own ledger), a fixed build is not (HTTP 400 at and above the limit).

Expected values are worked out by hand: pool 4096, context 8192 -> SGLang's max_req_input_len
min(8191, 4095) - 5 = 4090, so the boundary set is 4089, 4090, 4091, 4096 (the pool), 8191, 8192, 8193.
The leaking build (0.5.19) serves 4090, 4091 and 4096 with HTTP 200 (the stub path; 8191 is refused by the
decode side's own limit, 8192+ by the tokenizer's context check); the fixed build refuses all but 4089.
The key fingerprints are recomputed here from the keys (sha256), independently of the probe and the server.
"""
from __future__ import annotations

import hashlib
import json

import pytest

from .conftest import BOUNDARY, KEY_A, KEY_B, LIMIT

TENANT_A_SERVER = "key-" + hashlib.sha256(KEY_A.encode()).hexdigest()[:12]    # how kvir serve names the key
TENANT_B_SERVER = "key-" + hashlib.sha256(KEY_B.encode()).hexdigest()[:12]
FINGERPRINT_A = "sha256:" + hashlib.sha256(KEY_A.encode()).hexdigest()[:12]   # how the probe names it


def by_length(result) -> dict[int, dict]:
    return {i["sent_tokens"]: i for i in result.check("length").items}


def test_leaking_build_is_exposed_by_length(leaking_run):
    r = leaking_run["result"]
    assert (r.verdict, r.exit_code) == ("exposed", 1)
    items = by_length(r)
    assert sorted(items) == BOUNDARY and all(i["exact"] for i in items.values())
    assert {n: (i["http_status"], i["outcome"]) for n, i in items.items()} == {
        4089: (200, "ok"), 4090: (200, "exposed"), 4091: (200, "exposed"), 4096: (200, "exposed"),
        8191: (400, "ok"), 8192: (400, "ok"), 8193: (400, "ok")}
    assert items[4089]["prompt_tokens"] == 4089
    p001 = [f for f in r.findings if f.rule_id == "KVIR-P001"]
    assert sorted(f.evidence["sent_tokens"] for f in p001) == [4090, 4091, 4096]
    assert r.check("length").stats["reject_from"] == LIMIT


def test_leaking_build_canary_found_and_its_tenant_named(leaking_run, canaries_seen):
    r, records = leaking_run["result"], leaking_run["records"]
    c = r.check("canary")
    assert c.verdict == "exposed"
    hits = [f for f in c.findings if f.rule_id == "KVIR-P004"]
    assert hits
    planted = {"sha256:" + hashlib.sha256(x.encode()).hexdigest()[:16] for x in canaries_seen}
    ledger = {rec["rid"]: rec for rec in records}
    for f in hits:
        ev = f.evidence
        assert ev["planted_by"] == "tenant-a" and ev["planted_by_key"] == FINGERPRINT_A
        assert ev["received_by"] == "tenant-b" and ev["canary_sha256"] in planted
        assert 12 <= ev["fragment_chars"] <= 47
        # The server's own ledger: the response the probe names was tenant B's and read tenant A's KV slots;
        # the planting requests were tenant A's.
        rec = ledger[f.request_ids[0]]
        assert rec["tenant"] == TENANT_B_SERVER and rec["read_from"].get(TENANT_A_SERVER, 0) > 0
        assert rec["prefill_tokens"] == 1 and rec["prompt_tokens"] >= LIMIT
        assert all(ledger[i]["tenant"] == TENANT_A_SERVER for i in ev["planting_request_ids"] if i in ledger)
    assert {f.evidence["streamed"] for f in hits} == {False, True}      # found in streamed chunks too
    assert c.stats["planted"] == 4


def test_fixed_build_is_not_exposed(fixed_run):
    r, records = fixed_run["result"], fixed_run["records"]
    assert (r.verdict, r.exit_code) == ("not exposed", 0)
    items = by_length(r)
    assert {n: i["http_status"] for n, i in items.items()} == {4089: 200, 4090: 400, 4091: 400, 4096: 400,
                                                                8191: 400, 8192: 400, 8193: 400}
    assert items[4089]["prompt_tokens"] == 4089 and items[4089]["outcome"] == "ok"
    assert r.check("canary").verdict == "not exposed"
    assert r.check("canary").stats["planted"] == 4 and r.check("canary").stats["over_limit_sent"] == 12
    assert not [f for f in r.findings if f.severity in ("critical", "high")]
    assert not any(rec["read_from"] for rec in records)          # the server agrees: nobody read anybody


def test_nothing_of_a_canary_leaves_the_probe(leaking_run, fixed_run, canaries_seen):
    """JSON, SARIF and the case hold hashes only: no 12-character piece of any canary appears in them."""
    import duckdb

    r = leaking_run["result"]
    texts = [json.dumps(r.as_json()), json.dumps(r.to_sarif()), json.dumps(fixed_run["result"].as_json())]
    con = duckdb.connect(str(leaking_run["case"] / "case.duckdb"), read_only=True)
    for t in ("probe_runs", "probe_events", "probe_findings"):
        texts.append(json.dumps(con.execute(f"SELECT * FROM {t}").fetchall(), default=str))
    con.close()
    blob = "\n".join(texts)
    assert canaries_seen
    for c in canaries_seen:
        assert not any(c[i:i + 12] in blob for i in range(len(c) - 11))
    assert KEY_A not in blob and KEY_B not in blob


def test_case_holds_the_run(leaking_run):
    import duckdb

    r = leaking_run["result"]
    con = duckdb.connect(str(leaking_run["case"] / "case.duckdb"), read_only=True)
    assert con.execute("SELECT run_id, verdict, requests_sent FROM probe_runs").fetchall() == [(r.run_id, "exposed", r.sent)]
    assert con.execute("SELECT count(*) FROM probe_events").fetchone()[0] == len(r.requests)
    rules = dict(con.execute("SELECT rule_id, count(*) FROM probe_findings GROUP BY 1").fetchall())
    assert rules == {"KVIR-P001": 3, "KVIR-P004": len([f for f in r.findings if f.rule_id == "KVIR-P004"])}
    con.close()


@pytest.mark.parametrize("build", ["0.5.20", "0.5.23"])
def test_later_builds_refuse_and_are_not_exposed(build, keys):
    import kvir
    from kvir.serve import ServeConfig, ServerThread

    with ServerThread(ServeConfig(build=build, pool=4096, context=8192)) as srv:
        r = kvir.probe(srv.url, progress=False, checks=("length",), **keys)
    assert r.verdict == "not exposed"
    assert {n: i["http_status"] for n, i in by_length(r).items()}[LIMIT] == 400


def test_prefill_count_shows_the_placeholder(keys):
    """usage.prompt_tokens as the prefill side counts (1 for the stub): KVIR-P002 at exactly the served lengths."""
    import kvir
    from kvir.serve import ServeConfig, ServerThread

    with ServerThread(ServeConfig(build="leaking", pool=4096, context=8192, usage_from="prefill")) as srv:
        r = kvir.probe(srv.url, progress=False, checks=("length",), **keys)
    assert r.verdict == "exposed"
    assert sorted(f.evidence["sent_tokens"] for f in r.findings if f.rule_id == "KVIR-P002") == [4090, 4091, 4096]
