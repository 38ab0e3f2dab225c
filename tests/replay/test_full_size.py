"""The reference incident's full-size pools (prefill 681,280 tokens, decode 2,097,152) on CPU: no per-token
Python objects; a 900 K-token prompt's stub on the leaking builds, its first page carried from the prefill
node, decoded over other requests' 681 K-token tenancies."""
from __future__ import annotations

import pytest

from kvir.replay.attribution import replay_target
from kvir.replay.config import NodeLimits, PairConfig
from kvir.replay.pd_pair import PDPair
from kvir.replay.models import RecallModel
from kvir.replay.policy import policy_for
from kvir.replay.request import ReplayRequest

from .helpers import expected_tokens


@pytest.mark.slow   # ~15 s of CPU at the incident's real pool sizes: .ci/run's slow step
def test_full_size_pools_placeholder_request_reads_the_previous_tenant():
    cfg = PairConfig(prefill=NodeLimits(681_280, 1_048_576, 64), decode=NodeLimits(2_097_152, 1_048_576, 64))
    e = PDPair(cfg, RecallModel())
    assert e.decode_node.pool.k.numel() * 4 * 2 == (2_097_152 + 64) * 128          # 128 B per token (config.py)
    # fill both pools' fresh pages first, so the next allocations merge and reuse released pages
    assert e.run(ReplayRequest("big-1", 681_000, 30, account="acct-1", decode_steps=0)).http_status == 200
    assert e.run(ReplayRequest("big-2", 681_000, 30, account="acct-2", decode_steps=0)).http_status == 200
    assert e.run(ReplayRequest("big-3", 681_273, 30, account="acct-3", decode_steps=0)).http_status == 200
    res = replay_target(e, ReplayRequest("victim", 900_000, 5, account="acct-v", decode_steps=4), policy_for("0.5.19"),
                        [policy_for("0.5.20")], causal_top=1)
    u = res.main
    assert (u.http_status, res.outcomes["sglang-0.5.20"].http_status, u.prefill_tokens, u.transferred_pages) == (200, 400, 1, 1)
    # prefill: 681,280 / 64 = 10,645 pages. big-1 and big-2 take 10,641 each (released pages merge in sorted
    # when the fresh ones run short); big-3 (681,273 tokens, the largest below the limit 681,274) takes all
    # 10,645. The victim's stub then finds no free page, merges and takes page 1: big-3's positions 0..63, so
    # the stub's page carries big-3's positions 1..63.
    # decode: 2,097,152 / 64 = 32,768 pages. big-1 and big-2 hold 681,029 positions (681,000 + 29 decode
    # writes) = 10,642 pages, big-3 681,302 = 10,646: 31,930 fresh pages used, 838 left. The victim needs
    # ceil(900,000 / 64) = 14,063, so the released pages are merged and sorted and it takes pages 1..14,063:
    # page 1 receives the stub's page, pages 2..10,642 hold big-1's positions 64..681,028, the rest of page
    # 10,642 was never written, and big-2's pages follow from its position 0.
    names = [(e.registry.rid(o.uid), o.tokens, o.first_token, o.last_token, o.carried) for o in u.owners]
    assert names[0] == ("big-3", 63, 1, 63, 63)                   # decode steps 1..4 read slots 1..4: big-3's
    assert names[1] == ("big-1", 681_028 - 63, 64, 681_028, 0)
    assert names[2][0] == "big-2" and names[2][2] == 0
    assert u.tokens[1:] == expected_tokens("big-3", 1, 4)
    assert res.causal[0].owner == e.registry.get("big-3") and res.causal[0].changed_tokens == 4
    e.check_integrity()
