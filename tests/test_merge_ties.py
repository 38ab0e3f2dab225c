"""Ties between conflicting records are ties (issue 36 item 2): never broken by a name or a file order.

One request seen three times (ids that differ only by surrounding white space: one request), each record
naming another account and each exposing alike (same model, served, same prompt length). On main only the
account that sorts last was notified and the other two were in no table. Now no account is chosen
(the request's account is unknown), the conflict names the tie, and every candidate is a row of the case
table `account_candidates` (request_id, account_id, records): the accounts to notify as possibly affected.
The same holds for the nodes a request's records name (a prefill or decode node picked by its name) and
for a prefill copy of a reused bootstrap room whose nearest decode copies are equally near."""
from __future__ import annotations

import csv
import json

import pytest

import kvir
from tests.conftest import sglang_finished as fin, write

MODEL = "@cf/zai-org/glm-5.3"


def _rec(rid: str, account: str, tokens: int = 700000, model: str = MODEL) -> str:
    """A Cloudflare AI Gateway log object (the customer in metadata)."""
    return json.dumps({"id": rid, "created_at": "2026-08-30T10:00:00Z", "model": model, "status_code": 200,
                       "tokens_in": tokens, "metadata": json.dumps({"customer_id": account})}) + "\n"


def _candidates(r) -> dict[str, list[str]]:
    rows = r.case.con.execute("SELECT request_id, list_sort(list(account_id)) FROM account_candidates "
                              "GROUP BY ALL ORDER BY ALL").fetchall()
    return dict(rows)


@pytest.mark.parametrize("names", [("acct-a", "acct-b", "acct-c"), ("zed", "alice", "mia")])
def test_three_accounts_exposing_alike_are_all_candidates(spec, tmp_path, names):
    write(tmp_path / "gw" / "one.jsonl", _rec("g1", names[0]))
    write(tmp_path / "gw" / "two.jsonl", _rec(" g1", names[1]))
    write(tmp_path / "gw" / "three.jsonl", _rec("g1 ", names[2]))
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case", hash="none")
    assert r.summary["requests_total"] == 1 and list(r.affected["request_id"]) == ["g1"]
    assert r.affected["account_id"].isna().all()                # no account chosen by its name
    assert _candidates(r) == {"g1": sorted(names)}               # every one of them, to be notified
    rows = list(csv.DictReader(open(tmp_path / "case" / "conflicts.csv")))
    assert len(rows) == 1 and "account_id" in rows[0]["fields"].split(";")
    assert rows[0]["account_id"] == "" and rows[0]["accounts_seen"] == ";".join(sorted(names))
    assert "tie" in rows[0]["rule"] and "account_candidates" in rows[0]["rule"]
    assert r.summary["conflicts"] == 1 and r.summary["affected_unknown_account"] == 1


def test_the_most_exposing_record_still_names_the_account(spec, tmp_path):
    """No tie: the record with the longest prompt is the exposure (700,000 over 681,281 tokens); two others
    expose alike but less: one account, no candidates."""
    write(tmp_path / "gw" / "one.jsonl", _rec("g2", "zz-long", 700000))
    write(tmp_path / "gw" / "two.jsonl", _rec("g2", "aa-short", 681281))
    write(tmp_path / "gw" / "three.jsonl", _rec("g2", "mm-short", 681281))
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case", hash="none")
    assert list(r.affected["account_id"]) == ["zz-long"] and _candidates(r) == {}


def test_a_tie_among_the_less_exposing_records_is_no_tie(spec, tmp_path):
    write(tmp_path / "gw" / "one.jsonl", _rec("g3", "aa-exposing"))
    write(tmp_path / "gw" / "two.jsonl", _rec("g3", "zz-other", model="other/model"))
    write(tmp_path / "gw" / "three.jsonl", _rec("g3", "mm-other", model="other/model"))
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case", hash="none")
    assert list(r.affected["account_id"]) == ["aa-exposing"] and _candidates(r) == {}


def test_two_decode_nodes_for_one_request_are_a_conflict_not_a_name(spec, tmp_path):
    """Two decode nodes' logs hold the same rid, exposing alike: which node served it is not known. The nodes
    table must not credit the node whose name sorts last: the request's decode node is unknown, and the
    conflict names the field."""
    for node in ("decode-a", "decode-z"):
        write(tmp_path / "logs" / f"{node}.jsonl", fin("2026-08-30T10:00:00.000000", "r1", 700000) + "\n")
    extra = "".join(f'\n[[sources]]\npath = "logs/{n}.jsonl"\nrole = "decode"\nnode = "{n}"\n'
                    for n in ("decode-a", "decode-z"))
    r = kvir.triage(spec(extra=extra), [], out=tmp_path / "case", source_tz="UTC", served_model="zai-org/GLM-5.3",
                    hash="none")
    assert list(r.affected["request_id"]) == ["r1"]
    assert r.affected["decode_node"].isna().all()
    rows = list(csv.DictReader(open(tmp_path / "case" / "conflicts.csv")))
    assert len(rows) == 1 and "decode_node" in rows[0]["fields"].split(";")


def test_a_prefill_copy_between_two_equally_near_decode_copies_joins_neither(spec, tmp_path):
    """A reused room (two decode rids) and one prefill rid exactly as far from both: joining it to either
    would be a choice by name (the smaller rid won). It stays a request of its own, and the room's conflict says
    why; the decode copies are each a request."""
    pre = fin("2026-08-30T10:00:05.000000", "p1", 1, room=77)
    dec = [fin("2026-08-30T10:00:03.000000", "d-early", 700000, room=77),
           fin("2026-08-30T10:00:07.000000", "d-late", 700000, room=77)]
    write(tmp_path / "logs" / "prefill-0.jsonl", pre + "\n")
    write(tmp_path / "logs" / "decode-0.jsonl", "\n".join(dec) + "\n")
    extra = "".join(f'\n[[sources]]\npath = "logs/{n}-0.jsonl"\nrole = "{n}"\n' for n in ("prefill", "decode"))
    r = kvir.triage(spec(extra=extra), [], out=tmp_path / "case", source_tz="UTC", served_model="zai-org/GLM-5.3",
                    hash="none")
    got = dict(r.case.con.execute("SELECT request_id, prefill_tokens FROM requests").fetchall())
    assert got == {"d-early": None, "d-late": None, "p1": 1}


def test_a_lake_keeps_the_candidates(spec, tmp_path):
    """kvir ingest writes the shard's conflicts with its candidates; a triage of the lake lists them."""
    write(tmp_path / "gw" / "one.jsonl", _rec("g1", "acct-a"))
    write(tmp_path / "gw" / "two.jsonl", _rec(" g1", "acct-b"))
    kvir.ingest_shard([tmp_path / "gw"], tmp_path / "lake", shard="h1", incident=spec(), hash="none")
    r = kvir.triage(spec(), [tmp_path / "lake"], out=tmp_path / "case")
    assert r.affected["account_id"].isna().all() and _candidates(r) == {"g1": ["acct-a", "acct-b"]}
