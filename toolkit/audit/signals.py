"""What an engine prints or counts when an exposure mechanism's path is taken or caught: the runtime signals a
mechanism's audit part declares (kvir.audit.plugin.AuditPart.signals). The audit counts some of them as runtime
indicators; `kvir detect` turns every one into detection content (Sigma rules over the lines, Prometheus alerting
rules over the counters), so each signal is written once, with the engine code that emits it.

    LogSignal      one kind of log line: keywords that all appear in it (Sigma keywords), words that must not
    Correlation    signals that together mean more than each alone, grouped by an event field (Sigma correlation)
    CounterAlert   a Prometheus expression over an engine's (or kvir probe's) counters that fires an alert

Also here: what a mechanism says about one node start for a VEX statement (`Configuration`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

LEVELS = ("informational", "low", "medium", "high", "critical")     # Sigma's levels


@dataclass(frozen=True)
class LogSignal:
    signal_id: str                      # stable, kebab-case: the Sigma rule's name
    title: str
    engine: str                         # sglang | vllm | lmcache: the Sigma logsource product
    level: str                          # a Sigma level
    keywords: tuple[str, ...]           # every one is in the line (case-sensitive substrings)
    source: str                         # the wheel file and function that print it, and its first build
    meaning: str                        # what one such line says
    exclude: tuple[str, ...] = ()       # none of these is in the line
    any_of: tuple[str, ...] = ()        # at least one of these is in the line (alternative forms of it)
    alert: bool = True                  # False: only a building block of a Correlation
    fields: tuple[str, ...] = ()        # event fields the line carries that correlations group by

    def __post_init__(self) -> None:
        assert self.level in LEVELS and (self.keywords or self.any_of), self.signal_id


@dataclass(frozen=True)
class Correlation:
    correlation_id: str
    title: str
    level: str
    signals: tuple[str, ...]            # LogSignal ids, all of which must occur
    group_by: tuple[str, ...]           # the event field(s) they share (a request id, the node)
    timespan: str                       # Sigma timespan, e.g. "1h"
    meaning: str

    def __post_init__(self) -> None:
        assert self.level in LEVELS and len(self.signals) >= 2, self.correlation_id


@dataclass(frozen=True)
class CounterAlert:
    alert: str                          # Prometheus alert name (CamelCase)
    severity: str                       # critical | high | medium | low (kvir's severities)
    expr: str                           # PromQL
    summary: str
    source: str                         # where the counter is declared and incremented (wheel file, function)
    for_: str = "0m"
    metrics: tuple[str, ...] = ()       # the series the expression reads, as exposed (with _total)


@dataclass(frozen=True)
class Signals:
    """A mechanism's runtime signals (empty tuples: it has none of that kind)."""

    lines: tuple[LogSignal, ...] = ()
    correlations: tuple[Correlation, ...] = ()
    counters: tuple[CounterAlert, ...] = ()
    notes: tuple[str, ...] = field(default=())   # what the mechanism's signals cannot show


@dataclass(frozen=True)
class Configuration:
    """Whether a node start runs the configuration in which a mechanism's defect can be triggered: `runs` True
    (it does), False (it does not: `justification` is the VEX one), None (the evidence does not say)."""

    runs: bool | None
    because: str
    justification: str | None = None    # a CSAF/OpenVEX justification label when runs is False
