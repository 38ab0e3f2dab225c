"""Audit results as JSON (machine output) and as rich tables on stderr (for people).

Everything shown comes from parsed values (numbers, flags, node names, file:line); no log line text is
printed. Node names and versions come from logs or an inventory, so they are escaped for rich markup.
"""
from __future__ import annotations

import json
import math
from typing import Any

from rich.markup import escape
from rich.table import Table

from kvir.audit.rules import FIXED_SGLANG, SEVERITIES

MAX_PROBLEM_ROWS = 12
_SEV_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan"}


def _records(df) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records", date_format="iso", date_unit="us")) if len(df) else []


def to_json(result) -> dict[str, Any]:
    from kvir import __version__

    return {
        "kvir_version": __version__,
        "fixed_sglang": FIXED_SGLANG,
        "summary": summary(result),
        "inputs": result.inputs,
        "node_configs": _records(result.node_configs),
        "findings": _records(result.findings),
        "runtime_indicators": _records(result.runtime_indicators),
        "node_exposure": _records(result.node_exposure),
        "problems": _records(result.problems),
    }


def summary(result) -> dict[str, Any]:
    f = result.findings
    return {
        "files": len(result.files),
        "node_starts": len(result.node_configs),
        "nodes": int(result.node_configs["node"].nunique()) if len(result.node_configs) else 0,
        "findings": {s: int(((f["severity"] == s) & (f["status"] == "fail")).sum()) for s in SEVERITIES},
        "unknown": {s: int(((f["severity"] == s) & (f["status"] == "unknown")).sum()) for s in SEVERITIES},
        "problems": len(result.problems),
        "seconds": round(result.seconds, 3),
    }


def _v(x: Any, fmt: str = "{}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or str(x) in ("NaT", "<NA>", "nan"):
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    try:
        return fmt.format(x)
    except (ValueError, TypeError):
        return str(x)


def _ts(x: Any) -> str:
    s = _v(x)
    return s if s == "-" else x.strftime("%Y-%m-%d %H:%M:%SZ")


def _flag(x: Any) -> str:
    s = _v(x)
    return "[dim]?[/]" if s == "-" else ("[green]on[/]" if s == "yes" else "[red]off[/]" if s == "no" else escape(s))


def print_audit(result, console=None, current_only: bool = False) -> None:
    from kvir.core.progress import stderr

    out = console or stderr
    nc = result.node_configs
    if current_only and len(nc):
        nc = nc[nc["is_current"]]
    t = Table(title="Node starts (pool vs context from the start-up logs; ? = not in the evidence)", title_justify="left")
    for c in ("node", "role", "start (UTC)", "engine", "pool", "context", "max input", "checksum", "canary",
              "deferred rel.", "batch cap", "evidence"):
        t.add_column(c, overflow="fold", justify="right" if c in ("pool", "context", "max input", "batch cap") else "left")
    for r in nc.to_dict("records"):
        bad = r.get("holds_context") is False or (str(r.get("holds_context")) == "False")
        pool = _v(r["pool_tokens"], "{:,}")
        t.add_row(escape(str(r["node"])), _v(r["role"]), _ts(r["ts"]),
                  escape(f"{r['engine'] or '-'} {_v(r['version'])}"),
                  f"[red]{pool}[/]" if bad else pool, _v(r["context_len"], "{:,}"), _v(r["max_req_input_len"], "{:,}"),
                  _flag(r["kv_checksum"]), _flag(r["kv_canary"]), _flag(r["deferred_release"]),
                  _v(r["transfer_batch_cap"]), escape(f"{_short(r['evidence_file'])}:{_v(r['evidence_line'])}"))
    out.print(t)

    f = result.findings
    if current_only and len(f):
        f = f[f["is_current"].fillna(True).astype(bool)]
    ft = Table(title=f"Findings: {len(f)} ({_counts_text(f)})", title_justify="left")
    for c in ("severity", "status", "rule", "node", "when (UTC)", "finding", "evidence"):
        ft.add_column(c, overflow="fold")
    for r in f.to_dict("records"):
        style = _SEV_STYLE.get(r["severity"], "")
        ft.add_row(f"[{style}]{r['severity']}[/]", r["status"], f"{r['rule_id']} {r['rule_name']}",
                   escape(_v(r["node"])), _ts(r["ts"]), escape(str(r["message"])),
                   escape(f"{_short(r['evidence_file'])}:{_v(r['evidence_line'])}"))
    out.print(ft)

    ne = result.node_exposure
    if len(ne):
        et = Table(title="Prefill node exposure (pool below context on a build without the fix)", title_justify="left")
        for c in ("node", "state", "from (UTC)", "until (UTC)", "pool", "context", "ended by"):
            et.add_column(c, overflow="fold")
        for r in ne.to_dict("records"):
            until = _ts(r["exposed_until"])
            et.add_row(escape(str(r["node"])), r["state"], _ts(r["exposed_from"]),
                       until if until != "-" or r["state"] == "never exposed" else "[red]still exposed[/]",
                       _v(r["pool_tokens"], "{:,}"), _v(r["context_len"], "{:,}"), escape(_v(r["ended_by"])))
        out.print(et)

    ri = result.runtime_indicators
    if len(ri):
        agg = (ri.groupby(["node", "indicator"], dropna=False)
                 .agg(count=("count", "sum"), first=("first_ts", "min"), last=("last_ts", "max"),
                      hours=("hour", "nunique"), signal=("incident_signal", "max"))
                 .reset_index())
        it = Table(title="Runtime indicators (per node; hourly counts are in runtime_indicators)", title_justify="left")
        for c in ("node", "indicator", "count", "hours", "first (UTC)", "last (UTC)", "signal"):
            it.add_column(c, overflow="fold")
        for r in agg.to_dict("records"):
            it.add_row(escape(str(r["node"])), r["indicator"], f"{int(r['count']):,}", str(r["hours"]),
                       _ts(r["first"]), _ts(r["last"]), "[red]yes[/]" if r["signal"] else "no")
        out.print(it)

    files = result.files
    noted = files[files["note"].notna()] if len(files) else files
    truncated = int(files["truncated"].sum()) if len(files) else 0
    if len(noted) or truncated or int(files["ts_problems"].sum() if len(files) else 0):
        pt = Table(title="Inputs with problems (see audit_problems)", title_justify="left")
        for c in ("file", "lines", "recognised", "truncated", "time problems", "too long", "note"):
            pt.add_column(c, overflow="fold")
        shown = [r for r in files.to_dict("records")
                 if _v(r["note"]) != "-" or r["truncated"] or r["ts_problems"] or r["too_long"]]
        for r in shown[:MAX_PROBLEM_ROWS]:
            pt.add_row(escape(_short(r["path"])), f"{int(r['lines_read']):,}", f"{int(r['recognised']):,}",
                       str(r["truncated"]), str(r["ts_problems"]), str(r["too_long"]), escape(_v(r["note"])))
        if len(shown) > MAX_PROBLEM_ROWS:
            pt.add_row(f"... and {len(shown) - MAX_PROBLEM_ROWS} more file(s)", "", "", "", "", "", "see audit_problems")
        out.print(pt)


def _counts_text(f) -> str:
    parts = []
    for s in SEVERITIES:
        n_fail = int(((f["severity"] == s) & (f["status"] == "fail")).sum())
        n_unk = int(((f["severity"] == s) & (f["status"] == "unknown")).sum())
        if n_fail or n_unk:
            parts.append(f"{s} {n_fail}" + (f" + {n_unk} unknown" if n_unk else ""))
    return ", ".join(parts) or "none"


def _short(path: Any) -> str:
    import os

    s = _v(path)
    if s == "-":
        return s
    try:
        rel = os.path.relpath(s)
        return rel if not rel.startswith("../..") else s
    except ValueError:
        return s
