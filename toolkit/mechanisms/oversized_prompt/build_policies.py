"""Which SGLang build `kvir serve --build` stands for, and the replay policy that reproduces it: ONE table,
built from kvir.rules.builds (what each build range does with an over-long prompt in PD mode, read from
the wheels) and kvir.replay.policy (one policy per range: policies are builds).

    0.5.19   0.5.11-0.5.19  the 1-token stub is forwarded and its first KV page transferred; decode reads
                            pages nobody wrote for it: HTTP 200 (the incident)
    0.5.20   0.5.20         the stub is retired after its forward, without a transfer: HTTP 400
    0.5.21   0.5.21-        rejected at the bootstrap door: HTTP 400

Aliases are the replay's: leaking (0.5.19), fixed (the first build that never transfers the stub, 0.5.20),
door (the first that rejects it at the door, 0.5.21). kvir-proposal (kvir's own hardening, not a build)
is served too, under that name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kvir.core.errors import KvirError
from kvir.rules.builds import TABLE


@dataclass(frozen=True)
class Build:
    name: str                      # the SGLang build it stands for (the row's newest build read)
    builds: str                    # every build the row covers
    leaks: bool
    behaviour: str                 # what it does with an over-long prompt in PD mode
    policy_name: str
    evidence: str

    @property
    def policy(self) -> Callable[[], object]:
        """-> kvir.replay.policy.Policy (imported lazily: torch)."""
        def make():
            from kvir.replay.policy import POLICIES

            return POLICIES[self.policy_name]
        return make


def _build(row) -> Build:
    return Build(row.policy.removeprefix("sglang-"), row.label, bool(row.transferred), row.summary, row.policy,
                 row.evidence.text())


BUILDS: tuple[Build, ...] = tuple(_build(r) for r in TABLE.over_long_rows) + (
    Build("kvir-proposal", "none", False, "kvir's proposal (no build has it): refused at bootstrap admission against "
          "max_req_input_len; a decode token-count check; an owner-checking decode kernel", "kvir-proposal",
          "kvir.replay.policy.KVIR_PROPOSAL"),)
ALIASES = {"leaking": TABLE.leaking_policy.removeprefix("sglang-"),
           "fixed": TABLE.policy_for(TABLE.first_fixed).removeprefix("sglang-"),
           "door": TABLE.policy_for(TABLE.first_door_reject).removeprefix("sglang-"),
           "proposal": "kvir-proposal"}


def resolve_build(name: str) -> Build:
    """A build by its row name, an alias (leaking, fixed, door) or any SGLang version (0.5.12, v0.5.23,
    sglang-0.5.22): the row of kvir.rules.builds that covers it."""
    key = ALIASES.get(name.strip().lower(), name.strip())
    by_policy = {b.policy_name: b for b in BUILDS}
    for b in BUILDS:
        if key in (b.name, b.policy_name):
            return b
    from kvir.rules.builds import normalise, version_key

    v = normalise(key.removeprefix("sglang-"))
    if v is not None:
        pol = TABLE.policy_for(v)
        if pol is None and version_key(v) < version_key(TABLE.read[0]):
            pol = TABLE.leaking_policy                 # older than every build read: the first row's behaviour
        if pol is not None:
            return by_policy[pol]
    names = ", ".join([b.name for b in BUILDS] + sorted(ALIASES))
    raise KvirError(f"unknown build {name!r}: one of {names}, or an SGLang version such as 0.5.18")
