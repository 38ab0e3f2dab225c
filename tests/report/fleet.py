"""A small hand-written fleet for the report tests: Cloudflare AI Gateway pages plus SGLang JSON request
logs of two prefill and two decode nodes (host time UTC+2), an incident.toml with hand events and a
[disclosure] table, and hand-made audit and replay rows following the case contract.

Every expected value the tests check is written out here by hand (EXPECTED), not computed by kvir.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from kvir.sim import spec as reference

UTC = dt.timezone.utc
GW_MODEL = "@cf/zai-org/glm-5.3"
ENGINE_MODEL = "zai-org/GLM-5.3"
XSS = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("http://x.invalid")'

# id, start (UTC), account, prompt tokens, HTTP status, prefill node, decode node, model
REQUESTS = [
    ("r01", "2026-08-27T06:15:00Z", "acct_alpha", 700000, 200, "prefill-0", "decode-0", GW_MODEL),
    ("r02", "2026-08-29T11:00:00Z", "acct_alpha", 681281, 200, "prefill-1", "decode-0", GW_MODEL),
    ("r03", "2026-09-02T09:30:00Z", "acct_beta", 900000, 200, "prefill-0", "decode-1", GW_MODEL),
    ("r04", "2026-09-03T17:45:00Z", "acct_alpha", 1000000, 200, "prefill-1", "decode-1", GW_MODEL),
    ("r05", "2026-09-05T08:00:00Z", XSS, 750000, 200, "prefill-0", "decode-0", GW_MODEL),
    ("r06", "2026-09-06T12:00:00Z", FORMULA, 800000, 200, "prefill-1", "decode-1", GW_MODEL),
    ("r07", "2026-09-08T10:05:00Z", "acct_researcher", 720000, 200, "prefill-0", "decode-0", GW_MODEL),
    ("r08", "2026-09-08T10:20:00Z", "acct_researcher", 730000, 200, "prefill-1", "decode-1", GW_MODEL),
    ("r09", "2026-09-09T13:40:00Z", "acct_provider", 740000, 200, "prefill-0", "decode-0", GW_MODEL),
    ("r10", "2026-09-09T13:55:00Z", "acct_beta", 810000, 200, "prefill-1", "decode-0", GW_MODEL),
    # not affected
    ("r11", "2026-09-01T10:00:00Z", "acct_gamma", 5000, 200, None, None, GW_MODEL),
    ("r12", "2026-09-04T10:00:00Z", "acct_beta", 681280, 200, None, None, GW_MODEL),      # = pool: not >
    ("r13", "2026-09-07T10:00:00Z", "acct_gamma", 900000, 400, None, None, GW_MODEL),     # rejected
    ("r14", "2026-08-26T23:59:00Z", "acct_alpha", 900000, 200, None, None, GW_MODEL),     # before window
    ("r15", "2026-09-09T13:50:00Z", "acct_gamma", 3000, 200, None, None, GW_MODEL),
    ("r16", "2026-09-09T13:58:00Z", "acct_delta", 2000, 200, None, None, GW_MODEL),      # last before private
    ("r17", "2026-09-09T15:00:00Z", "acct_provider", 2000, 200, None, None, GW_MODEL),   # internal, while private
    ("r18", "2026-09-09T19:42:00Z", "acct_gamma", 4000, 200, None, None, GW_MODEL),      # first after public
    ("r19", "2026-09-09T20:30:00Z", "acct_delta", 4000, 200, None, None, GW_MODEL),
    ("r20", "2026-09-09T13:30:00Z", "acct_gamma", 900000, 200, None, None, "@cf/zai-org/glm-5.3-air"),
]

EXPECTED = {
    "affected": 10,
    "affected_by_account": {"acct_alpha": ["r01", "r02", "r04"], "acct_beta": ["r03", "r10"], XSS: ["r05"],
                            FORMULA: ["r06"], "acct_researcher": ["r07", "r08"], "acct_provider": ["r09"]},
    "customers": 4,               # affected accounts that are not labelled (alpha, beta, XSS, FORMULA)
    "labelled_affected": 3,       # researcher 2 + provider 1
    "first_affected": "2026-08-27T06:15:00Z",
    "last_affected": "2026-09-09T13:55:00Z",
    "rejected": 1,
    "private_seen": "2026-09-09T13:58:00Z",   # last non-internal request before the gap (r16)
    "public_seen": "2026-09-09T19:42:00Z",    # first non-internal request after it (r18)
    "prefill_fixed": {"prefill-0": "2026-09-09T14:40:00Z", "prefill-1": "2026-09-09T14:51:30Z"},
    "all_prefill_fixed": "2026-09-09T14:51:30Z",
    "deadline": "2026-09-12T13:22:00Z",
    "replay_sources": {"acct_gamma": ["r11"], "acct_alpha": ["r02"]},
}

INCIDENT_TOML = reference.header() + "\n" + reference.DEFECT + "\n" + '''\
[[accounts]]
id = "acct_researcher"
label = "reporting researcher"
reason = "bug-bounty reproduction, 2026-09-08"

[[accounts]]
id = "acct_provider"
label = "provider's own tests"
reason = "verification of the fix"

[[events]]
ts = 2026-08-27T06:00:00Z
title = "Exposure began (first affected response)"
actor = "provider"
category = "exposure"

[[events]]
ts = 2026-09-08T09:00:00Z
title = "Report received through the bug-bounty platform"
actor = "security researcher"
category = "detection"

[[events]]
ts = 2026-09-09T13:22:00Z
title = "Incident declared"
actor = "provider"
category = "escalation"
visibility = "public"

[[events]]
ts = 2026-09-09T14:00:00Z
title = "Model made private"
actor = "provider"
category = "mitigation"
visibility = "public"

[[events]]
ts = 2026-09-09T14:35:00Z
title = "Root cause found"
actor = "provider"
category = "confirmation"

[[events]]
ts = 2026-09-09T14:52:00Z
title = "All prefill nodes on the fixed config"
actor = "provider"
category = "mitigation"
visibility = "public"

[[events]]
ts = 2026-09-10T09:00:00Z
title = "@support sent the customer notices"
actor = "provider"
category = "notification"

[[events]]
ts = 2026-09-09T19:40:00Z
title = "Model public again"
actor = "provider"
category = "mitigation"
visibility = "public"

[[sources]]
path = "gateway/*.json"
format = "cloudflare-gateway"

[[sources]]
path = "engine/prefill-0/*.jsonl"
format = "sglang-json"
source_tz = "+02:00"
served_model = "zai-org/GLM-5.3"
node = "prefill-0"
role = "prefill"

[[sources]]
path = "engine/prefill-1/*.jsonl"
format = "sglang-json"
source_tz = "+02:00"
served_model = "zai-org/GLM-5.3"
node = "prefill-1"
role = "prefill"

[[sources]]
path = "engine/decode-0/*.jsonl"
format = "sglang-json"
source_tz = "+02:00"
served_model = "zai-org/GLM-5.3"
node = "decode-0"
role = "decode"

[[sources]]
path = "engine/decode-1/*.jsonl"
format = "sglang-json"
source_tz = "+02:00"
served_model = "zai-org/GLM-5.3"
node = "decode-1"
role = "decode"

[disclosure]
provider = "Example Inference Co."
provider_namespace = "https://inference.example.com"
contact = "security@inference.example.com"
dpo_contact = "dpo@inference.example.com"
reporter = "A. Researcher"
reporter_channel = "a bug-bounty platform"
reported_at = 2026-09-08T09:00:00Z
notified_at = 2026-09-13T10:00:00Z
delay_reason = "Scope of the affected accounts was confirmed by replay only on 2026-09-13."
lead_supervisory_authority = "Example Data Protection Authority"
csaf_base_url = "https://inference.example.com/.well-known/csaf/amber/"
cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"
published_at = 2026-10-26T09:00:00Z
'''


def _ts(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


def _local(t: dt.datetime) -> str:
    """Host-local naive ISO time (UTC+2), the way SGLang writes it."""
    return (t + dt.timedelta(hours=2)).replace(tzinfo=None).isoformat(timespec="microseconds")


def write_fleet(root: Path) -> Path:
    """Write the fleet under root; returns the incident.toml path."""
    (root / "gateway").mkdir(parents=True, exist_ok=True)
    result = []
    for rid, ts, acct, tokens, status, _p, _d, model in REQUESTS:
        result.append({"id": rid, "created_at": ts, "model": model, "provider": "workers-ai",
                       "status_code": status, "success": status == 200, "tokens_in": tokens,
                       "tokens_out": 0 if status != 200 else 120, "duration": 4000, "cached": False,
                       "metadata": json.dumps({"customer_id": acct})})
    page = {"result": result, "result_info": {"count": len(result), "page": 1, "per_page": 100,
                                              "total_count": len(result)}, "success": True, "errors": [], "messages": []}
    (root / "gateway" / "page-1.json").write_text(json.dumps(page, indent=1))
    lines: dict[str, list[str]] = {}
    for i, (rid, ts, _acct, tokens, _status, pnode, dnode, _m) in enumerate(REQUESTS):
        if pnode is None:
            continue
        start = _ts(ts)
        room = str(4455667788990000000 + i)
        dec = {"timestamp": _local(start + dt.timedelta(seconds=4)), "event": "request.finished", "rid": rid,
               "obj": {"rid": rid, "bootstrap_room": room},
               "out": {"meta_info": {"id": rid, "prompt_tokens": tokens, "completion_tokens": 120, "cached_tokens": 0,
                                     "e2e_latency": 4.0, "finish_reason": {"type": "stop"}}}}
        pre = {"timestamp": _local(start + dt.timedelta(seconds=1)), "event": "request.finished", "rid": "p" + rid,
               "obj": {"rid": "p" + rid, "bootstrap_room": room},
               "out": {"meta_info": {"id": "p" + rid, "prompt_tokens": 1, "completion_tokens": 0, "cached_tokens": 0,
                                     "e2e_latency": 1.0, "finish_reason": {"type": "length"}}}}
        lines.setdefault(dnode, []).append(json.dumps(dec))
        lines.setdefault(pnode, []).append(json.dumps(pre))
    for node, ls in lines.items():
        d = root / "engine" / node
        d.mkdir(parents=True, exist_ok=True)
        (d / "requests.jsonl").write_text("\n".join(ls) + "\n")
    spec = root / "incident.toml"
    spec.write_text(INCIDENT_TOML)
    return spec


# ------------------------------------------------------------------ audit and replay rows (contract)

NODE_CONFIGS = [
    # node, role, ts, version, pool, context, evidence line
    ("prefill-0", "prefill", "2026-08-20T08:00:00Z", "0.5.20", 681280, 1048576, 3),
    ("prefill-0", "prefill", "2026-09-09T14:40:00Z", "0.5.20", 2040000, 1048576, 410),
    ("prefill-1", "prefill", "2026-08-20T08:00:00Z", "0.5.20", 681280, 1048576, 3),
    ("prefill-1", "prefill", "2026-09-09T14:51:30Z", "0.5.20", 2040000, 1048576, 388),
    ("decode-0", "decode", "2026-08-20T08:00:00Z", "0.5.20", 3000000, 1048576, 3),
    ("decode-1", "decode", "2026-08-20T08:00:00Z", "0.5.20", 3000000, 1048576, 3),
]


def add_audit_rows(con) -> None:
    con.execute("""CREATE OR REPLACE TABLE node_configs (node VARCHAR, role VARCHAR, ts TIMESTAMPTZ, engine VARCHAR,
        version VARCHAR, pool_tokens BIGINT, context_len BIGINT, page_size INTEGER, max_req_input_len BIGINT,
        served_model VARCHAR, disaggregation_mode VARCHAR, kv_checksum BOOLEAN, kv_canary BOOLEAN,
        deferred_release BOOLEAN, transfer_batch_cap INTEGER, tp_size INTEGER, dp_size INTEGER,
        evidence_file VARCHAR, evidence_line BIGINT, name_source VARCHAR, version_source VARCHAR)""")
    for node, role, ts, ver, pool, ctx, line in NODE_CONFIGS:
        con.execute("INSERT INTO node_configs VALUES ($n, $r, $ts, 'sglang', $v, $p, $c, 1, $m, $model, $r, false, "
                    "false, false, NULL, 8, 1, $f, $l, 'inventory', 'startup-log')",
                    {"n": node, "r": role, "ts": _ts(ts), "v": ver, "p": pool, "c": ctx,
                     "m": min(ctx - 1, pool - 1) - 5, "model": ENGINE_MODEL,
                     "f": f"engine/{node}/server.log", "l": line})
    # the columns the audit derives per start (start order, holds_context, the build kvir placed)
    con.execute("""CREATE OR REPLACE TABLE node_configs AS SELECT *,
        row_number() OVER (ORDER BY node, ts) AS config_id,
        row_number() OVER (PARTITION BY node ORDER BY ts) AS start_index,
        pool_tokens >= context_len AS holds_context, false AS refused, version AS build,
        'version ' || version || ' from the start-up log' AS build_evidence,
        version < '0.5.20' AS stub_transferred FROM node_configs""")
    con.execute("""CREATE OR REPLACE TABLE findings (rule_id VARCHAR, severity VARCHAR, node VARCHAR, role VARCHAR,
        ts TIMESTAMPTZ, title VARCHAR, message VARCHAR, fix VARCHAR, evidence_file VARCHAR, evidence_line BIGINT)""")
    con.execute("INSERT INTO findings VALUES ('KVIR-A001', 'critical', 'prefill-0', 'prefill', $t, "
                "'KV pool smaller than the context length', 'pool 681280 < context 1048576', "
                "'raise the pool or lower --context-length', 'engine/prefill-0/server.log', 3)",
                {"t": _ts("2026-08-20T08:00:00Z")})
    con.execute("""CREATE OR REPLACE TABLE runtime_indicators (node VARCHAR, role VARCHAR, hour TIMESTAMPTZ,
        indicator VARCHAR, count BIGINT, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ, evidence_file VARCHAR,
        evidence_line BIGINT)""")
    con.execute("INSERT INTO runtime_indicators VALUES ('decode-0', 'decode', $h, 'kv_transfer_short', 2, $a, $b, "
                "'engine/decode-0/server.log', 120)",
                {"h": _ts("2026-08-27T06:00:00Z"), "a": _ts("2026-08-27T06:15:03Z"), "b": _ts("2026-08-27T06:40:00Z")})
    con.execute("INSERT INTO runtime_indicators VALUES ('decode-0', 'decode', $h, 'kv_transfer_short', 1, $a, $a, "
                "'engine/decode-0/server.log', 900)",
                {"h": _ts("2026-09-05T08:00:00Z"), "a": _ts("2026-09-05T08:00:03Z")})


def add_replay_rows(con) -> None:
    # one row per request and build (replay/results.py): the build the node ran, and the first fixed build
    con.execute("""CREATE OR REPLACE TABLE replay_results (request_id VARCHAR, build VARCHAR, build_role VARCHAR,
        first_fixed BOOLEAN, account_id VARCHAR, prefill_node VARCHAR, decode_node VARCHAR, prompt_tokens BIGINT,
        verdict VARCHAR, http_status INTEGER, stage VARCHAR,
        foreign_owners STRUCT(request_id VARCHAR, account_id VARCHAR, tokens BIGINT, first_token BIGINT,
                              last_token BIGINT, attention_mass DOUBLE)[],
        uninitialised_mass DOUBLE, leaked_tokens BIGINT, scale DOUBLE, assumptions VARCHAR, device VARCHAR, seed BIGINT)""")
    con.execute("""INSERT INTO replay_results VALUES
        ('r01', 'sglang-0.5.19', 'incident', false, 'acct_alpha', 'prefill-0', 'decode-0', 700000, 'exposed', 200, 'served',
         [{'request_id': 'r11', 'account_id': 'acct_gamma', 'tokens': 64, 'first_token': 0, 'last_token': 63, 'attention_mass': 0.4}],
         0.1, 64, 0.001, 'scaled 1:1000', 'cpu', 7),
        ('r01', 'sglang-0.5.20', 'compared', true, 'acct_alpha', 'prefill-0', 'decode-0', 700000, 'rejected', 400,
         'prefill-retired-after-forward', [], NULL, 0, 0.001, 'scaled 1:1000', 'cpu', 7),
        ('r03', 'sglang-0.5.19', 'incident', false, 'acct_beta', 'prefill-0', 'decode-1', 900000, 'exposed', 200, 'served',
         [{'request_id': 'r02', 'account_id': 'acct_alpha', 'tokens': 32, 'first_token': 0, 'last_token': 31, 'attention_mass': 0.2}],
         0.0, 32, 0.001, 'scaled 1:1000', 'cpu', 7),
        ('r03', 'sglang-0.5.20', 'compared', true, 'acct_beta', 'prefill-0', 'decode-1', 900000, 'rejected', 400,
         'prefill-retired-after-forward', [], NULL, 0, 0.001, 'scaled 1:1000', 'cpu', 7),
        ('r04', 'sglang-0.5.19', 'incident', false, 'acct_alpha', 'prefill-1', 'decode-1', 1000000, 'not-reproduced', 200,
         'served', [], 0.0, 0, 0.001, 'scaled 1:1000', 'cpu', 7),
        ('r04', 'sglang-0.5.20', 'compared', true, 'acct_alpha', 'prefill-1', 'decode-1', 1000000, 'rejected', 400,
         'prefill-retired-after-forward', [], NULL, 0, 0.001, 'scaled 1:1000', 'cpu', 7)""")
    con.execute("ALTER TABLE replay_results ADD COLUMN reason VARCHAR")   # set by the replay for inconclusive rows
    con.execute("""CREATE OR REPLACE TABLE replay_exposure (source_account_id VARCHAR, source_request_id VARCHAR,
        reader_request_id VARCHAR, reader_account_id VARCHAR, tokens BIGINT, attention_mass DOUBLE)""")
    con.execute("""INSERT INTO replay_exposure VALUES ('acct_gamma', 'r11', 'r01', 'acct_alpha', 64, 0.4),
        ('acct_alpha', 'r02', 'r03', 'acct_beta', 32, 0.2)""")
