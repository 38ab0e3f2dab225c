"""The trigger is defined once in Python (kvir.rules.trigger, per engine: kvir.rules.engines) and once in SQL
(queries/macros.sql): they agree, for every engine."""
from __future__ import annotations

import itertools

import pytest

from kvir.case.store import connect
from kvir.rules.engines import NAMES, max_req_input_len
from kvir.rules.trigger import Trigger, threshold

# The reference incident on SGLang, hand-worked: min(1,048,575, 681,279) - 5 = 681,274; public counts > 681,280.
INCIDENT = Trigger(681_280, 1_048_576, "public", "sglang")


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


def test_engines_are_peers():
    # vLLM refuses a prompt of max_model_len tokens or more, whatever the pool (it will not start on a pool
    # below max_model_len): worked from vllm/v1/engine/input_processor.py _validate_prompt_len
    vllm = Trigger(200, 256, "engine", "vllm")
    assert vllm.engine_limit == 256 and vllm.threshold() == 256 and vllm.hit(256) and not vllm.hit(255)
    assert vllm.describe() == "engine: prompt_tokens >= 256 (context, vLLM's max_model_len)"
    assert "SGLang" not in vllm.describe() and "SGLang" not in vllm.describe("public")
    # nobody said which engine: the engine rule is not available, the public rule is
    unknown = Trigger(200, 256, "public")
    assert unknown.engine_limit is None and not unknown.available("engine") and unknown.threshold() == 201
    assert "not available" in unknown.describe("engine")
    with pytest.raises(ValueError, match="not available"):
        unknown.hit(300, "engine")


def test_sql_macros_agree_with_python():
    con = connect(":memory:")
    values = [None, 1, 2, 7, 64, 256, 681_279, 681_280, 681_281, 1_048_575, 1_048_576, 2_042_880]
    grid = [(c, p, e) for c, p, e in itertools.product(values, values, NAMES)]
    rows = con.execute(
        "SELECT c, p, e, kvir_max_req_input_len(c, p), kvir_rule_threshold('public', e, p, c), "
        "kvir_rule_threshold('engine', e, p, c) FROM (SELECT unnest($c) AS c, unnest($p) AS p, unnest($e) AS e)",
        {"c": [c for c, _, _ in grid], "p": [p for _, p, _ in grid], "e": [e for _, _, e in grid]}).fetchall()
    assert len(rows) == len(grid)
    for c, p, e, limit, public, engine in rows:
        assert limit == max_req_input_len(c, p), (c, p)
        assert public == (None if p is None else threshold("public", p, c, e)), (c, p, e)
        if p is not None:
            assert engine == threshold("engine", p, c, e), (c, p, e)
        assert engine == {"sglang": limit, "vllm": c, "unknown": None}[e], (c, p, e)


def test_triage_binds_the_numbers_not_a_threshold():
    assert INCIDENT.query_params() == {"pool_tokens": 681_280, "context_tokens": 1_048_576, "rule": "public",
                                       "engine": "sglang"}
