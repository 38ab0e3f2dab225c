"""The probe's vocabulary: verdicts, exit statuses, the rules its findings are reported under (the same ids in
JSON, SARIF and the case) and the catalogue of checks.

The checks and most rules are the mechanisms' (kvir.probe.plugin.ProbePart: each mechanism's checks and the
rules they report under); the one rule here is discovery's, whatever the mechanism. The catalogue is read
from the registry when asked (`checks()`, `rules()`), never at import: the mechanisms' parts import this.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EXPOSED, NOT_EXPOSED, INCONCLUSIVE = "exposed", "not exposed", "inconclusive"
EXIT = {NOT_EXPOSED: 0, EXPOSED: 1, INCONCLUSIVE: 3}


@dataclass(frozen=True)
class Rule:
    rule_id: str
    name: str
    severity: str            # critical, high, medium, low
    title: str
    help: str


# what discovery finds, before and whatever the checks
DISCOVERY_RULES = (
    Rule("KVIR-P006", "server-info-secret", "high", "The server's info endpoint shows a secret field",
         "The info route lists a non-empty secret (the probe kept only its name). Restrict the route or "
         "unset the argument."),
)


def checks() -> tuple[Any, ...]:
    """Every registered mechanism's checks (kvir.probe.plugin.ProbeCheck), in registration order: the order a
    run takes them in. A name used twice is a KvirError."""
    from kvir.core.errors import KvirError
    from kvir.spec.mechanism import mechanisms

    out: dict[str, Any] = {}
    for m in mechanisms():
        for c in m.part("probe").checks:
            if c.name in out:
                raise KvirError(f"probe check {c.name!r} is defined twice (mechanism {m.name!r} and another)")
            out[c.name] = c
    return tuple(out.values())


def check(name: str) -> Any | None:
    """The registered check `name` (None: no mechanism has one of that name)."""
    return next((c for c in checks() if c.name == name), None)


def default_checks() -> tuple[str, ...]:
    """The checks a run takes when none are named."""
    return tuple(c.name for c in checks() if c.default)


def rules() -> tuple[Rule, ...]:
    """Discovery's rule and every registered mechanism's, ordered by id; an id used twice is a KvirError."""
    from kvir.core.errors import KvirError
    from kvir.spec.mechanism import mechanisms

    out = {r.rule_id: r for r in DISCOVERY_RULES}
    for m in mechanisms():
        for r in m.part("probe").rules:
            if r.rule_id in out:
                raise KvirError(f"probe rule {r.rule_id} is defined twice (mechanism {m.name!r} and another)")
            out[r.rule_id] = r
    return tuple(sorted(out.values(), key=lambda r: r.rule_id))


def rule(rule_id: str) -> Rule:
    for r in rules():
        if r.rule_id == rule_id:
            return r
    raise KeyError(rule_id)
