"""Determinism: the same inputs give byte-identical outputs, ledgers and pools."""
from __future__ import annotations

import numpy as np
import torch

from kvir.replay.attribution import replay_target
from kvir.replay.models import TinyTransformer, TransformerConfig
from kvir.replay.policy import policy_for
from kvir.replay.request import ReplayRequest

from .helpers import small_engine


def _scenario(model=None):
    e = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16, model=model)
    rng = np.random.default_rng(3)
    for i in range(8):
        e.start(ReplayRequest(f"h{i}", int(rng.integers(50, 600)), int(rng.integers(1, 30)), account=f"a{i % 3}",
                              decode_steps=int(rng.integers(0, 3))))
        if i % 2:
            e.finish(f"h{i - 1}")
    for i in range(0, 8, 2):
        e.finish(f"h{i + 1}")
    res = replay_target(e, ReplayRequest("victim", 700, 9, account="v", decode_steps=8), policy_for("0.5.19"),
                        [policy_for("0.5.20"), policy_for("0.5.21")])
    return e, res


def _fingerprint(e, res):
    n = e.decode_node
    return (res.main.tokens, [(o.uid, o.tokens, o.first_token, o.last_token, o.attention_mass, o.epochs, o.carried)
                              for o in res.main.owners],
            [(s.step, s.token, s.top_index, s.top_writer, sorted(s.mass.items())) for s in res.main.steps],
            [(c.owner, c.slots, c.changed_tokens) for c in res.causal],
            sorted((k, o.http_status, o.stage) for k, o in res.outcomes.items()),
            n.pool.k.numpy().tobytes(), n.pool.v.numpy().tobytes(), n.pool.slot_stamp.numpy().tobytes(),
            n.ledger.writer.tobytes(), n.ledger.carried.tobytes(), n.ledger.pos.tobytes(), n.ledger.token.tobytes(), n.ledger.step.tobytes(),
            {k: v[: n.ledger.n_epochs].tobytes() for k, v in n.ledger.ep.items()}, e.registry.rids)


def test_same_workload_same_bytes_recall():
    a, b = _fingerprint(*_scenario()), _fingerprint(*_scenario())
    assert a == b


def test_same_workload_same_bytes_transformer():
    mk = lambda: TinyTransformer(TransformerConfig(seed=11))    # noqa: E731
    a, b = _fingerprint(*_scenario(mk())), _fingerprint(*_scenario(mk()))
    assert a == b
    assert not torch.equal(mk().lm_head, TinyTransformer(TransformerConfig(seed=12)).lm_head)   # the seed matters
