"""The timing check with a paired control, against a fake endpoint whose latency depends on a cache:
shared across tenants (indicated, KVIR-P005), per tenant (no cross-tenant effect), none (nothing
measurable). Its verdict stays inconclusive: timing is never proof on its own."""
from __future__ import annotations

import pytest

import kvir
from kvir.mechanisms.prefix_cache.probe_timing import sign_flip_p

from .conftest import AppThread
from .fakes import VirtualClock, fake_app


def test_sign_flip_exact_values():
    assert sign_flip_p([1.0] * 8) == 1 / 256               # only the observed signs reach the observed sum
    assert sign_flip_p([-1.0] * 8) == 1.0
    assert sign_flip_p([3.0, -1.0, 2.0, 2.0]) == 2 / 16    # sums >= 6: (+,+,+,+) and (+,-,+,+) with -1 flipped
    assert sign_flip_p([]) == 1.0


@pytest.mark.parametrize("cache, finding, says", [("shared", True, "indicated"), ("tenant", False, "no cross-tenant"),
                                                  ("none", False, "no measurable")])
def test_timing_check(cache, finding, says, keys, monkeypatch):
    """Latencies come from a clock the fake advances (0.08 s uncached, 0.01 s cached), never from the wall
    clock: the verdicts are exact on any machine, however loaded (this failed once on a busy 2-core VM)."""
    clock = VirtualClock()
    monkeypatch.setattr("kvir.probe.http.clock", clock)
    with AppThread(fake_app("ok", cache=cache, clock=clock)) as srv:
        r = kvir.probe(srv.url, checks=("timing",), timing_pairs=6, alpha=0.05, timing_tokens=64, seed=1,
                       progress=False, **keys)
    t = r.check("timing")
    assert t.verdict == "inconclusive" and says in t.reason
    assert bool([f for f in t.findings if f.rule_id == "KVIR-P005"]) is finding
    assert t.stats["pairs"] == 6 and t.stats["smallest_possible_p"] == 1 / 64
    assert r.verdict == "inconclusive"                      # never decided by timing alone
    cold, cross = {"shared": (0.08, 0.01), "tenant": (0.08, 0.08), "none": (0.0, 0.0)}[cache]
    assert t.stats["median_cold_s"] == pytest.approx(cold) and t.stats["median_cross_s"] == pytest.approx(cross)
