"""Prometheus alerting rules: the mechanisms' counter alerts (kvir.audit.signals.CounterAlert, over the engines'
own counters) and the alerts over kvir probe's verdict metrics (kvir.probe.metrics, written by a scheduled
`kvir probe --metrics`). `promtool check rules` and `promtool test rules` accept the file (tests/detect/).
"""
from __future__ import annotations

from typing import Any

from kvir.audit.signals import CounterAlert

PROBE_ALERTS = (
    CounterAlert("KvirProbeExposed", "critical", 'max by (endpoint, check) (kvir_probe_check_verdict{verdict="exposed"}) == 1',
                 "kvir probe found the deployment exposed: one tenant's prompt or KV reached another tenant",
                 "kvir.probe.metrics (kvir probe --metrics), written after every run",
                 metrics=("kvir_probe_check_verdict",)),
    CounterAlert("KvirProbeInconclusive", "medium", 'max by (endpoint) (kvir_probe_verdict{verdict="inconclusive"}) == 1',
                 "kvir probe could not decide (endpoint failing, rate-limited, budget spent) for two hours",
                 "kvir.probe.metrics (kvir probe --metrics)", for_="2h", metrics=("kvir_probe_verdict",)),
    CounterAlert("KvirProbeStale", "medium", "time() - max by (endpoint) (kvir_probe_last_run_timestamp_seconds) > 7200",
                 "the scheduled kvir probe has not finished a run for two hours",
                 "kvir.probe.metrics (kvir probe --metrics)", metrics=("kvir_probe_last_run_timestamp_seconds",)),
)


def _rule(a: CounterAlert, group: str) -> dict[str, Any]:
    return {"alert": a.alert, "expr": a.expr, "for": a.for_,
            "labels": {"severity": a.severity, "kvir_source": group},
            "annotations": {"summary": a.summary, "description": f"{a.summary}. Source: {a.source}."}}


def rules_file(groups: dict[str, tuple[CounterAlert, ...]]) -> dict[str, Any]:
    """A Prometheus rule file: one group per source (a mechanism, the shared table, kvir probe)."""
    return {"groups": [{"name": f"kvir-{name}", "rules": [_rule(a, name) for a in alerts]}
                       for name, alerts in groups.items() if alerts]}
