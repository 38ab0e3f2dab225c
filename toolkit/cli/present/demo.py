"""`kvir demo`'s summary on stderr: one row per stage with what it found, where the fleet, the case and the
reports are, then the commands to run on one's own logs."""
from __future__ import annotations

from typing import Any

from kvir.audit.rules import SEVERITIES
from kvir.cli.present import Col, cell, say, show, stderr, table
from kvir.cli.present.steps import lines


def _value(v: Any) -> str:
    """A stage's result value as words: counts with thousands separators, a mapping as 'key n, key n'."""
    if isinstance(v, dict):
        return ", ".join(f"{k} {_value(n)}" for k, n in sorted(v.items(), key=lambda kv: (-_num(kv[1]), str(kv[0]))))
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return show(v)


def _num(v: Any) -> float:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def stage_text(info: dict) -> str:
    """'affected 155; accounts 68; ...': every result of a stage but its timing and its paths; the audit's
    findings with their severities in the audit's order ('findings 67 (critical 8, high 15, ...)')."""
    info = dict(info)
    by = info.pop("by_severity", None)
    if by is not None and "findings" in info:
        order = [s for s in SEVERITIES if by.get(s)] + sorted(k for k in by if k not in SEVERITIES)
        info["findings"] = f"{info['findings']:,} ({', '.join(f'{s} {by[s]:,}' for s in order) or 'none'})"
    return "; ".join(f"{k.replace('_', ' ')} {_value(v)}" for k, v in info.items() if k not in ("path", "index"))


def print_demo(result) -> None:
    rows = []
    for stage, info in result.stages.items():
        info = dict(info)
        secs = info.pop("seconds", None)
        skipped = info.pop("skipped", None)
        rows.append([stage, show(secs, "{:.1f}"),
                     cell(f"skipped: {skipped}", "yellow") if skipped else stage_text(info)])
    stderr.print(table("kvir demo: the reference incident (KVIR-2026-0001, GLM-5.3)",
                       ("stage", Col("seconds", right=True), Col("result", under=True)), rows))
    say(f"fleet:   {result.fleet}")
    say(f"case:    {result.case}  (affected.csv, accounts.csv, nodes.csv, manifest.json)")
    index = result.case / "reports" / "index.html"
    if index.exists():
        say(f"reports: {index}")
    say("")
    for line in lines("incident.toml"):
        say(line, wrap=False)          # commands to copy: whole lines
