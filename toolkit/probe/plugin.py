"""The probe stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's probe part (kvir.mechanisms.<m>.probe.PART) has every member below; registration checks
it. The probe stage reaches a mechanism only through `probe_part(name)` and the catalogue of checks
(kvir.probe.rules.checks()), never by its name.

A part contributes checks: each a named test `kvir probe --checks NAME` runs against a live deployment,
with the requests it plans (shown before anything is sent), its verdict's SARIF rule, and whether its
verdict decides the run's. The shared machinery (options, discovery, exact-count prompts, the canary index,
the request log, verdicts, JSON/SARIF, the case) is kvir.probe's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Protocol

from kvir.probe.config import ProbeOptions
from kvir.probe.context import Context
from kvir.probe.learn import ServerFacts
from kvir.probe.result import CheckResult
from kvir.probe.rules import Rule
from kvir.spec.mechanism import mechanism


@dataclass(frozen=True)
class PlanPhase:
    """What a check will send, for the plan: its generation requests, one line on them, and the /tokenize
    counts it needs beyond the shared ones (calibration and one per boundary length)."""

    requests: int
    what: str
    tokenize: int = 0


@dataclass(frozen=True)
class ProbeCheck:
    name: str                                            # as --checks takes it, e.g. "length"
    rule_id: str                                         # the SARIF rule its verdict is reported under
    title: str                                           # that rule's description: what passing means
    help: str                                            # its paragraph of `kvir probe --help`
    run: Callable[[Context], Awaitable[CheckResult]]     # the check (a CheckResult named `name`)
    plan: Callable[[ProbeOptions, ServerFacts], PlanPhase]   # facts: what is known before it runs
    default: bool = False                                # run when --checks names none
    decides: bool = True                                 # False: never decides the run's verdict on its own
    indication: str = ""                                 # decides=False: what its findings suggest
    skipped_note: str = ""                               # said in the result when a run leaves it out


class ProbePart(Protocol):
    """What the probe stage calls on a mechanism."""

    checks: tuple[ProbeCheck, ...]     # in the order a run takes them
    rules: tuple[Rule, ...]            # the rules its checks' findings are reported under (ids unique)


def probe_part(name: str | None) -> ProbePart:
    """The probe part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("probe")
