"""Aggregate findings from Prometheus histograms, and joining candidates / identities to counted requests."""
from __future__ import annotations

import datetime as dt

import pandas as pd

from .conftest import affected_ids
from .expected import AGGREGATE, COUNTS, FIXTURES, counts_of

UTC = dt.timezone.utc


def test_prometheus_histograms_give_bounds_not_requests(run_fixture):
    r = run_fixture("prometheus")
    assert counts_of(r) == {k: v for k, v in COUNTS.items() if k.startswith("prometheus/")}
    assert r.summary["requests_total"] == 0 and affected_ids(r) == set()
    rows = r.case.con.execute("SELECT source_file, model, lower, upper, basis, finding FROM aggregate_findings "
                              "ORDER BY source_file").fetchall()
    got = {str(f).split("/fixtures/")[-1]: (lo, up) for f, _, lo, up, _, _ in rows}
    assert got == AGGREGATE                                  # the other-model series is left out
    basis = {str(f).split("/fixtures/")[-1]: b for f, _, _, _, b, _ in rows}
    assert basis["prometheus/decode-0.prom"].startswith(
        "increase between scrapes at 2026-08-26T00:00:00Z and 2026-09-10T00:00:00Z")
    assert basis["prometheus/prefill-0.prom"] == "cumulative since the process started (scrape time not recorded)"
    assert all(f.startswith("aggregate (Prometheus histogram, not request-level evidence): between 6 and 10 requests")
               for *_, f in rows)
    assert (r.summary["aggregate_series"], r.summary["aggregate_lower"], r.summary["aggregate_upper"]) == (2, 12, 20)
    assert "aggregate_findings.csv" in r.outputs and "between 6 and 10" in r.outputs["aggregate_findings.csv"].read_text()


def test_prometheus_engine_rule_uses_its_threshold(run_fixture):
    # 681,274 lies between the same bucket bounds: the same bounds, stated for the engine rule
    r = run_fixture("prometheus", rule="engine")
    assert r.case.con.execute("SELECT DISTINCT threshold FROM aggregate_findings").fetchall() == \
        [("prompts of 681,274 tokens or more",)]


def test_aggregate_finding_is_printed_apart(run_fixture, capsys):
    from kvir.cli.present.triage import print_triage

    r = run_fixture("prometheus")
    print_triage(r)
    err = capsys.readouterr().err
    assert "Aggregate finding (not request-level evidence)" in err and "between 12 and 20" in err


def test_candidates_and_identities_are_joined_and_reported(run_fixture):
    r = run_fixture("join", source_tz="UTC")
    # engine requests e1..e5 and chatcmpl-e6 (the body shares its id); e5 has 5,000 tokens
    assert affected_ids(r) == {"e1", "e2", "e3", "e4", "chatcmpl-e6"}
    acc = dict(zip(r.affected["request_id"], r.affected["account_id"]))
    assert acc["e1"] == "cust_z" and acc["e2"] == "cust_x"           # identity from the gateway / Logpush
    assert pd.isna(acc["e3"]) and pd.isna(acc["e4"])
    rows = r.case.con.execute(
        "SELECT s.format, e.pass, e.request_id, e.status, e.partners, e.partner_request_id, e.method, "
        "round(e.delta_s, 3), e.tolerance_s FROM evidence_joins AS e JOIN sources AS s USING (source_id) "
        "ORDER BY 1, 3").fetchall()
    assert rows == [
        # G1 10:00:00.400 with 681,281 tokens -> e1 (10:00:00.000, 681,281); G2 has no engine partner
        ("cloudflare-gateway", "identity", "01GWJ1", "matched", 1, "e1", "time+tokens", -0.4, 2.0),
        ("cloudflare-gateway", "identity", "01GWJ2", "unmatched", 0, None, None, None, 2.0),
        # Logpush 10:10:00.300 -> e2; 10:30:00.100 -> e5
        ("cloudflare-logpush", "candidate", "logpush:logpush:1", "matched", 1, "e2", "time", -0.3, 2.0),
        ("cloudflare-logpush", "candidate", "logpush:logpush:2", "matched", 1, "e5", "time", -0.1, 2.0),
        # router: R1 starts 10:00:05 - 5.2 s = 09:59:59.8 -> e1; R3 at 10:20:00.5 has e3 and e4 within 2 s;
        # R9 at 11:00:00 has nothing
        ("sglang-router", "candidate", "chatcmpl-R1", "matched", 1, "e1", "time", 0.2, 2.0),
        ("sglang-router", "candidate", "chatcmpl-R3", "ambiguous", 2, None, "time", None, 2.0),
        ("sglang-router", "candidate", "chatcmpl-R9", "unmatched", 0, None, None, None, 2.0),
    ]
    s = r.summary
    assert (s["join_matched"], s["join_unmatched"], s["join_ambiguous"], s["join_tolerance_s"]) == (4, 2, 1, 2.0)
    # R3 is one of e3, e4 (one record over two requests): another source holds it, so it is no request of its
    # own; R9 and G2 have no partner: requests of their own
    assert s["join_ambiguous_held"] == 1
    own = dict(r.case.con.execute("SELECT request_id, counted FROM evidence_joins").fetchall())
    assert own == {"01GWJ1": False, "01GWJ2": True, "logpush:logpush:1": False, "logpush:logpush:2": False,
                   "chatcmpl-R1": False, "chatcmpl-R3": False, "chatcmpl-R9": True}
    assert r.case.con.execute("SELECT candidate_ids FROM evidence_joins WHERE request_id = 'chatcmpl-R3'").fetchone() \
        == (["e3", "e4"],)
    assert r.outputs["evidence_joins.csv"].read_text().count("\n") == 1 + 7
    e1 = r.case.con.execute("SELECT n_records, source_ids, join_method, joined_ids, http_status FROM requests "
                            "WHERE request_id = 'e1'").fetchone()
    assert e1[0] == 3 and len(e1[1]) == 3 and e1[2] == "time+tokens,time" and e1[3] == ["01GWJ1", "chatcmpl-R1"]
    # the unmatched candidate stays a request of its own (undecidable); the held one stays in records
    assert set(r.case.df("SELECT request_id FROM triage_hits WHERE category = 'undecidable'")["request_id"]) == \
        {"chatcmpl-R9"}
    assert r.case.con.execute("SELECT count(*) FROM records WHERE request_id = 'chatcmpl-R3'").fetchone()[0] == 1


def test_join_tolerance_is_an_option(run_fixture):
    r = run_fixture("join", source_tz="UTC", join_tolerance_s=0.15)
    st = dict(r.case.con.execute("SELECT request_id, status FROM evidence_joins").fetchall())
    # within 0.15 s only the Logpush record 0.1 s from e5 still matches
    assert st == {"01GWJ1": "unmatched", "01GWJ2": "unmatched", "logpush:logpush:1": "unmatched",
                  "logpush:logpush:2": "matched", "chatcmpl-R1": "unmatched", "chatcmpl-R3": "unmatched",
                  "chatcmpl-R9": "unmatched"}


def test_vllm_candidates_join_bodies_by_shared_id(run_fixture, tmp_path):
    d = tmp_path / "logs"
    (d / "vllm-node-3").mkdir(parents=True)
    # without the DEBUG details line, whose 4 logged token ids would give the engine's own length (and
    # disagree with this body's count): the log is then candidates only
    log = [x for x in (FIXTURES / "vllm/api_server.log").read_text().splitlines(True) if " details: " not in x]
    (d / "vllm-node-3" / "api_server.log").write_text("".join(log))
    (d / "bodies.jsonl").write_text(
        '{"id":"chatcmpl-v1","object":"chat.completion","created":1788436800,"model":"zai-org/GLM-5.3",'
        '"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":681281,"completion_tokens":3}}\n')
    r = run_fixture(paths=[d], source_tz="Asia/Tokyo")
    assert affected_ids(r) == {"chatcmpl-v1"}
    row = r.case.con.execute("SELECT decode_node, n_records, prompt_tokens FROM affected").fetchone()
    assert row == ("vllm-node-3", 3, 681281)           # Received + Generated + the body
    assert r.case.con.execute("SELECT status, method FROM evidence_joins WHERE request_id = 'chatcmpl-v1'").fetchone() \
        == ("matched", "id")
