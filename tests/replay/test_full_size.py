"""The reference incident's full-size pools (prefill 681,280 tokens, decode 2,097,152) on CPU: no per-token
Python objects, a 700 K-token placeholder request decoded over another request's 600 K tokens."""
from __future__ import annotations

from kvir.replay.attribution import replay_target
from kvir.replay.config import EngineConfig, NodeLimits
from kvir.replay.engine import PDEngine
from kvir.replay.models import RecallModel
from kvir.replay.request import ReplayRequest

from .helpers import expected_tokens


def test_full_size_pools_placeholder_request_reads_the_previous_tenant():
    cfg = EngineConfig(prefill=NodeLimits(681_280, 1_048_576, 64), decode=NodeLimits(2_097_152, 1_048_576, 64))
    e = PDEngine(cfg, RecallModel())
    assert e.decode_node.pool.k.numel() * 4 * 2 == (2_097_152 + 64) * 128          # 128 B per token (config.py)
    # fill the decode pool's fresh pages first, so the next allocations merge and reuse released pages
    assert e.run(ReplayRequest("big-1", 681_000, 30, account="acct-1", decode_steps=0)).http_status == 200
    assert e.run(ReplayRequest("big-2", 681_000, 30, account="acct-2", decode_steps=0)).http_status == 200
    assert e.run(ReplayRequest("big-3", 681_000, 30, account="acct-3", decode_steps=0)).http_status == 200
    res = replay_target(e, ReplayRequest("victim", 900_000, 5, account="acct-v", decode_steps=4), causal_top=1)
    u, p = res.unpatched, res.patched
    assert (u.http_status, p.http_status, u.prefill_tokens) == (200, 400, 1)
    # 2,097,152 / 64 = 32,768 pages. big-1..3 each hold 681,029 KV positions (681,000 + 29 decode writes) =
    # ceil(681,029 / 64) = 10,642 pages: 31,926 fresh pages used, 842 left. The victim needs
    # ceil(900,000 / 64) = 14,063 > 842, so the released pages are merged and sorted and it takes pages
    # 1..14,063: big-1's 10,642 pages (its positions 1..681,028 after the victim's own slot 0), then big-2's
    names = [(e.registry.rid(o.uid), o.tokens, o.first_token, o.last_token) for o in u.owners]
    assert names[0] == ("big-1", 681_028, 1, 681_028)
    assert names[1][0] == "big-2" and names[1][2] == 0
    assert u.tokens[1:] == expected_tokens("big-1", 1, 4)
    assert res.causal[0].changed_tokens == 4
    e.check_integrity()
