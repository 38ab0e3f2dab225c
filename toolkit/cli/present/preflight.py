"""`kvir preflight`'s table on stderr: per node, each rule that failed or cannot decide, with its evidence."""
from __future__ import annotations

from kvir.cli.present import Col, cell, say, stderr, table
from kvir.cli.present.audit import SEVERITY_STYLE, counts_text, short_path


def print_preflight(result, fail_on: str) -> None:
    f = result.findings
    gate = set(result.gate(fail_on).index)
    rows = [[r["node"], cell(r["severity"], SEVERITY_STYLE.get(r["severity"], "")),
             cell("FAIL", "bold red") if i in gate else r["status"], r["rule_id"],
             f"{short_path(r['evidence_file'])}:{r['evidence_line']}",
             f"{r['rule_name']}: {r['message']} Fix: {r['fix']}" if r["status"] == "fail" else
             f"{r['rule_name']}: {r['message']}"]
            for i, r in zip(f.index, f.to_dict("records"))]
    stderr.print(table(f"Preflight: {len(result.nodes)} node(s), {len(result.rules())} rules; findings "
                       f"{len(f)} ({counts_text(f)})",
                       ("node", "severity", "status", "rule", Col("evidence", below=True), Col("finding", under=True)),
                       rows))
    say(f"gate --fail-on {fail_on}: {len(gate)} failed finding(s) at or above it; a rule with no row passed or "
        "does not apply; unknown = the evidence cannot decide (never a pass)", style="dim")
