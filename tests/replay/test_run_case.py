"""replay_case end to end on a case built by kvir.triage and kvir.audit over hand-written logs, and the CLI.

Logs (UTC, 2026-08-28): a Cloudflare gateway log naming accounts, SGLang JSON request logs of prefill node
glm-prefill-0 and decode nodes glm-decode-0/1 (PD pairs share a bootstrap_room), and their start-up logs:
prefill pool 640 (limit min(4095, 639) - 5 = 634), decode pools 1024, context 4096, page 16.

    h1  10:00:00-10:00:30  acct-h1  prompt 500, 20 outputs   decode-0
    h2  10:01:00-10:01:30  acct-h2  prompt 400, 10 outputs   decode-0
    v   10:02:00-10:02:20  acct-v   prompt 700, 12 outputs   decode-0  affected (placeholder on prefill)
    g   10:03:00           acct-g   prompt 800 (gateway only)          affected, no decode node
    f   10:04:00-10:04:10  acct-f   prompt 900, 5 outputs    decode-1  affected, nothing before it on decode-1

The start-up logs are 0.5.19's own dump (tests/audit/grammar.py), so the audit places every node on 0.5.19,
whose code transfers the stub: that is each response's production build (build_role incident); the first
fixed build (0.5.20: retired after its forward, HTTP 400) is compared.

By hand, with SGLang's PD allocator on both nodes and Mooncake moving whole pages:
  prefill (the replay models it with context-sized storage of min(640, 4096) = 640 tokens = 40 pages):
    h1 takes pages 1..32, then parks them; h2 (25 pages, 8 fresh) merges and takes 1..25; the stub of v
    takes page 26, which h1 had written (its positions 400..415): slots 1..15 carry h1's positions 401..415.
  decode-0: h1 holds pages 1..33 (positions 0..518), h2 pages 34..59; at v's arrival only 5 pages are
    fresh, so the released pages are merged and sorted and v gets pages 1..44.
  v's positions: 0 its own stub; 1..15 h1's prompt positions 401..415 (carried from the prefill node);
    16..518 h1's positions 16..518; 519..527 never written; 528..699 h2's positions 0..171.
  So h1: 15 + 503 = 518 slots, positions 16..518 (the carried 401..415 lie inside); h2: 172, 0..171;
  9 never written. Decode steps 1..11 read slots 1..11: h1's prompt tokens 401..411.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from .helpers import expected_tokens, sglang_finished, write

SPEC = """\
[incident]
id = "KVIR-TEST-REPLAY"
title = "replay end to end"
models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]
window_start = 2026-08-27T00:00:00Z
window_end = 2026-09-09T19:40:00Z
[trigger]
pool_tokens = 640
context_tokens = 4096
rule = "public"

[[sources]]
path = "gateway/*.jsonl"
format = "cloudflare-gateway"

[[sources]]
path = "engine/*/requests.jsonl"
format = "sglang-json"
source_tz = "UTC"
served_model = "zai-org/GLM-5.3"
"""

# rid, start (minute:second after 10:00), latency s, prompt, outputs, account, decode node, room
REQUESTS = [
    ("h1", "00:00", 30, 500, 20, "acct-h1", "glm-decode-0", 101),
    ("h2", "01:00", 30, 400, 10, "acct-h2", "glm-decode-0", 102),
    ("v", "02:00", 20, 700, 12, "acct-v", "glm-decode-0", 103),
    ("f", "04:00", 10, 900, 5, "acct-f", "glm-decode-1", 105),
]


def _startup(node: str, mode: str, pool: int) -> str:
    from ..audit.grammar import startup

    return "\n".join(startup("0.5.19", "2026-08-27 00:00:00", mode=mode, context=4096, pool=pool, page_size=16)) + "\n"


def _at(ms: str, plus: float = 0.0) -> str:
    m, s = ms.split(":")
    total = int(m) * 60 + int(s) + plus
    return f"2026-08-28T10:{int(total // 60):02d}:{total % 60:06.3f}"


def build_logs(root: Path) -> Path:
    gw, pre, dec = [], [], {"glm-decode-0": [], "glm-decode-1": []}
    for rid, start, lat, prompt, outs, acct, node, room in REQUESTS + [("g", "03:00", 5, 800, 7, "acct-g", None, None)]:
        gw.append(json.dumps({"id": rid, "created_at": _at(start) + "Z", "model": "@cf/zai-org/glm-5.3",
                              "provider": "workers-ai", "status_code": 200, "success": True, "tokens_in": prompt,
                              "tokens_out": outs, "duration": lat * 1000, "cached": False,
                              "metadata": json.dumps({"customer_id": acct})}))
        if node is None:
            continue
        placeholder = prompt >= 634
        pre.append(sglang_finished(_at(start, 0.5), f"p-{rid}", 1 if placeholder else prompt, latency=0.4,
                                   room=room, completion=0 if placeholder else 1))
        dec[node].append(sglang_finished(_at(start, lat), rid, prompt, latency=lat, room=room, completion=outs))
    write(root / "gateway" / "logs.jsonl", "\n".join(gw) + "\n")
    write(root / "engine" / "glm-prefill-0" / "requests.jsonl", "\n".join(pre) + "\n")
    for node, lines in dec.items():
        write(root / "engine" / node / "requests.jsonl", "\n".join(lines) + "\n")
    write(root / "engine" / "glm-prefill-0" / "server.log", _startup("glm-prefill-0", "prefill", 640))
    write(root / "engine" / "glm-decode-0" / "server.log", _startup("glm-decode-0", "decode", 1024))
    write(root / "engine" / "glm-decode-1" / "server.log", _startup("glm-decode-1", "decode", 1024))
    write(root / "incident.toml", SPEC)
    return root


def make_case(root: Path) -> Path:
    """triage + audit over the hand-written logs; returns the case folder (closed)."""
    import kvir
    import kvir.audit

    build_logs(root)
    tri = kvir.triage(root / "incident.toml", out=root / "case")
    assert tri.summary["affected"] == 3
    tri.case.close()
    kvir.audit.audit(sorted(root.glob("engine/*/server.log")), case=root / "case", source_tz="UTC")
    return root / "case"


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory) -> Path:
    return make_case(tmp_path_factory.mktemp("replay_case"))


@pytest.fixture(scope="module")
def run(case_dir):
    from kvir.replay import replay_case

    return replay_case(case_dir)


def by_id(df, rid):
    return df[df.request_id == rid].iloc[0]


def rows_of(df, rid):
    return {r.build: r for r in df[df.request_id == rid].itertuples(index=False)}


def test_verdicts_statuses_and_reasons(run):
    r = run.results
    assert sorted(set(r.request_id)) == ["f", "g", "v"]
    assert sorted(zip(r.request_id, r.build, r.build_role)) == [
        ("f", "sglang-0.5.19", "incident"), ("f", "sglang-0.5.20", "compared"),
        ("g", "sglang-0.5.19", "incident"), ("g", "sglang-0.5.20", "compared"),
        ("v", "sglang-0.5.19", "incident"), ("v", "sglang-0.5.20", "compared")]
    v = rows_of(r, "v")
    leak, fixed = v["sglang-0.5.19"], v["sglang-0.5.20"]
    assert (leak.verdict, leak.http_status, leak.stage, leak.prefill_tokens, leak.transferred_pages) == (
        "exposed", 200, "served", 1, 1)
    assert (fixed.verdict, fixed.http_status, fixed.stage, fixed.first_fixed) == (
        "rejected", 400, "prefill-retired-after-forward", True)
    assert leak.build_source.startswith("prefill node glm-prefill-0: build 0.5.19 (inferred from the start-up log")
    assert "sglang/srt/disaggregation/prefill.py" in leak.evidence
    g, f = rows_of(r, "g")["sglang-0.5.19"], rows_of(r, "f")["sglang-0.5.19"]
    assert g.verdict == "inconclusive" and "no decode node" in g.reason
    assert f.verdict == "inconclusive" and "no earlier request on decode node glm-decode-1" in f.reason
    assert run.summary["exposed"] == 1 and run.summary["inconclusive"] == 2
    assert run.summary["rejected_by_first_fixed"] == 1
    assert run.summary["builds"] == {"sglang-0.5.19": {"exposed": 1, "inconclusive": 2},
                                     "sglang-0.5.20": {"rejected": 1, "inconclusive": 2}}


def test_foreign_owners_match_the_hand_worked_placement(run):
    v = rows_of(run.results, "v")["sglang-0.5.19"]
    owners = [(o["request_id"], o["account_id"], o["tokens"], o["first_token"], o["last_token"]) for o in v.foreign_owners]
    assert owners == [("h1", "acct-h1", 518, 16, 518), ("h2", "acct-h2", 172, 0, 171)]
    assert v.foreign_owners[0]["attention_mass"] == pytest.approx(1.0, abs=1e-6)
    assert (v.leaked_tokens, v.carried_tokens, v.uninitialised_tokens, v.history_requests) == (690, 15, 9, 2)
    assert v.recalled_tokens == 11 and v.decode_steps == 11
    assert [c["request_id"] for c in v.causal] == ["h1", "h2"] and [c["changed_tokens"] for c in v.causal] == [11, 0]
    assert v.response_tokens is None or v.response_tokens is pd.NA    # never stored without show_text
    assert list(rows_of(run.results, "v")["sglang-0.5.20"].foreign_owners) == []


def test_exposure_table_whose_data_reached_whom(run):
    e = run.exposure.sort_values("source_request_id")
    assert e[["source_account_id", "source_request_id", "reader_request_id", "reader_account_id", "build",
              "tokens"]].values.tolist() == [
        ["acct-h1", "h1", "v", "acct-v", "sglang-0.5.19", 518], ["acct-h2", "h2", "v", "acct-v", "sglang-0.5.19", 172]]


def test_assumptions_limits_and_outputs_are_recorded(run, case_dir):
    v = rows_of(run.results, "v")["sglang-0.5.19"]
    assert v.assumptions.startswith("Page placement is modelled, not recovered")
    assert "Transfers move whole pages" in v.assumptions and "sglang-0.5.19, prefill node glm-prefill-0" in v.assumptions
    assert "node_configs" in v.limits_source and v.scale == 1.0 and v.device.startswith(("cpu", "cuda"))
    assert run.summary["limits_source"] == "node_configs"
    for name in ("replay_results.parquet", "replay_results.csv", "replay_exposure.csv"):
        assert (case_dir / name).exists()
    manifest = json.loads((case_dir / "manifest.json").read_text())
    assert manifest["replay"]["exposed"] == 1 and manifest["replay"]["compared"] == ["sglang-0.5.20"]
    ran = [q["query"] for q in manifest["queries"]]
    assert "queries/replay/targets.sql" in ran and "queries/replay/write_results.sql" in ran


def test_contract_columns(run, case_dir):
    import kvir

    with kvir.open_case(case_dir) as c:
        desc = {row[0]: row[1] for row in c.con.execute("DESCRIBE replay_results").fetchall()}
        exp = {row[0]: row[1] for row in c.con.execute("DESCRIBE replay_exposure").fetchall()}
    for col, typ in {"request_id": "VARCHAR", "build": "VARCHAR", "build_role": "VARCHAR", "first_fixed": "BOOLEAN",
                     "account_id": "VARCHAR", "prefill_node": "VARCHAR", "decode_node": "VARCHAR",
                     "prompt_tokens": "BIGINT", "verdict": "VARCHAR", "http_status": "INTEGER", "stage": "VARCHAR",
                     "uninitialised_mass": "DOUBLE", "leaked_tokens": "BIGINT", "scale": "DOUBLE",
                     "assumptions": "VARCHAR", "device": "VARCHAR", "seed": "BIGINT"}.items():
        assert desc[col] == typ, col
    assert desc["foreign_owners"].startswith("STRUCT(request_id VARCHAR, account_id VARCHAR, tokens BIGINT, "
                                             "first_token BIGINT, last_token BIGINT, attention_mass DOUBLE)[]")
    assert list(exp) == ["source_account_id", "source_request_id", "reader_request_id", "reader_account_id",
                         "build", "tokens", "attention_mass"]


def test_builds_option_adds_the_door_build_and_kvirs_proposal(case_dir):
    from kvir.replay import replay_case

    run = replay_case(case_dir, builds=["incident", "0.5.21", "kvir-proposal"])
    v = rows_of(run.results, "v")
    assert {b: (x.build_role, x.http_status, x.stage) for b, x in v.items()} == {
        "sglang-0.5.19": ("incident", 200, "served"), "sglang-0.5.21": ("compared", 400, "prefill-door"),
        "kvir-proposal": ("proposal", 400, "bootstrap")}
    assert not any(x.first_fixed for x in v.values())
    replay_case(case_dir)                                                     # leave the default rows


def test_same_case_same_results(case_dir, run):
    from kvir.replay import replay_case

    again = replay_case(case_dir)
    a = run.results.drop(columns=[]).to_dict("records")
    b = again.results.to_dict("records")
    assert json.dumps(a, default=str, sort_keys=True) == json.dumps(b, default=str, sort_keys=True)
    assert again.exposure.equals(run.exposure)


def test_scaled_run_keeps_whose_data_and_the_verdicts(case_dir, run):
    """--scale shrinks the decode attention only (1 in 2 pages here): the hand-worked placement, the owners'
    counts, the recalled tokens and the causal check are the full-size run's."""
    from kvir.replay import replay_case

    half = replay_case(case_dir, scale=0.5, show_text=True)
    inc = half.results[half.results.build_role == "incident"]
    assert dict(zip(inc.request_id, inc.verdict)) == {"f": "inconclusive", "g": "inconclusive", "v": "exposed"}
    v = rows_of(half.results, "v")["sglang-0.5.19"]
    assert (v.scale, v.attribution_scale, v.replayed_prompt_tokens) == (0.5, 1.0, 700)
    assert "never scaled" in v.assumptions and "1 in 2 pages" in v.assumptions
    owners = [(o["request_id"], o["account_id"], o["tokens"], o["first_token"], o["last_token"]) for o in v.foreign_owners]
    assert owners == [("h1", "acct-h1", 518, 16, 518), ("h2", "acct-h2", 172, 0, 171)]
    assert (v.leaked_tokens, v.carried_tokens, v.uninitialised_tokens, v.history_requests) == (690, 15, 9, 2)
    assert list(v.response_tokens)[1:] == expected_tokens("h1", 401, 11) and v.recalled_tokens == 11
    assert [c["request_id"] for c in v.causal] == ["h1", "h2"] and [c["changed_tokens"] for c in v.causal] == [11, 0]
    cols = ["source_account_id", "source_request_id", "reader_request_id", "reader_account_id", "build", "tokens"]
    key = ["source_request_id"]
    assert half.exposure.sort_values(key)[cols].values.tolist() == run.exposure.sort_values(key)[cols].values.tolist()
    replay_case(case_dir)                                                     # leave the case as the fixture made it


def test_show_text_stores_the_response_tokens(case_dir):
    from kvir.replay import replay_case

    run = replay_case(case_dir, show_text=True, checksum=True, canary=True)
    v = rows_of(run.results, "v")["sglang-0.5.19"]
    assert list(v.response_tokens)[1:] == expected_tokens("h1", 401, 11)
    assert v.checksum == "not in this build"          # 0.5.11-0.5.19 have no --disaggregation-enable-kv-checksum
    assert v.canary.startswith("violation") and v.verdict == "exposed"      # log mode reports, never changes it
    replay_case(case_dir)                                                     # leave the case without text


@pytest.mark.slow   # three `kvir replay` processes (~30 s of CPU): .ci/run's slow step
def test_cli_prints_tables_not_text(tmp_path):
    case_dir = make_case(tmp_path)                         # its own case: the module's is open in this process
    cmd = [sys.executable, "-m", "kvir.cli.app", "replay", "--case", str(case_dir)]
    p = subprocess.run(cmd, capture_output=True, text=True, env={"COLUMNS": "200", **__import__("os").environ})
    assert p.returncode == 0, p.stderr
    assert "exposed" in p.stderr and "acct-h1" in p.stderr and p.stdout == ""
    hidden = [str(t) for t in expected_tokens("h1", 401, 11)]
    assert not any(t in p.stderr for t in hidden[:3])
    shown = subprocess.run(cmd + ["--show-text", "--json"], capture_output=True, text=True,
                           env={"COLUMNS": "200", **__import__("os").environ})
    assert shown.returncode == 0 and all(t in shown.stderr for t in hidden[:3])
    assert json.loads(shown.stdout)["exposed"] == 1
    bad = subprocess.run(cmd[:5] + [str(case_dir.parent / "nope")], capture_output=True, text=True)
    assert bad.returncode == 2 and "not a kvir case" in bad.stderr


def test_case_without_node_configs_states_its_assumptions(tmp_path):
    import kvir
    from kvir.replay import replay_case

    root = build_logs(tmp_path)
    kvir.triage(root / "incident.toml", out=root / "case").case.close()
    run = replay_case(root / "case")
    v = rows_of(run.results, "v")
    assert run.summary["limits_source"] == "incident"
    a = v["sglang-0.5.19"].assumptions
    assert "2 x context" in a and "page size 64" in a
    assert "no start-up evidence for prefill node glm-prefill-0: assumed sglang-0.5.19" in a
    assert (v["sglang-0.5.19"].http_status, v["sglang-0.5.20"].http_status) == (200, 400)


def test_a_one_token_response_never_attended_the_stale_slots():
    """A response whose only token came from the prefill side never ran a decode step: not exposed."""
    from kvir.replay.attribution import replay_target
    from kvir.replay.pd_rows import verdict
    from kvir.replay.policy import policy_for
    from kvir.replay.request import ReplayRequest

    from .helpers import small_engine

    e = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16)
    e.run(ReplayRequest("a", 600, 20, account="x", decode_steps=0))
    res = replay_target(e, ReplayRequest("one", 700, 1, account="y"), policy_for("0.5.19"), [policy_for("0.5.20")])
    assert res.main.owners and res.main.tokens == [0]
    v, reason = verdict(res.main, "")
    assert v == "not-reproduced" and "never attended" in reason
    assert verdict(res.outcomes["sglang-0.5.20"], "")[0] == "rejected"
