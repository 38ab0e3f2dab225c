"""kvir confirm end to end on small cases whose answers follow from how they are built: who sent which text
when, on which node, and what each affected response holds."""
from __future__ import annotations

import csv

import pandas as pd
import pytest

from kvir.confirm.read import read_confirmation
from tests.confirm.helpers import Req, confirmed, verdicts, words

DOC_A = "Memo of tenant A: " + words(1, 20) + " Operation Kingfisher " + words(2, 90)
DOC_C = "Note of tenant C: " + words(3, 80)
LONG_B = "Question of tenant B: " + words(4, 120)


def base() -> list[Req]:
    return [
        Req("a1", 0, "A", DOC_A, "summary " + words(10, 8)),
        Req("c1", 5, "C", DOC_C, "fine " + words(11, 6)),
        # B's over-pool response holds 300 characters of A's memo (with the needle), nothing of C's
        Req("b1", 10, "B", LONG_B, DOC_A[60:400], over_pool=True),
        # garbage: replacement characters and a control character
        Req("b2", 11, "B", LONG_B, "\ufffd\ufffd\ufffd\x1b " + words(12, 3) + " \ufffd\ufffd", over_pool=True),
        # an ordinary answer that shares nothing
        Req("c2", 12, "C", LONG_B.replace("B", "C"), "answer " + words(13, 30), over_pool=True),
        # the sources hold no text of this one
        Req("a2", 13, "A", None, None, over_pool=True),
    ]


def test_verdicts_sources_and_accounts_follow_the_construction(tmp_path):
    r = confirmed(tmp_path, base(), needles=["Operation Kingfisher", "never said by anyone"])
    assert verdicts(r) == {"b1": "confirmed foreign content", "b2": "corruption without foreign content",
                           "c2": "not confirmed", "a2": "cannot decide"}
    c = r.confirmations.set_index("request_id")
    assert list(c.loc["b2", "corruption"]) == ["replacement", "noise"]
    assert "not proof of absence" in c.loc["c2", "reason"]
    # c2's candidates: a1, b1, b2 (other tenants, earlier, on d0), all with text; c1 is its own tenant's
    assert (c.loc["c2", "candidates"], c.loc["c2", "candidates_with_text"]) == (3, 3)
    assert (c.loc["a2", "candidates"], c.loc["a2", "candidates_with_text"]) == (4, 4)   # c1, b1, b2, c2
    s = r.sources
    assert list(s["request_id"]) == ["b1"] and list(s["source_request_id"]) == ["a1"]
    row = s.iloc[0]
    assert row["source_tenant"] == "A" and list(row["source_parts"]) == ["prompt"] and row["rank"] == 1
    assert row["overlap"] == pytest.approx(1.0)          # every window of the response is A's
    # the span shared is 340 characters (normalised: one-byte characters, single spaces): the matched spans
    # cover most of it (winnowing keeps some windows, so the estimate is up to w + k short at each end)
    assert 340 - 2 * (16 + 24) <= row["matched_bytes"] <= 340
    a = r.accounts.set_index("account_id")
    assert a.loc["A", ["content_reached_responses", "content_reached_tenants", "content_source_requests"]].tolist() == [1, 1, 1]
    assert a.loc["B", ["responses", "confirmed", "corruption"]].tolist() == [2, 1, 1]
    assert a.loc["C", ["responses", "not_confirmed", "content_reached_responses"]].tolist() == [1, 1, 0]
    n = r.case.df("confirm_needle_results").set_index("needle_id")
    assert n.loc[1, "responses"] == 1 and list(n.loc[1, "request_ids"]) == ["b1"] and list(n.loc[1, "tenants"]) == ["B"]
    assert n.loc[2, "responses"] == 0


def test_the_typed_reader_and_the_csv_say_the_same(tmp_path):
    r = confirmed(tmp_path, base())
    c = read_confirmation(r.case)
    assert c is not None and c.count("confirmed foreign content") == 1
    b1 = c.responses["b1"]
    assert b1.source_tenants == ("A",) and b1.sources[0].request_id == "a1" and b1.sources[0].same_instance
    assert c.accounts["A"].content_reached_responses == 1 and c.accounts["B"].confirmed == 1
    assert c.run["key_sha256"] == r.summary["key_sha256"]
    with open(r.outputs["confirmations.csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(x["request_id"], x["verdict"], x["source_request_id"], x["source_tenant"]) for x in rows] == [
        ("b1", "confirmed foreign content", "a1", "A"), ("b2", "corruption without foreign content", "", ""),
        ("c2", "not confirmed", "", ""), ("a2", "cannot decide", "", "")]
    pq = pd.read_parquet(r.outputs["confirmations.parquet"])
    assert list(pq["verdict"]) == [x["verdict"] for x in rows]


def test_own_echo_and_shared_boilerplate_are_not_foreign(tmp_path):
    system = "System prompt every tenant sends: " + words(20, 60)
    public = "A public document both pasted: " + words(21, 70)
    reqs = [Req(f"t{i}", i, t, system + " " + words(30 + i, 20), "ok") for i, t in enumerate("ADEF")]
    reqs += [
        Req("a1", 10, "A", public, "ok"),
        # B pasted the same public document earlier: its response echoing it is explained by its own prompt
        Req("b0", 11, "B", public, "ok"),
        Req("b1", 12, "B", LONG_B, public[10:300], over_pool=True),
        # the system prompt four other tenants send: boilerplate (held by more than max_df other tenants)
        Req("b2", 13, "B", LONG_B, system[5:300], over_pool=True),
    ]
    r = confirmed(tmp_path, reqs)
    assert verdicts(r) == {"b1": "not confirmed", "b2": "not confirmed"}
    assert r.sources.empty


def test_sources_on_another_node_or_outside_the_window_do_not_confirm(tmp_path):
    reqs = [Req("a1", 0, "A", DOC_A, "ok", node="d1"), Req("c1", 1, "C", DOC_C, "ok", node="d0"),
            Req("b1", 600, "B", LONG_B, DOC_A[30:330], over_pool=True, node="d0")]
    assert verdicts(confirmed(tmp_path / "node", reqs)) == {"b1": "not confirmed"}
    r = confirmed(tmp_path / "any", reqs, instance="any")
    assert verdicts(r) == {"b1": "confirmed foreign content"} and list(r.sources["instance"]) == ["unknown"]
    same = [Req("a1", 0, "A", DOC_A, "ok"), Req("b1", 600, "B", LONG_B, DOC_A[30:330], over_pool=True)]
    assert verdicts(confirmed(tmp_path / "w1", same, window_s=599)) == {"b1": "not confirmed"}
    assert verdicts(confirmed(tmp_path / "w2", same, window_s=601)) == {"b1": "confirmed foreign content"}
    # a source on no known node may have been on the response's: it confirms, with the instance unknown
    nodeless = [Req("a1", 0, "A", DOC_A, "ok", node=None), Req("b1", 60, "B", LONG_B, DOC_A[30:330], over_pool=True)]
    r = confirmed(tmp_path / "nodeless", nodeless)
    assert list(r.sources["instance"]) == ["unknown"]


def test_the_latest_earlier_writer_is_the_source_and_ties_are_ties(tmp_path):
    reqs = [Req("a1", 0, "A", DOC_A, "ok"), Req("a2", 5, "A", DOC_A, "ok"),
            Req("b1", 10, "B", LONG_B, DOC_A[30:330], over_pool=True),
            Req("a3", 20, "A", DOC_A, "ok")]                 # after the response: never its source
    s = confirmed(tmp_path / "latest", reqs).sources
    assert list(s["source_request_id"]) == ["a2"]
    tie = [Req("a1", 0, "A", DOC_A, "ok"), Req("c1", 0, "C", DOC_A, "ok"),
           Req("b1", 10, "B", LONG_B, DOC_A[30:330], over_pool=True)]
    s = confirmed(tmp_path / "tie", tie).sources
    assert sorted(zip(s["source_request_id"], s["source_tenant"], s["rank"])) == [("a1", "A", 1), ("c1", "C", 1)]
    # a window two tenants hold counts half for each: the score halves, the overlap does not
    assert s["score"].tolist() == pytest.approx([s["matched_fingerprints"].iloc[0] / 2] * 2)


def test_unreadable_records_are_counted_and_a_rerun_replaces_the_tables(tmp_path):
    r = confirmed(tmp_path, base(), extra_lines=["{not json", "[1, 2]"])
    src = r.case.df("confirm_sources").iloc[0]
    assert (src["read"], src["with_text"], src["without_text"], src["quarantined"]) == (8, 5, 1, 2)
    q = r.case.df("confirm_quarantine")
    assert list(q["source_line"]) == [7, 8] and set(q["reason"]) == {"not a JSON object"}
    first = verdicts(r)
    from kvir.confirm.run import ConfirmOptions, confirm
    from tests.confirm.helpers import MAPS

    again = confirm(tmp_path / "case", [tmp_path / "logs.jsonl"],
                    ConfirmOptions(key=tmp_path / "confirm.key", maps=MAPS))
    assert verdicts(again) == first and len(again.case.df("confirm_docs")) == len(r.case.df("confirm_docs"))


def test_the_probes_canaries_are_found_in_every_response_fingerprints_or_not(tmp_path):
    """A probe run recorded in the case (kvir probe --case) planted a canary as tenant A; the gateway logged
    the plant's prompt. A 20-character fragment in B's affected response is too short for a fingerprint
    (39 bytes are sure) but is found as the probe would find it; the plant's own response is left out."""
    from kvir.case.probe_tables import record_probe
    from kvir.case.store import Case
    from kvir.confirm.run import ConfirmOptions, confirm
    from tests.confirm.helpers import MAPS, triaged

    canary = "mfrggzdfmztwq2lknnwg23tpobyxe43u"           # 32 characters of the probe's base32 alphabet
    plant = " ".join([canary] * 4)
    reqs = [Req("plant-1", 0, "A", plant, canary[:20]), Req("a1", 1, "A", DOC_A, "ok"),
            Req("b1", 10, "B", LONG_B, "words " + canary[7:27] + " more words", over_pool=True),
            Req("b2", 11, "B", LONG_B, "words " + canary[7:27].upper().replace("Q", "q ") + " more", over_pool=True),
            Req("c1", 12, "C", LONG_B, "nothing of it " + words(40, 20), over_pool=True)]
    case_dir, log = triaged(tmp_path, reqs)
    case = Case.open(case_dir, staged=True)
    record_probe(case, {"run_id": "r1", "started_at": "2026-08-28T09:59:00Z", "ended_at": "2026-08-28T10:01:00Z",
                        "endpoint": "https://gw.example/v1", "model": "m", "verdict": "exposed", "reason": "x"},
                 [{"seq": 1, "check": "canary", "purpose": "plant", "label": "round 1 canary 1", "tenant": "tenant A",
                   "request_id": "kvir-probe-r1-1", "response_id": "plant-1"}], [])
    case.save_manifest()
    case.commit()
    case.close()
    r = confirm(case_dir, [log], ConfirmOptions(key=tmp_path / "k", maps=MAPS))
    n = r.case.df("confirm_needle_results")
    assert list(n["kind"]) == ["probe canary"] and list(n["planted_by"]) == ["tenant A"]
    assert list(n["request_ids"].iloc[0]) == ["b1", "b2"] and list(n["tenants"].iloc[0]) == ["B"]
    hits = r.case.df("confirm_needle_export").set_index("request_id")
    assert hits.loc["b1", "chars"] == 20 and not hits.loc["b1", "normalised"]
    assert hits.loc["b2", "normalised"]                  # found only with case folded and spaces removed
    assert verdicts(r)["b1"] == "not confirmed"          # too short for the fingerprints, found by the needle
