"""Findings, per-check verdicts and the overall verdict of a probe run.

Verdicts: exposed / not exposed / inconclusive. Overall: exposed when a deciding check is (each check says
whether it decides, kvir.probe.plugin.ProbeCheck.decides); not exposed only when every deciding one is;
inconclusive otherwise. A check that never decides on its own (timing) keeps the overall verdict from "not
exposed" when it has findings (inconclusive then), and its absence proves nothing.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kvir.core.secrets import Redactor
from kvir.probe.rules import EXIT, EXPOSED, INCONCLUSIVE, NOT_EXPOSED, Rule, check, rule  # noqa: F401 (re-exported)


@dataclass
class Finding:
    rule_id: str
    check: str
    message: str                                  # ids, lengths, statuses and hashes only
    request_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        return rule(self.rule_id).severity

    def as_json(self) -> dict:
        return {"rule_id": self.rule_id, "name": rule(self.rule_id).name, "severity": self.severity,
                **asdict(self)}


@dataclass
class CheckResult:
    name: str
    verdict: str
    reason: str
    findings: list[Finding] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"name": self.name, "verdict": self.verdict, "reason": self.reason,
                "findings": [f.as_json() for f in self.findings], "items": self.items, "stats": self.stats}


def overall(checks: list[CheckResult]) -> tuple[str, str]:
    def decides(c: CheckResult) -> bool:
        known = check(c.name)
        return known is None or known.decides

    deciding = [c for c in checks if decides(c)]
    if not deciding:
        names, one = [c.name for c in checks], len(checks) == 1
        return INCONCLUSIVE, (f"only the {' and '.join(names)} check{'' if one else 's'} ran, and "
                              f"{'it never decides on its own' if one else 'they never decide on their own'}")
    exposed = [c.name for c in deciding if c.verdict == EXPOSED]
    if exposed:
        return EXPOSED, f"{' and '.join(exposed)} check{'s' if len(exposed) > 1 else ''}: exposed"
    open_ = [c.name for c in deciding if c.verdict != NOT_EXPOSED]
    if open_:
        return INCONCLUSIVE, f"{', '.join(open_)} check{'s' if len(open_) > 1 else ''} inconclusive"
    hinted = next((c for c in checks if not decides(c) and c.findings), None)
    if hinted is not None:
        return INCONCLUSIVE, f"no exposure seen, but {check(hinted.name).indication}"
    return NOT_EXPOSED, f"{' and '.join(c.name for c in deciding)} checks: not exposed"


@dataclass
class ProbeResult:
    """A probe run: what was planned and learned, each check's verdict, the overall verdict, the log."""

    options: dict[str, Any]
    plan: dict[str, Any]
    facts: dict[str, Any] | None = None
    checks: list[CheckResult] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    verdict: str = INCONCLUSIVE
    reason: str = ""
    run_id: str = ""
    started_at: str = ""
    ended_at: str = ""
    wall_s: float = 0.0
    sent: int = 0                       # HTTP attempts, all of them
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)
    extra_findings: list[Finding] = field(default_factory=list)   # not tied to a check (KVIR-P006)
    http: list[dict] = field(default_factory=list)   # every (path, answer) of the run with its attempts
    failed_first: str | None = None     # no HTTP answer at all, or no 2xx at all: what came back instead
    redactor: Redactor = field(default_factory=Redactor, repr=False, compare=False)   # the run's secrets

    def scrub(self) -> int:
        """Scrub every field built from what the server said (kvir.core.secrets); the number of secrets
        found. Every output (JSON, SARIF, case rows, the terminal) is made from these fields."""
        r, before = self.redactor, self.redactor.count
        for name in ("options", "plan", "facts", "checks", "requests", "reason", "notes", "extra_findings", "http",
                     "failed_first"):
            setattr(self, name, r.scrub(getattr(self, name)))
        return r.count - before

    @property
    def findings(self) -> list[Finding]:
        return [f for c in self.checks for f in c.findings] + self.extra_findings

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    def check(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)

    def as_json(self) -> dict:
        from kvir import __version__

        return self.redactor.obj({"kvir_version": __version__, "run_id": self.run_id, "dry_run": self.dry_run,
                "verdict": self.verdict, "reason": self.reason, "started_at": self.started_at,
                "ended_at": self.ended_at, "wall_s": round(self.wall_s, 3), "requests_sent": self.sent,
                "options": self.options, "plan": self.plan, "server": self.facts,
                "checks": [c.as_json() for c in self.checks],
                "findings": [f.as_json() for f in self.findings], "requests": self.requests, "notes": self.notes,
                "http": self.http, "failed_first": self.failed_first})

    def to_sarif(self) -> dict:
        from kvir.probe.sarif import to_sarif

        return self.redactor.obj(to_sarif(self))
