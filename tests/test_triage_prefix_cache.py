"""Triage for the prefix-cache mechanism on a small hand-built CSV (the rule's every branch; the real vLLM runs
are in tests/test_prefix_cache_e2e.py). Expected verdicts are worked out below, request by request."""
from __future__ import annotations

import kvir
from tests.conftest import write

SPEC = '''[incident]
id = "PC-T"
title = "prefix cache shared across tenants"
models = ["acme/tiny"]
window_start = 2026-11-01T10:00:00Z
window_end = 2026-11-01T11:00:00Z
mechanism = "prefix-cache"
engine = "vllm"
{extra}
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

# id, time, account, node, prompt tokens, cached tokens, status
ROWS = [
    ("r0", "09:00:00", "eps", "n2", 300, 0, 200),      # before the window: primes n2, never judged
    ("r1", "10:00:00", "acme", "n1", 1000, 0, 200),
    ("r2", "10:01:00", "beta", "n1", 900, 512, 200),   # only acme's r1 could have written 512 tokens: affected
    ("r3", "10:02:00", "acme", "n1", 1200, 512, 200),  # acme's r1 could, so could beta's r2: possibly
    ("r4", "10:03:00", "acme", "n1", 600, 256, 200),   # acme's r1 / r3, beta's r2: possibly
    ("r5", "10:04:00", "gamma", "n2", 500, 256, 200),  # on n2 only eps's r0 came before: affected (eps)
    ("r6", "10:05:00", "acme", "n1", 2000, 1024, 200),  # acme's r3 (1200) could; beta's 900 cannot: clean
    ("r7", "10:06:00", "beta", "n1", 700, "", 200),    # no cached count: cannot decide
    ("r8", "10:07:00", "delta", "n1", 100, 0, 200),    # no hit: clean
    ("r9", "10:08:00", "acme", "n1", 800, 512, 400),   # not served
    ("r10", "10:09:00", "", "n1", 700, 128, 200),      # a hit without an account: cannot decide
    ("r11", "10:10:00", "beta", "n3", 4000, 0, 200),   # another instance: a source for nobody on n1
]


def _case(tmp_path, extra=""):
    write(tmp_path / "incident.toml", SPEC.format(extra=extra))
    lines = ["id,ts,account,model,prompt,cached,status,node"]
    lines += [f"{i},2026-11-01T{t}Z,{a},acme/tiny,{p},{c},{s},{n}" for i, t, a, n, p, c, s in ROWS]
    write(tmp_path / "gw.csv", "\n".join(lines) + "\n")
    return kvir.triage(tmp_path / "incident.toml", [tmp_path / "gw.csv"], out=tmp_path / "case")


def _verdicts(r):
    a = r.affected
    return {rid: (v, list(s)) for rid, v, s in zip(a["request_id"], a["verdict"], a["source_tenants"])}


def test_prefix_cache_verdicts_sources_and_counts(tmp_path):
    r = _case(tmp_path)
    assert _verdicts(r) == {"r2": ("affected", ["acme"]), "r3": ("possibly affected", ["beta"]),
                            "r4": ("possibly affected", ["beta"]), "r5": ("affected", ["eps"])}
    a = r.affected.set_index("request_id")
    assert (a.loc["r2", "instance"], a.loc["r2", "tenant"], a.loc["r2", "cached_tokens"]) == ("n1", "beta", 512)
    s = r.summary
    assert (s["mechanism"], s["affected"], s["possibly_affected"], s["cannot_decide"]) == ("prefix-cache", 2, 2, 2)
    per = {(x["instance"], x["tenant"]): x for x in s["prefix_cache"]["by_instance_tenant"]}
    assert (per[("n1", "beta")]["affected"], per[("n1", "beta")]["cannot_decide"]) == (1, 1)
    assert (per[("n1", "acme")]["possibly_affected"], per[("n1", "acme")]["clean"], per[("n1", "acme")]["not_served"]) == (2, 2, 1)
    assert per[("n1", None)]["cannot_decide"] == 1
    assert ("n2", "eps") not in per                       # before the window: a source, not a judged request
    assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == {"acme": 2, "beta": 1, "gamma": 1}


def test_prefix_cache_lifetime_turns_old_sources_away(tmp_path):
    # 90 s: r3 no longer has acme's r1 (120 s before) but has beta's r2 (60 s): affected by beta; r4 has acme's r3
    # (60 s) and no other tenant within 90 s: clean; r5's only source (eps, an hour before) is too old: affected,
    # no candidate; r6: acme's r4 and r3 are 120 s and 180 s old: affected, no candidate
    r = _case(tmp_path, "\n[prefix_cache]\nlifetime_s = 90\n")
    assert _verdicts(r) == {"r2": ("affected", ["acme"]), "r3": ("affected", ["beta"]),
                            "r5": ("affected", []), "r6": ("affected", [])}


def test_prefix_cache_instances_limit_the_scope(tmp_path):
    r = _case(tmp_path, '\n[prefix_cache]\ninstances = ["n2"]\n')
    assert _verdicts(r) == {"r5": ("affected", ["eps"])}


def test_prefix_cache_affected_table_contract(tmp_path):
    """The columns the documents read (shared with the report side): the common ones, then the mechanism's."""
    r = _case(tmp_path)
    cols = dict(r.case.con.execute("SELECT column_name, column_type FROM (DESCRIBE affected)").fetchall())
    common = ["request_id", "ts", "ts_end", "account_id", "account_label", "model", "matched_name", "prompt_tokens",
              "completion_tokens", "http_status", "finish_reason", "prefill_node", "decode_node", "nodes",
              "source_format", "source_file", "source_line", "n_records", "conflict", "rule"]
    assert all(c in cols for c in common)
    assert (cols["cached_tokens"], cols["verdict"], cols["instance"], cols["tenant"], cols["source_tenants"]) == (
        "BIGINT", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]")


def test_replay_of_a_case_with_lengths_only_is_inconclusive_never_a_guess(tmp_path):
    from kvir.mechanisms.prefix_cache.replay_run import NO_TOKENS
    from kvir.replay.run import replay_case

    r = _case(tmp_path, "\n[prefix_cache]\nblock_tokens = 16\n")
    r.case.close()
    run = replay_case(tmp_path / "case")
    res = run.results
    assert set(res["request_id"]) == {"r2", "r3", "r4", "r5"} and len(res) == 8     # both keyings each
    assert set(res["verdict"]) == {"inconclusive"} and set(res["reason"]) == {NO_TOKENS}
    assert run.exposure.empty and res["foreign_owners"].map(len).sum() == 0
    assert (res["build_basis"].dropna() == "assumed").all()                 # no count could choose the keying


def test_replay_without_the_block_size_says_so(tmp_path):
    from kvir.replay.run import replay_case

    r = _case(tmp_path)
    r.case.close()
    res = replay_case(tmp_path / "case").results
    assert set(res["verdict"]) == {"inconclusive"}
    assert all("block_tokens" in why for why in res["reason"])


def test_litellm_rows_carry_cached_tokens_in_their_usage_object(tmp_path):
    """LiteLLM keeps the provider's usage in SpendLogs metadata.usage_object (spend_tracking_utils, 1.110.2). The
    real rows (tests/fixtures/litellm: a provider that reported no prompt_tokens_details) cannot decide; one row
    copied from them with the details a vLLM with --enable-prompt-tokens-details returns (edited here) is read."""
    import json
    from pathlib import Path

    src = Path(__file__).parent / "fixtures" / "litellm" / "LiteLLM_SpendLogs.ndjson"
    rows = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    hit = json.loads(json.dumps(rows[1]))
    hit.update(request_id="chatcmpl-edited-hit", startTime="2026-09-02T10:00:09.000", endTime="2026-09-02T10:00:09.500")
    hit["metadata"]["usage_object"]["prompt_tokens_details"] = {"cached_tokens": 512}
    write(tmp_path / "spend.ndjson", "\n".join(json.dumps(r) for r in rows + [hit]) + "\n")
    write(tmp_path / "incident.toml", '''[incident]
id = "PC-L"
title = "prefix cache behind a LiteLLM proxy"
models = ["zai-org/GLM-5.3"]
window_start = 2026-09-02T00:00:00Z
window_end = 2026-09-03T00:00:00Z
mechanism = "prefix-cache"
''')
    r = kvir.triage(tmp_path / "incident.toml", [tmp_path / "spend.ndjson"], out=tmp_path / "case")
    got = dict(r.case.con.execute("SELECT request_id, cached_tokens FROM requests").fetchall())
    assert got["chatcmpl-edited-hit"] == 512
    assert sum(v is None for v in got.values()) == len(rows)
    # cust_b's hit: cust_b's own earlier row (681,280 tokens) could have written 512 tokens, so could cust_a's
    assert _verdicts(r) == {"chatcmpl-edited-hit": ("possibly affected", ["cust_a", "u_internal"])}
    # cannot decide: cust_a, cust_b, u_internal and cust_d (whose mock deployment serves the same model name)
    assert r.summary["cannot_decide"] == 4 and r.summary["prefix_cache"]["formats_without_cached_tokens"] == ["litellm"]


def test_replay_reads_token_ids_from_vllms_own_debug_log(tmp_path):
    """vLLM's request log at DEBUG prints each prompt's token ids (`Request <id> details: ... prompt_token_ids:
    [...]`, request_logger.py since 0.11.1; the INFO lines never do): the replay reads them from the line, the
    case never holds them (tests/fixtures/vllm/0.32.0/multi-prompt.log, a real server at DEBUG)."""
    from pathlib import Path

    from kvir.mechanisms.prefix_cache.replay_run import _evidence

    log = Path(__file__).parent / "fixtures" / "vllm" / "0.32.0" / "multi-prompt.log"
    write(tmp_path / "incident.toml", '''[incident]
id = "PC-V"
title = "prefix cache on vLLM"
models = ["tiny-llama"]
window_start = 2026-12-03T00:00:00Z
window_end = 2026-12-04T00:00:00Z
mechanism = "prefix-cache"
''')
    r = kvir.triage(tmp_path / "incident.toml", [log], out=tmp_path / "case", source_tz="UTC")
    hist = r.case.df("SELECT request_id, account_id FROM requests WHERE request_id = 'cmpl-b77ca6b5fb16495f'")
    got = _evidence(r.case, hist, "cache_salt")["cmpl-b77ca6b5fb16495f"]
    assert (got.tokens, got.salt, got.tenant) == ([1, 75, 76], None, "(no account)")
    assert r.case.con.execute("SELECT count(*) FROM requests WHERE cached_tokens IS NOT NULL").fetchone()[0] == 0


def test_excluded_accounts_responses_are_listed_apart_with_their_verdict(tmp_path):
    r = _case(tmp_path, '\n[[accounts]]\nid = "acme"\nlabel = "provider tests"\nreason = "our own canaries"\nexclude = true\n')
    assert set(_verdicts(r)) == {"r2", "r5"}                   # acme's r3, r4 leave the affected set ...
    ex = r.case.df("SELECT request_id, verdict FROM excluded ORDER BY request_id")
    assert list(zip(ex["request_id"], ex["verdict"])) == [("r3", "possibly affected"), ("r4", "possibly affected")]
    assert r.summary["excluded"] == 2                          # ... and are counted apart, never dropped
