"""The trigger is defined once in Python (kvir.rules.trigger) and once in SQL (queries/macros.sql): they agree."""
from __future__ import annotations

import itertools

import pytest

from kvir.case.store import connect
from kvir.rules.trigger import Trigger, max_req_input_len, threshold

# The incident, hand-worked: min(1,048,575, 681,279) - 5 = 681,274; the public rule counts > 681,280.
INCIDENT = Trigger(681_280, 1_048_576, "public")


def test_incident_numbers_worked_by_hand():
    assert INCIDENT.engine_limit == 681_274
    assert INCIDENT.threshold() == 681_281 and INCIDENT.threshold("engine") == 681_274
    assert not INCIDENT.hit(681_280) and INCIDENT.hit(681_281)
    assert INCIDENT.hit(681_274, "engine") and not INCIDENT.hit(681_273, "engine")
    assert INCIDENT.condition() == "more than 681,280 tokens"
    assert INCIDENT.complement() == "681,280 tokens or fewer"
    assert INCIDENT.condition("engine") == "681,274 tokens or more"
    assert INCIDENT.complement("engine") == "fewer than 681,274 tokens"
    # a pool that holds the context: the context bounds the engine limit
    assert max_req_input_len(131_072, 2_042_880) == 131_066
    assert max_req_input_len(None, 681_280) == 681_274 and max_req_input_len(131_072, None) == 131_066
    assert max_req_input_len(None, None) is None
    with pytest.raises(ValueError):
        threshold("strict", 1, 1)


def test_sql_macros_agree_with_python():
    con = connect(":memory:")
    values = [None, 1, 2, 7, 64, 681_279, 681_280, 681_281, 1_048_575, 1_048_576, 2_042_880]
    grid = [(c, p) for c, p in itertools.product(values, values)]
    rows = con.execute(
        "SELECT c, p, kvir_max_req_input_len(c, p), kvir_rule_threshold('public', p, c), "
        "kvir_rule_threshold('engine', p, c) FROM (SELECT unnest($c) AS c, unnest($p) AS p)",
        {"c": [c for c, _ in grid], "p": [p for _, p in grid]}).fetchall()
    assert len(rows) == len(grid)
    for c, p, limit, public, engine in rows:
        assert limit == max_req_input_len(c, p), (c, p)
        assert engine == limit
        assert public == (None if p is None else threshold("public", p, c)), (c, p)
        if p is not None:
            assert engine == threshold("engine", p, c)


def test_triage_binds_the_numbers_not_a_threshold():
    assert INCIDENT.query_params() == {"pool_tokens": 681_280, "context_tokens": 1_048_576, "rule": "public"}
