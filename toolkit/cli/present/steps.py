"""The first steps on one's own incident: what `kvir init` says next and what `kvir demo` ends with (one list,
so the two never disagree). Each line fits 80 columns for a short spec path; commands are whole lines, so
they can be copied."""
from __future__ import annotations

import shlex
from pathlib import Path

WIDTH = 80


def commands(spec: Path | str) -> list[tuple[str, str]]:
    """(command, what it gives) in the order a responder runs them: replay reads the audit's node builds,
    the report reads every stage."""
    s = shlex.quote(str(spec))
    return [(f"kvir triage -i {s} -o case LOGS...", "affected responses, accounts"),
            ("kvir audit STARTUP_LOGS... --case case", "each node's pool vs context"),
            ("kvir replay --case case", "whose data each one read"),
            ("kvir report --case case", "documents in case/reports/")]


def lines(spec: Path | str, *, init: bool = False, fill: str = "") -> list[str]:
    """The steps as terminal lines: after `kvir init` (the spec is written; `fill`: the mechanism's own
    values to edit, e.g. its table), or from scratch (the demo)."""
    cmds = commands(spec)
    if not init:
        cmds = [(f"kvir init {shlex.quote(str(spec))}", "a commented spec to fill in")] + cmds
    width = max(len(c) for c, _ in cmds)
    steps = [f"  {c.ljust(width)}  # {what}" for c, what in cmds]
    if max(map(len, steps)) > WIDTH:       # a long spec path: each comment on its own line, above its command
        steps = [line for c, what in cmds for line in (f"  # {what}", f"  {c}")]
    if not init:
        return ["On your own incident's logs:"] + steps
    what = ", ".join(x for x in ("models", "window", fill, "[[accounts]]") if x)
    head = f"next: edit {spec} ({what}), then:"
    if len(head) > WIDTH:
        head = f"next: edit {spec}\n  ({what}), then:"
    return head.split("\n") + steps
