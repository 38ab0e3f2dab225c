"""The audit rules' shape and catalogue: stable ids, what each checks, its default severity, a one-sentence fix,
and the exposure mechanism whose audit part defines it (kvir.audit.plugin.AuditPart.rules).

Each mechanism writes its own rules (kvir.mechanisms.<m>.audit); this module holds what they share and the
catalogue over every registered mechanism, read lazily from the registry: `RULES` (every rule, SARIF lists
them all) and `RULES_BY_ID` (id -> rule; `.mechanism` says whose it is, so a stage that reads findings keeps
the case's mechanism's). The catalogue is loaded into the table `audit_rules` for the findings queries.
Rule ids never change meaning: add a new id instead of repurposing one.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from kvir.rules.builds import TABLE as BUILDS

SEVERITIES = ("critical", "high", "medium", "low")
SEVERITY_RANK = {s: len(SEVERITIES) - i for i, s in enumerate(SEVERITIES)}   # critical 4 ... low 1
# The first SGLang build whose code never transfers the over-long stub (kvir.rules.builds, read from the
# wheels): recorded with every audit (JSON, manifest) as the build table's own edge.
FIXED_SGLANG = BUILDS.first_fixed
# vLLM's default KV block size (tokens per block) when neither the log nor the inventory gives one.
VLLM_DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class Rule:
    rule_id: str
    name: str                 # short kebab-case name (SARIF rule name)
    title: str                # one line: what is wrong
    severity: str             # the default; the findings query may raise or lower it by role
    fix: str                  # one sentence an operator can act on
    help: str                 # why it matters, where the evidence comes from
    mechanism: str            # the registered mechanism whose audit part defines it: its incidents run it

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity


def all_rules() -> tuple[Rule, ...]:
    """Every registered mechanism's rules, in registration order; an id used twice is a KvirError."""
    from kvir.core.errors import KvirError
    from kvir.spec.mechanism import mechanisms

    out: dict[str, Rule] = {}
    for m in mechanisms():
        for r in m.part("audit").rules:
            if r.rule_id in out:
                raise KvirError(f"audit rule {r.rule_id} is defined twice ({out[r.rule_id].mechanism}, {m.name})")
            out[r.rule_id] = r
    return tuple(out.values())


class _Rules(Sequence[Rule]):
    """`RULES`: every registered rule, read from the registry when first looked at (the mechanisms' parts
    import this module, so it cannot ask them while it loads)."""

    @overload
    def __getitem__(self, i: int) -> Rule: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Rule]: ...

    def __getitem__(self, i):
        return all_rules()[i]

    def __len__(self) -> int:
        return len(all_rules())


class _RulesById(Mapping[str, Rule]):
    """`RULES_BY_ID`: rule id -> Rule over every registered mechanism (read as RULES is)."""

    def __getitem__(self, rule_id: str) -> Rule:
        for r in all_rules():
            if r.rule_id == rule_id:
                return r
        raise KeyError(rule_id)

    def __iter__(self) -> Iterator[str]:
        return iter([r.rule_id for r in all_rules()])

    def __len__(self) -> int:
        return len(all_rules())


RULES: Sequence[Rule] = _Rules()
RULES_BY_ID: Mapping[str, Rule] = _RulesById()
