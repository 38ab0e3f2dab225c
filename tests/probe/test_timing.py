"""The timing check with a paired control, against a fake endpoint whose latency depends on a cache:
shared across tenants (indicated, KVIR-P005), per tenant (no cross-tenant effect), none (nothing
measurable). Its verdict stays inconclusive: timing is never proof on its own."""
from __future__ import annotations

import pytest

import kvir
from kvir.probe.timing import sign_flip_p

from .conftest import AppThread
from .fakes import fake_app


def test_sign_flip_exact_values():
    assert sign_flip_p([1.0] * 8) == 1 / 256               # only the observed signs reach the observed sum
    assert sign_flip_p([-1.0] * 8) == 1.0
    assert sign_flip_p([3.0, -1.0, 2.0, 2.0]) == 2 / 16    # sums >= 6: (+,+,+,+) and (+,-,+,+) with -1 flipped
    assert sign_flip_p([]) == 1.0


@pytest.mark.parametrize("cache, finding, says", [("shared", True, "indicated"), ("tenant", False, "no cross-tenant"),
                                                  ("none", False, "no measurable")])
def test_timing_check(cache, finding, says, keys):
    with AppThread(fake_app("ok", cache=cache)) as srv:
        r = kvir.probe(srv.url, checks=("timing",), timing_pairs=6, alpha=0.05, timing_tokens=64, seed=1,
                       progress=False, **keys)
    t = r.check("timing")
    assert t.verdict == "inconclusive" and says in t.reason
    assert bool([f for f in t.findings if f.rule_id == "KVIR-P005"]) is finding
    assert t.stats["pairs"] == 6 and t.stats["smallest_possible_p"] == 1 / 64
    assert r.verdict == "inconclusive"                      # never decided by timing alone
