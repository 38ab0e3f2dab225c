"""What each fixture holds, worked out by hand from the fixture files (not by running kvir).

Incident (tests/conftest.py MINIMAL_SPEC): models @cf/zai-org/glm-5.3 and zai-org/GLM-5.3, window
2026-08-27T00:00:00Z .. 2026-09-09T19:40:00Z inclusive, public rule prompt_tokens > 681,280
(engine rule: >= 681,274). Host-local zones: sglang_json and sglang_metrics America/Chicago (CDT,
UTC-5 in Aug/Sep), sglang_text Europe/Berlin (CEST, UTC+2), vllm Asia/Tokyo (UTC+9).
"""
from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

# file (relative to FIXTURES) -> (read, requests, skipped, quarantined); parsed = requests + skipped
COUNTS: dict[str, tuple[int, int, int, int]] = {
    # 12 lines: received (skip), 8 finished d1..d8 + the duplicate d1 (9 records), truncated d9 (bad), blank (skip)
    "sglang_json/decode-0.jsonl": (12, 9, 2, 1),
    # received (skip), p1, p2, p7
    "sglang_json/prefill-0.jsonl": (4, 3, 1, 0),
    # server_args + access line (other lines), Receive: skip 3; t1 t2 t3 t5 requests; t4 truncated: bad
    "sglang_text/server.log": (8, 4, 3, 1),
    # m1..m4, then a truncated record
    "sglang_metrics/decode-1/sglang-request-metrics-20260826_19.log": (5, 4, 0, 1),
    "sglang_metrics/decode-1/sglang-request-metrics-20260909_14.log": (2, 2, 0, 0),
    # 2026-11-01 01:00 in Chicago happens twice (DST fold): refused
    "sglang_metrics/decode-1/sglang-request-metrics-20261101_01.log": (1, 0, 0, 1),
    # no hour in the file name: refused
    "sglang_metrics/decode-1/exported-copy.log": (1, 0, 0, 1),
    # start line, other router line, /health, blank: skip 4; 200, 400, 502, ANSI 200; no latency: bad
    "sglang_router/router.log": (9, 4, 4, 1),
    # end (6 s), start (skip), end with "200" as a string, truncated JSON (bad)
    "sglang_router/router-json.log": (4, 2, 1, 1),
    # start banner, DEBUG preview, two access lines, streaming delta: skip 5; Received v1, Generated v1,
    # Received v2, Aborted v2, rejected v5, Received v6: 6; 02-29 (no such date near 2026): bad
    "vllm/api_server.log": (12, 7, 4, 1),     # the DEBUG details line is a record too (a length)
    # ns, rate-limited, RFC 3339, seconds, ms: 5; Timestamp 1788 (implausible) and truncated: bad
    "cloudflare_logpush/ai_gateway_events.log": (7, 5, 0, 2),
    "cloudflare_gateway/page-1.json": (4, 4, 0, 0),
    # header + 11 rows: l9 (prompt "abc") and l10 (3 of 17 columns) bad
    "litellm/LiteLLM_SpendLogs.csv": (11, 9, 0, 2),
    "litellm/spend_logs.json": (2, 2, 0, 0),
    # error body: skip; truncated and created=0: bad; the usage-less stream chunk of o6 is a record (it merges
    # with o6's usage chunk: one request)
    "openai_response/responses.jsonl": (10, 7, 1, 2),
    # SPAN: skip; truncated: bad
    "langfuse/observations.jsonl": (8, 6, 1, 1),
    # {"data": [GENERATION, EVENT]}
    "langfuse/observations_api.json": (2, 1, 1, 0),
    # prompt_tokens "681,281": bad
    "helicone/export.jsonl": (7, 6, 0, 1),
    # 6 lines -> spans: s1 + HTTP span | s3 + embeddings | c5 | truncated | no spans | f6
    "otel/traces.jsonl": (8, 4, 3, 1),
    # /health: skip; truncated: bad
    "envoy/access.log": (8, 6, 1, 1),
    # /metrics: skip; time_iso8601 without offset and truncated: bad
    "nginx/access.json": (7, 4, 1, 2),
    # 4 comments + 20 samples skip; "this line is not a sample": bad
    "prometheus/decode-0.prom": (25, 0, 24, 1),
    # 3 comments, 7 samples, 1 blank
    "prometheus/prefill-0.prom": (11, 0, 11, 0),
}

FORMAT_OF: dict[str, str] = {
    "sglang_json": "sglang-json", "sglang_text": "sglang-text", "sglang_metrics": "sglang-metrics",
    "sglang_router": "sglang-router", "vllm": "vllm", "cloudflare_logpush": "cloudflare-logpush",
    "cloudflare_gateway": "cloudflare-gateway", "litellm": "litellm", "openai_response": "openai-response",
    "langfuse": "langfuse", "helicone": "helicone", "otel": "otel-genai", "envoy": "envoy", "nginx": "nginx",
    "prometheus": "prometheus",
}

# fixture folder -> the affected request ids under the public rule
AFFECTED: dict[str, set[str]] = {
    # d1: 681,281 served by decode (its prefill copy p1 logged the 1-token placeholder); d7 starts exactly
    # at the window start (19:00:10 CDT - 10 s = 00:00:00Z); d2 = 681,280 and d3 = 681,279 are not above
    # the pool; d4 (abort 400) rejected, d5 (abort, no status) aborted, d6 (abort 503) failed; d8 starts
    # 1 us before the window
    "sglang_json": {"d1", "d7"},
    # t1 681,281 (12:00:00 CEST = 10:00:00Z), t5 1,048,000 (cached tokens included); t2 = 681,280; t3 abort 400
    "sglang_text": {"t1", "t5"},
    # hour 2026-08-26 19:00 CDT = 00:00Z: m1 (latency 0) starts in [00:00, 01:00): inside; m2 (120 s) in
    # [23:58, 00:58): crosses the start -> possibly; hour 2026-09-09 14:00 CDT = 19:00Z: m5 in [19:00, 20:00)
    # crosses the end -> possibly; m6 (3600 s) in [18:00, 19:00): inside
    "sglang_metrics": {"m1", "m6"},
    "sglang_router": set(),
    "vllm": set(),
    "cloudflare_logpush": set(),
    # 19:39:59.999Z in; 19:40:00.001Z out; glm-5.3-air is another model; 400 rejected
    "cloudflare_gateway": {"01GW1"},
    # l1 681,281; l6 at 00:00:00.000 (naive UTC: the window start); l7 at 19:40:00.000 (the window end);
    # l12 from the JSON export. l5 .999 ms before the start and l8 1 ms after the end are out.
    "litellm": {"chatcmpl-l1", "chatcmpl-l6", "chatcmpl-l7", "chatcmpl-l12"},
    # o1; o3 (cached tokens are part of prompt_tokens); o6 (the stream's usage chunk); o7 (created in ms)
    "openai_response": {"chatcmpl-o1", "chatcmpl-o3", "chatcmpl-o6", "chatcmpl-o7"},
    # g1; g2 = 600,000 input + 81,281 cached; g6 at 19:39:59.999999 naive UTC; g9 (API export, camelCase)
    "langfuse": {"obs-g1", "obs-g2", "obs-g6", "obs-g9"},
    # h1 (its id is the response id); h7 naive time = UTC
    "helicone": {"chatcmpl-h1", "5b2a1c9e-0006-4c1a-9f1e-000000000006"},
    # s1 (input tokens as an intValue string); f6 (user.id on the resource); s3 = 681,280; c5 error 400
    "otel": {"chatcmpl-s1", "5b8efff798038103d269b633813fc60c:f6"},
    # e1 (AI Gateway token keys); e6 (start_time in epoch ms, tokens as a string); e2 DC = aborted;
    # e3 UF,URX = failed; e4 and e7 have no token count (candidates)
    "envoy": {"9a1f6c1e-0001", "9a1f6c1e-0006"},
    "nginx": set(),
    "prometheus": set(),
}

POSSIBLY_AFFECTED = {"m2", "m5"}

# Prometheus: vLLM scrapes at 2026-08-26 (before the window), 2026-09-01 (after a restart: values
# dropped) and 2026-09-10 (after it). Increase per bucket = (after restart: the new value) + later
# increase: le 500000: 4 + 56 = 60; le 1000000: 6 + 58 = 64; +Inf: 6 + 64 = 70. Above 681,280:
# at least 70 - 64 = 6, at most 70 - 60 = 10. SGLang, one scrape without timestamps: 50 - 44 = 6 to
# 50 - 40 = 10. The other-model series is left out. Together: 12 to 20.
AGGREGATE = {"prometheus/decode-0.prom": (6, 10), "prometheus/prefill-0.prom": (6, 10)}

SOURCES_TOML = """
[[sources]]
path = "sglang_json/*.jsonl"
source_tz = "America/Chicago"

[[sources]]
path = "sglang_text/*.log"
source_tz = "Europe/Berlin"

[[sources]]
path = "sglang_metrics/decode-1/*.log"
source_tz = "America/Chicago"

[[sources]]
path = "vllm/*.log"
source_tz = "Asia/Tokyo"
"""


def counts_of(result, root: Path = FIXTURES) -> dict[str, tuple[int, int, int, int]]:
    """file (relative to root) -> (read, requests, skipped, quarantined), from a triage result; checks
    read = parsed + quarantined for every file on the way."""
    out = {}
    for s in result.sources:
        assert s["read"] == s["parsed"] + s["quarantined"], s
        assert s["parsed"] == s["requests"] + s["skipped"], s
        rel = Path(str(s["label"])).resolve().relative_to(root.resolve()).as_posix()
        out[rel] = (s["read"], s["requests"], s["skipped"], s["quarantined"])
    return out
