"""Checksum and canary modes (the builds' --disaggregation-enable-kv-checksum, from 0.5.21, and --kv-canary,
from 0.5.13: only where the replayed build has them), and the freed-page fill mitigation measured on its own."""
from __future__ import annotations

import pytest

from kvir.replay.policy import KVIR_PROPOSAL, FreedPageFill, policy_for
from kvir.replay.request import ReplayRequest
from kvir.replay.transfer import Fault

from .helpers import small_engine

A = ReplayRequest("req-A", 600, 20, account="acct-A", decode_steps=0)
V = ReplayRequest("req-V", 700, 8, account="acct-V")
LEAK, DOOR = policy_for("0.5.19"), policy_for("0.5.21")


def test_clean_transfer_verifies():
    e = small_engine(checksum="enforce")
    out = e.run(ReplayRequest("ok", 300, 4), DOOR)
    assert (out.http_status, out.checksum) == (200, "ok")


def test_builds_without_the_flag_run_without_it():
    e = small_engine(checksum="enforce", canary="log")
    out = e.run(ReplayRequest("ok", 300, 4), LEAK)       # 0.5.11-0.5.19: no --disaggregation-enable-kv-checksum
    assert (out.http_status, out.checksum, out.canary) == (200, "not in this build", "clean")


def test_injected_corruption_is_caught():
    e = small_engine(checksum="enforce", fault=Fault("corrupt", token=17))
    out = e.run(ReplayRequest("x", 300, 4), DOOR)
    assert (out.http_status, out.stage) == (500, "checksum")
    assert "digest" in out.checksum
    e.check_integrity()                                 # the aborted request's pages were freed
    logged = small_engine(checksum="log", fault=Fault("corrupt", token=17)).run(ReplayRequest("x", 300, 4), DOOR)
    assert logged.http_status == 200 and logged.checksum.startswith("mismatch")   # log mode reports only


def test_dropped_last_batch_is_caught_by_the_digest():
    from kvir.replay.config import NodeLimits, PairConfig
    from kvir.replay.pd_pair import PDPair
    from kvir.replay.models import RecallModel

    cfg = PairConfig(prefill=NodeLimits(640, 4096, 16), decode=NodeLimits(1024, 4096, 16), transfer_batch_cap=4)
    e = PDPair(cfg, RecallModel(), checksum="enforce", fault=Fault("truncate"))
    out = e.run(ReplayRequest("t", 300, 3), DOOR)       # 19 pages in 5 batches; the 5th never lands
    assert out.http_status == 500 and "digest" in out.checksum


def test_a_page_digest_would_catch_the_stub_but_no_build_with_one_transfers_it():
    """The checksum digests pages: prefill the pages it sends, decode those of its own prompt length, so the
    stub's one page never matches decode's 44 (kvir's proposal with the checksum, forced past its own
    bootstrap check). The builds that have the checksum (0.5.21+) reject the stub at the door first."""
    from dataclasses import replace

    forced = replace(KVIR_PROPOSAL, name="kvir-forced", over_long="forwarded-transferred", http_status=200,
                     decode_checks_token_count=False, kernel_checks_ownership=False)
    e = small_engine(checksum="enforce")
    e.run(A)
    out = e.run(V, forced)
    assert (out.http_status, out.stage) == (500, "checksum")
    assert out.checksum == "mismatch: the sender digested 1 page(s), decode 44 (a 700-token prompt)"
    assert e.run(V, DOOR).stage == "prefill-door"


def test_canary_reports_reads_of_slots_the_request_did_not_write():
    e = small_engine(canary="log")
    e.run(A)
    clean = e.run(ReplayRequest("n", 200, 5))
    assert (clean.canary, clean.canary_slots) == ("clean", 0)
    out = e.run(V, LEAK)
    assert out.http_status == 200                       # log mode: reported, not stopped
    assert out.canary_slots == 699 and out.canary.startswith("violation")   # slots 1..15 came carried, 16..699 stale
    loud = small_engine(canary="raise")
    loud.run(A)
    stopped = loud.run(V, LEAK)
    assert (stopped.http_status, stopped.stage) == (500, "canary") and stopped.canary_slots == 699
    loud.check_integrity()


@pytest.mark.parametrize("mode", ["zero", "nan", "sentinel"])
def test_freed_page_fill_alone_removes_the_foreign_data_but_not_the_bug(mode):
    e = small_engine(fill=FreedPageFill(mode))
    e.run(A)
    out = e.start(V, LEAK, attribution=True)
    assert out.http_status == 200                       # the leaking build still answers 200
    assert out.owners == []                             # but no slot holds another request's data
    assert out.uninitialised_tokens == 699
    assert e.run(ReplayRequest("V2", 700, 8), DOOR).http_status == 400
    e.check_integrity()


def test_fill_touches_only_the_freed_pages():
    e = small_engine(fill=FreedPageFill("nan"))
    e.start(ReplayRequest("keep", 300, 3))               # still held
    e.run(ReplayRequest("gone", 300, 3))
    k = e.decode_node.pool.k[0]
    held = e.decode.live[e.registry.get("keep")].pages
    for p in held.tolist():
        assert not k[p * 16:(p + 1) * 16].isnan().any()
    assert not k[:16].isnan().any()                     # the reserved page 0 too
