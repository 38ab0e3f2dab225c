"""`kvir audit`'s tables on stderr: node starts, findings, prefill exposure, runtime indicators, problems.

Everything shown comes from parsed values (numbers, flags, node names, file:line); no log line text."""
from __future__ import annotations

import os
from typing import Any

from rich.text import Text

from kvir.audit.plugin import audit_parts
from kvir.audit.rules import SEVERITIES
from kvir.cli.present import Col, blank, cell, say, show, stderr, table

MAX_PROBLEM_ROWS = 12
SEVERITY_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan"}


def _ts(x: Any) -> str:
    return "-" if blank(x) else x.strftime("%Y-%m-%d %H:%M:%SZ")


def _flag(x: Any) -> Text:
    s = show(x)
    return Text("?", style="dim") if s == "-" else Text("on", style="green") if s == "yes" else \
        Text("off", style="red") if s == "no" else cell(s)


def _where(file: Any, line: Any) -> str:
    return f"{short_path(file)}:{show(line)}"


def short_path(path: Any) -> str:
    s = show(path)
    if s == "-":
        return s
    try:
        rel = os.path.relpath(s)
        return rel if not rel.startswith("../..") else s
    except ValueError:
        return s


def counts_text(f) -> str:
    parts = []
    for s in SEVERITIES:
        n_fail = int(((f["severity"] == s) & (f["status"] == "fail")).sum())
        n_unk = int(((f["severity"] == s) & (f["status"] == "unknown")).sum())
        if n_fail or n_unk:
            parts.append(f"{s} {n_fail}" + (f" + {n_unk} unknown" if n_unk else ""))
    return ", ".join(parts) or "none"


def _settings(r: dict) -> Text:
    """A node start's build, safety flags and evidence: one line of text under its row."""
    out = Text(f"{show(r['engine'])} {show(r['version'])}; ")
    for name, key in (("checksum", "kv_checksum"), ("canary", "kv_canary"), ("deferred release", "deferred_release")):
        out.append(f"{name} ")
        out.append_text(_flag(r[key]))
        out.append(", ")
    out.append(f"transfer batch cap {show(r['transfer_batch_cap'])}; ")
    for part in audit_parts().values():       # what each mechanism judges this start on
        settings = part.start_settings(r)
        for i, (label, value) in enumerate(settings):
            out.append(f"{', ' if i else ''}{label} ")
            out.append_text(_flag(value))
        if settings:
            out.append("; ")
    out.append(_where(r["evidence_file"], r["evidence_line"]))
    return out


def print_audit(result) -> None:
    nc = result.node_configs
    rows = []
    for r in nc.to_dict("records"):
        bad = str(r.get("holds_context")) == "False"
        pool = r["pool_tokens"]
        if show(pool) == "-" and show(r.get("pool_bound_tokens")) != "-":
            pool = f"<= {int(r['pool_bound_tokens']):,}"                 # only a bound (--max-total-tokens, ...)
        rows.append([r["node"], r["role"], _ts(r["ts"]), cell(pool, "red" if bad else ""),
                     r["context_len"], r["max_req_input_len"], _settings(r)])
    stderr.print(table("Node starts (pool vs context from the start-up logs; ? = not in the evidence)",
                       ("node", Col("role", below=True), "start (UTC)", Col("pool", right=True),
                        Col("context", right=True), Col("max input", right=True, below=True),
                        Col("build, flags, evidence", under=True)), rows))

    lacking = [[r["node"], "; ".join(r["missing"])] for r in nc.to_dict("records")
               if r.get("missing") is not None and len(r["missing"])]
    if lacking:
        stderr.print(table("Not in the evidence (excerpts: what they lack is unknown, never assumed)",
                           ("node", "missing"), lacking))

    f = result.findings
    stderr.print(table(f"Findings: {len(f)} ({counts_text(f)})",
                       ("severity", "status", "rule", "node", "when (UTC)", Col("evidence", below=True),
                        Col("finding", under=True)),
                       [[cell(r["severity"], SEVERITY_STYLE.get(r["severity"], "")), r["status"],
                         r["rule_id"], r["node"], _ts(r["ts"]), _where(r["evidence_file"], r["evidence_line"]),
                         f"{r['rule_name']}: {r['message']}"] for r in f.to_dict("records")]))

    ne = result.node_exposure
    if len(ne):
        rows = []
        for r in ne.to_dict("records"):
            until = _ts(r["exposed_until"])
            still = r["state"] != "never exposed" and not r.get("ended")
            if r.get("ended") and until == "-":
                until = "next start (time unknown: no zone)"
            rows.append([r["node"], r["state"], _ts(r["exposed_from"]),
                         cell("still exposed", "red") if still else until, r["pool_tokens"], r["context_len"],
                         r["ended_by"]])
        stderr.print(table("Prefill node exposure (pool below context on a build without the fix)",
                           ("node", "state", "from (UTC)", "until (UTC)", Col("pool", right=True, below=True),
                            Col("context", right=True, below=True), Col("ended by", below=True)), rows))

    ri = result.runtime_indicators
    if len(ri):
        agg = (ri.groupby(["node", "indicator"], dropna=False)
                 .agg(count=("count", "sum"), first=("first_ts", "min"), last=("last_ts", "max"),
                      hours=("hour", "nunique"), signal=("incident_signal", "max"))
                 .reset_index())
        stderr.print(table("Runtime indicators (per node; hourly counts are in runtime_indicators)",
                           ("node", "indicator", Col("count", right=True), Col("hours", right=True),
                            Col("first (UTC)", below=True), Col("last (UTC)", below=True), "signal"),
                           [[r["node"], r["indicator"], int(r["count"]), int(r["hours"]), _ts(r["first"]),
                             _ts(r["last"]), cell("yes", "red") if r["signal"] else "no"]
                            for r in agg.to_dict("records")]))

    files = result.files
    if not len(files):
        return
    shown = [r for r in files.to_dict("records")
             if show(r["note"]) != "-" or r["truncated"] or r["ts_problems"] or r["too_long"]]
    if shown:
        rows = [[short_path(r["path"]), int(r["lines_read"]), int(r["recognised"]), _problems(r)]
                for r in shown[:MAX_PROBLEM_ROWS]]
        stderr.print(table(f"Inputs with problems: {len(shown)} (all of them in the case table audit_problems)",
                           ("file", Col("lines", right=True), Col("recognised", right=True),
                            Col("problems", under=True)), rows))
        if len(shown) > MAX_PROBLEM_ROWS:
            say(f"... and {len(shown) - MAX_PROBLEM_ROWS} more file(s): see audit_problems", style="dim")


def _problems(r: dict) -> str:
    counts = [f"{name} {int(r[key]):,}" for name, key in (("truncated lines", "truncated"),
                                                            ("time problems", "ts_problems"), ("too long", "too_long"))
              if not blank(r[key]) and int(r[key])]
    return "; ".join(counts + ([show(r["note"])] if show(r["note"]) != "-" else []))
