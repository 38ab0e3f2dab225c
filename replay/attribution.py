"""Replaying one target request under several builds, with attribution and a causal check.

    replay_target(pair, req, production=policy_for("0.5.19"), others=[policy_for("0.5.20")])
        1. each other build (or kvir's proposal), as a counterfactual (undone afterwards), attributed
        2. the production build (the one the node ran) with attribution, as a counterfactual: every
           attended slot traced to its last writer (ledger), softmax mass per writer per decode step
        3. causal check per top foreign owner, as a counterfactual: that owner's slots in the target's
           range are overwritten with the owner's finite sentinel (models.ReplayModel.sentinel) right
           before decoding; if the output changes, the owner's data caused it
        4. the production build for real (the node's later requests see its pages); its output must equal
           step 2's bit for bit (a determinism check on every target)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from kvir.replay.ledger import Registry
from kvir.replay.pd_pair import PDPair
from kvir.replay.policy import Policy
from kvir.replay.request import Outcome, ReplayRequest


@dataclass
class CausalResult:
    owner: int                 # writer uid whose slots were swapped for sentinels
    slots: int                 # how many of the target's slots that was
    changed_tokens: int        # output tokens that differ from the unswapped run
    first_changed: int | None  # the first differing output index


@dataclass
class TargetResult:
    production: Policy                         # the build the node ran
    outcomes: dict[str, Outcome]               # policy name -> its (attributed) outcome; production's from step 2
    causal: list[CausalResult] = field(default_factory=list)

    @property
    def main(self) -> Outcome:
        return self.outcomes[self.production.name]


def causal_check(pair: PDPair, req: ReplayRequest, owner: int, baseline: list[int],
                 policy: Policy) -> CausalResult:
    swapped = {"n": 0}

    def swap(pd: PDPair, st) -> None:
        node = pd.decode_node
        slots = node.slots(st.pages, 0, st.prompt_len)
        mine = torch.as_tensor(node.ledger.writer[slots.cpu().numpy()] == owner, device=slots.device)
        sel = slots[mine]
        swapped["n"] = int(sel.numel())
        if sel.numel():
            k, v = pd.model.sentinel(owner)
            node.overwrite(sel, k, v)

    with pair.counterfactual():
        out = pair.start(req, policy, before_decode=swap)
    diff = [i for i, (a, b) in enumerate(zip(out.tokens, baseline)) if a != b]
    diff += list(range(min(len(out.tokens), len(baseline)), max(len(out.tokens), len(baseline))))
    return CausalResult(owner, swapped["n"], len(diff), min(diff) if diff else None)


def can_admit(pair: PDPair, req: ReplayRequest) -> bool:
    """Whether the decode node has pages for the request now (or it is refused before needing any)."""
    need = pair.decode.pages_needed(req.prompt_len + max(0, req.completion_len - 1))
    return pair.decode_node.alloc.free_pages_count >= need or pair.decode.validate(req.prompt_len) is not None \
        or req.prompt_len >= (req.prefill_limits or pair.config.prefill).context_len


def replay_target(pair: PDPair, req: ReplayRequest, production: Policy, others: list[Policy] = (), *,
                  causal_top: int = 3) -> TargetResult:
    outcomes: dict[str, Outcome] = {}
    for p in others:
        if p.name == production.name:
            continue
        with pair.counterfactual():
            outcomes[p.name] = pair.run(req, p, attribution=True)
    with pair.counterfactual():
        probe = pair.start(req, production, attribution=True)
    causal = []
    if probe.served:
        for o in probe.owners[:causal_top]:
            causal.append(causal_check(pair, req, o.uid, probe.tokens, production))
    main = pair.start(req, production)
    if main.tokens != probe.tokens or main.http_status != probe.http_status:
        raise AssertionError(f"{req.rid}: the replay is not deterministic (attributed and production runs differ)")
    outcomes[production.name] = probe
    return TargetResult(production, outcomes, causal)


def foreign_token_runs(out: Outcome, registry: Registry) -> dict[int, list[int]]:
    """Output tokens that reproduce a foreign writer's token (the recall model's visible leak), by writer
    (uids of the pair's registry)."""
    runs: dict[int, list[int]] = {}
    me = registry.get(out.rid)
    for rec in out.steps:
        if rec.top_writer >= 0 and rec.top_writer != me and rec.token == rec.top_token:
            runs.setdefault(rec.top_writer, []).append(rec.token)
    return runs


def exposure_rows(out: Outcome, reg: Registry) -> list[dict]:
    """One row per foreign owner: request, account, tokens, positions, mass (replay_results.foreign_owners)."""
    return [{"request_id": reg.rid(o.uid), "account_id": reg.account(o.uid), "tokens": o.tokens,
             "first_token": o.first_token, "last_token": o.last_token, "attention_mass": float(o.attention_mass)}
            for o in out.owners]


__all__ = ["CausalResult", "TargetResult", "causal_check", "can_admit", "replay_target", "foreign_token_runs",
           "exposure_rows"]
