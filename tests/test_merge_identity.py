"""Issue #26 items 2 and 3: merging records of one request never depends on names or file order, ids are
normalised one way, and a join key (bootstrap_room) never merges requests whose rids say they differ."""
from __future__ import annotations

import csv
import json

import pytest

import kvir
from tests.conftest import ids, sglang_finished as fin, write

MODEL = "@cf/zai-org/glm-5.3"


def _page(rows: list[dict]) -> str:
    """Cloudflare AI Gateway log objects, one per line (the customer named in metadata)."""
    return "".join(json.dumps({"id": r["id"], "created_at": "2026-08-30T10:00:00Z", "model": r["model"],
                               "status_code": 200, "tokens_in": r["tokens"],
                               "metadata": json.dumps({"customer_id": r["account"]})}) + "\n" for r in rows)


@pytest.mark.parametrize("exposing_account, other_account", [("zed", "alice"), ("alice", "zed")])
@pytest.mark.parametrize("exposing_file", ["a.jsonl", "z.jsonl"])
def test_the_account_of_the_exposing_record_is_named(spec, tmp_path, exposing_account, other_account, exposing_file):
    """One request id in two gateway exports: one record of the incident's model (exposing), one of another
    model, with different accounts. Whoever's name sorts first, whichever file comes first, the account
    notified is the exposing record's, and the request is a conflict listing both accounts."""
    other_file = "z.jsonl" if exposing_file == "a.jsonl" else "a.jsonl"
    write(tmp_path / "gw" / exposing_file, _page([{"id": "g1", "model": MODEL, "tokens": 700000, "account": exposing_account}]))
    write(tmp_path / "gw" / other_file, _page([{"id": "g1", "model": "other/model", "tokens": 700000, "account": other_account}]))
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case", hash="none")
    assert r.summary["requests_total"] == 1
    assert ids(r.affected) == {"g1"}
    assert r.affected.iloc[0]["account_id"] == exposing_account
    assert list(r.accounts["account_id"]) == [exposing_account]
    rows = list(csv.DictReader(open(tmp_path / "case" / "conflicts.csv")))
    assert len(rows) == 1 and "account_id" in rows[0]["fields"].split(";")
    assert rows[0]["accounts_seen"] == "alice;zed" and rows[0]["account_id"] == exposing_account


def test_a_served_record_names_the_account_over_a_rejected_one(spec, tmp_path):
    """Same model, two accounts: the record whose response was served (the exposure) names the account."""
    served = {"id": "g2", "model": MODEL, "tokens": 700000, "account": "zz-served"}
    page = json.loads(_page([served]))
    rejected = dict(page, status_code=400, metadata=json.dumps({"customer_id": "aa-rejected"}))
    write(tmp_path / "gw" / "one.jsonl", json.dumps(rejected) + "\n")
    write(tmp_path / "gw" / "two.jsonl", _page([served]))
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case", hash="none")
    assert ids(r.affected) == {"g2"} and r.affected.iloc[0]["account_id"] == "zz-served"


@pytest.mark.parametrize("a, b", [(" g3", "g3"), ("g3 ", "g3"), ("\tg3", "g3 "), (" g3 ", "g3\t")])
def test_ids_differing_only_by_surrounding_whitespace_are_one_request(spec, tmp_path, a, b):
    """One documented normalisation (queries/macros.sql kvir_id): whitespace at either end is not part of an
    id, so leading and trailing whitespace merge alike (on main only leading whitespace merged)."""
    write(tmp_path / "gw" / "one.jsonl", _page([{"id": a, "model": MODEL, "tokens": 700000, "account": "acct"}]))
    write(tmp_path / "gw" / "two.jsonl", _page([{"id": b, "model": MODEL, "tokens": 700000, "account": "acct"}]))
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case", hash="none")
    assert r.summary["requests_total"] == 1 and ids(r.affected) == {"g3"}


def test_a_reused_bootstrap_room_never_merges_requests_whose_rids_differ(spec, tmp_path):
    """SGLang's bootstrap_room is random per request, but rooms repeat across days and decode nodes: four
    PD requests (two rooms, each used twice a week apart, on two decode nodes) are four requests, each
    prefill copy joined to the decode copy nearest in time, and three of them affected (on main: 2 requests,
    2 affected, no conflict row)."""
    utc = "UTC"
    prefill = [fin("2026-08-30T10:00:00", "p1", 1, room=42, completion=1),
               fin("2026-09-06T10:00:00", "p2", 1, room=42, completion=1),
               fin("2026-08-30T11:00:00", "p3", 5000, room=43, completion=1),
               fin("2026-09-06T11:00:00", "p4", 1, room=43, completion=1)]
    d0 = [fin("2026-08-30T10:00:05", "d1", 700000, room=42), fin("2026-08-30T11:00:05", "d3", 5000, room=43)]
    d1 = [fin("2026-09-06T10:00:05", "d2", 700001, room=42), fin("2026-09-06T11:00:05", "d4", 700002, room=43)]
    files = [write(tmp_path / "prefill-0.jsonl", "\n".join(prefill) + "\n"),
             write(tmp_path / "decode-0.jsonl", "\n".join(d0) + "\n"),
             write(tmp_path / "decode-1.jsonl", "\n".join(d1) + "\n")]
    r = kvir.triage(spec(), files, out=tmp_path / "case", source_tz=utc, served_model="zai-org/GLM-5.3", hash="none")
    assert r.summary["requests_total"] == 4
    assert ids(r.affected) == {"d1", "d2", "d4"}
    got = dict(r.case.con.execute("SELECT request_id, prefill_tokens FROM requests").fetchall())
    assert got == {"d1": 1, "d2": 1, "d3": 5000, "d4": 1}            # each prefill copy with its own decode copy
    nodes = dict(zip(r.affected["request_id"], r.affected["decode_node"]))
    assert nodes == {"d1": "decode-0", "d2": "decode-1", "d4": "decode-1"}
    rows = {x["request_id"]: x for x in csv.DictReader(open(tmp_path / "case" / "conflicts.csv"))}
    assert set(rows) == {"d1", "d2", "d3", "d4"}
    assert all(x["fields"] == "bootstrap_room" and "reused by 2 requests" in x["rule"] for x in rows.values())


def test_a_room_used_once_still_merges_its_pd_copies(spec, tmp_path):
    """The ordinary case is unchanged: one prefill rid and one decode rid in a room are one request."""
    p = write(tmp_path / "prefill-0.jsonl", fin("2026-08-30T10:00:01", "p1", 1, room=7, completion=1) + "\n")
    d = write(tmp_path / "decode-0.jsonl", fin("2026-08-30T10:00:09", "d1", 700000, room=7) + "\n")
    r = kvir.triage(spec(), [p, d], out=tmp_path / "case", source_tz="UTC", served_model="zai-org/GLM-5.3", hash="none")
    assert r.summary["requests_total"] == 1 and r.summary["conflicts"] == 0
    assert ids(r.affected) == {"d1"} and r.affected.iloc[0]["prefill_tokens"] == 1
