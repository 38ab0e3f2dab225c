"""Customer- and proxy-side logs: Logpush, AI Gateway pages, LiteLLM, OpenAI bodies, Langfuse, Helicone,
OTel GenAI spans, Envoy, nginx."""
from __future__ import annotations

import datetime as dt
import gzip
import shutil

import pytest
import zstandard

from .conftest import affected_ids, categories
from .expected import AFFECTED, COUNTS, FIXTURES, counts_of

UTC = dt.timezone.utc


def _expected_counts(folder: str) -> dict[str, tuple[int, int, int, int]]:
    return {k: v for k, v in COUNTS.items() if k.startswith(folder + "/")}


def _one(r, sql: str, **params):
    return r.case.con.execute(sql, params).fetchone()


def test_cloudflare_logpush_units_and_identity(run_fixture):
    r = run_fixture("cloudflare_logpush")
    assert counts_of(r) == _expected_counts("cloudflare_logpush")
    assert affected_ids(r) == set()
    rows = r.case.df("SELECT ts, account_id, outcome, http_status, finish_reason FROM requests ORDER BY ts")
    # nanoseconds, RFC 3339, seconds and milliseconds all land on 2026-09-01 10:00:0x UTC
    assert [t.to_pydatetime() for t in rows["ts"]] == [
        dt.datetime(2026, 9, 1, 10, 0, s, us, tzinfo=UTC) for s, us in ((0, 0), (1, 0), (2, 500000), (3, 0), (4, 0))]
    assert rows["account_id"].tolist()[:3] == ["cust_lp1", "cust_lp2", "cust_lp3"]   # Metadata object or JSON string
    assert rows["outcome"].tolist() == ["served", "rejected", "served", "served", "failed"]   # RateLimited = 429
    assert rows["finish_reason"].tolist()[2] == "gateway-cache"
    assert "implausible epoch time" in _one(r, "SELECT reason FROM quarantine WHERE source_line = 6")[0]
    # no token counts: undecidable, except what was not served (the 429 and the 5xx: nothing reached the client)
    assert (r.summary["undecidable"], r.summary["rejected"], r.summary["failed"]) == (3, 1, 1)


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_compressed_inputs_read_the_same(run_fixture, tmp_path, codec):
    raw = (FIXTURES / "cloudflare_logpush/ai_gateway_events.log").read_bytes()
    d = tmp_path / "in"
    d.mkdir()
    if codec == "gzip":
        (d / "events.log.gz").write_bytes(gzip.compress(raw))
    else:
        (d / "events.log.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    shutil.copy(FIXTURES / "openai_response/responses.jsonl", d / "bodies.jsonl")
    (d / "bodies.jsonl.gz").write_bytes(gzip.compress((d / "bodies.jsonl").read_bytes()))
    (d / "bodies.jsonl").unlink()
    r = run_fixture(paths=[d])
    by = {s["format"]: (s["read"], s["requests"], s["skipped"], s["quarantined"], s["chosen_by"]) for s in r.sources}
    assert by["cloudflare-logpush"][:4] == COUNTS["cloudflare_logpush/ai_gateway_events.log"]
    assert by["openai-response"][:4] == COUNTS["openai_response/responses.jsonl"]
    assert all(v[4].startswith("sniffed") for v in by.values())
    comp = dict(r.case.con.execute("SELECT format, compression FROM sources").fetchall())
    assert comp == {"cloudflare-logpush": codec, "openai-response": "gzip"}
    assert affected_ids(r) == AFFECTED["openai_response"]


def test_cloudflare_gateway_page_window_edges(run_fixture):
    r = run_fixture("cloudflare_gateway")
    assert counts_of(r) == _expected_counts("cloudflare_gateway")
    assert affected_ids(r) == AFFECTED["cloudflare_gateway"]
    assert r.affected["account_id"].tolist() == ["cust_gw1"]
    assert categories(r)["01GW4"] == "rejected"


def test_litellm_csv_and_json_naive_utc(run_fixture):
    # --source-tz must not move LiteLLM's times: they are UTC by definition (l5 would enter the window)
    r = run_fixture("litellm", source_tz="America/Chicago")
    assert counts_of(r) == _expected_counts("litellm")
    assert affected_ids(r) == AFFECTED["litellm"]
    acc = dict(zip(r.affected["request_id"], r.affected["account_id"]))
    assert acc == {"chatcmpl-l1": "cust_a", "chatcmpl-l6": "u_internal", "chatcmpl-l7": "team_2",
                   "chatcmpl-l12": "cust_b"}                       # end_user, else user, else team_id
    cat = categories(r)
    # failure rows: their prompt_tokens is LiteLLM's own estimate (or 0), not the engine's count: unknown length,
    # but not served (l4: error_code 400; l13: a failure without a code): counted by outcome, never undecidable
    assert (cat["chatcmpl-l4"], cat["chatcmpl-l13"]) == ("rejected", "failed")
    assert (cat["chatcmpl-l2"], cat["chatcmpl-l3"]) == ("other-rule", "other-rule")
    assert "chatcmpl-l11" not in cat                                # glm-5.3-air: another model
    q = dict(r.case.con.execute("SELECT source_line, reason FROM quarantine").fetchall())
    assert q[10].startswith("prompt_tokens is not a non-negative integer")
    assert q[11].startswith("CSV MISSING COLUMNS")
    assert all(s["source_tz"] is None for s in r.sources)
    assert all(any("UTC by definition" in n for n in s["notes"]) for s in r.sources)


def test_openai_response_bodies(run_fixture):
    r = run_fixture("openai_response")
    assert counts_of(r) == _expected_counts("openai_response")
    assert affected_ids(r) == AFFECTED["openai_response"]
    assert _one(r, "SELECT cached_tokens FROM requests WHERE request_id = 'chatcmpl-o3'")[0] == 681000
    assert _one(r, "SELECT ts FROM requests WHERE request_id = 'chatcmpl-o7'")[0] == \
        dt.datetime(2026, 9, 3, 12, 0, 4, 123000, tzinfo=UTC)      # created written in ms: unit by magnitude
    assert categories(r)["chatcmpl-o8"] == "aborted"


def test_langfuse_observations(run_fixture):
    r = run_fixture("langfuse", source_tz="America/Chicago")
    assert counts_of(r) == _expected_counts("langfuse")
    assert affected_ids(r) == AFFECTED["langfuse"]
    assert _one(r, "SELECT prompt_tokens, cached_tokens FROM requests WHERE request_id = 'obs-g2'") == (681281, 81281)
    assert _one(r, "SELECT ts FROM requests WHERE request_id = 'obs-g6'")[0] == \
        dt.datetime(2026, 9, 9, 19, 39, 59, 999999, tzinfo=UTC)
    cat = categories(r)
    assert (cat["obs-g5"], cat["obs-g7"], cat["obs-g3"]) == ("rejected", "undecidable", "other-rule")
    assert dict(zip(r.affected["request_id"], r.affected["account_id"]))["obs-g9"] == "cust_lf6"


def test_helicone_export(run_fixture):
    r = run_fixture("helicone")
    assert counts_of(r) == _expected_counts("helicone")
    assert affected_ids(r) == AFFECTED["helicone"]
    cat = categories(r)
    assert cat["5b2a1c9e-0002-4c1a-9f1e-000000000002"] == "rejected"
    assert cat["5b2a1c9e-0003-4c1a-9f1e-000000000003"] == "failed"
    assert cat["5b2a1c9e-0005-4c1a-9f1e-000000000005"] == "aborted"
    assert _one(r, "SELECT ts_end FROM requests WHERE request_id = 'chatcmpl-h1'")[0] == \
        dt.datetime(2026, 9, 5, 10, 0, 5, tzinfo=UTC)               # + delay_ms


def test_otel_genai_spans(run_fixture):
    r = run_fixture("otel")
    assert counts_of(r) == _expected_counts("otel")
    assert affected_ids(r) == AFFECTED["otel"]
    acc = dict(zip(r.affected["request_id"], r.affected["account_id"]))
    assert acc == {"chatcmpl-s1": "cust_ot1", "5b8efff798038103d269b633813fc60c:f6": "cust_ot2"}
    assert categories(r)["5b8efff798038103d269b633813fc60c:c5"] == "rejected"
    assert _one(r, "SELECT ts, ts_end FROM requests WHERE request_id = 'chatcmpl-s1'") == (
        dt.datetime(2026, 9, 6, 10, 0, tzinfo=UTC), dt.datetime(2026, 9, 6, 10, 0, 5, tzinfo=UTC))


def test_envoy_access_log(run_fixture):
    r = run_fixture("envoy")
    assert counts_of(r) == _expected_counts("envoy")
    assert affected_ids(r) == AFFECTED["envoy"]
    cat = categories(r)
    assert (cat["9a1f6c1e-0002"], cat["9a1f6c1e-0003"]) == ("aborted", "failed")   # DC; UF,URX with code 0
    assert cat["9a1f6c1e-0004"] == "undecidable"                    # plain Envoy record: a candidate
    assert _one(r, "SELECT ts FROM requests WHERE request_id = '9a1f6c1e-0006'")[0] == \
        dt.datetime(2026, 9, 7, 10, 5, tzinfo=UTC)                  # start_time as epoch ms


def test_nginx_access_log(run_fixture):
    r = run_fixture("nginx")
    assert counts_of(r) == _expected_counts("nginx")
    assert affected_ids(r) == set()
    rows = r.case.df("SELECT request_id, ts, outcome, http_status, finish_reason FROM requests ORDER BY ts")
    # logged at the end: start = $msec / $time_iso8601 / $time_local - request_time
    assert [t.to_pydatetime() for t in rows["ts"]] == [
        dt.datetime(2026, 9, 8, 9, 59, 55, 123000, tzinfo=UTC), dt.datetime(2026, 9, 8, 10, 0, 29, 500000, tzinfo=UTC),
        dt.datetime(2026, 9, 8, 12, 1, 58, 500000, tzinfo=UTC), dt.datetime(2026, 9, 8, 12, 2, 58, tzinfo=UTC)]
    assert rows["outcome"].tolist() == ["served", "aborted", "failed", "served"]     # 499: the client closed
    assert rows["finish_reason"].tolist()[3] == "upstream 502, 200"
    assert "without its offset" in _one(r, "SELECT reason FROM quarantine WHERE source_line = 6")[0]
