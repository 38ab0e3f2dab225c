"""What kvir preflight found: the node starts as the audit reads them, every rule's findings, the gate."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvir.audit.rules import SEVERITIES, SEVERITY_RANK, Rule


@dataclass
class PreflightResult:
    node_configs: Any                     # pandas: one row per node start (the audit's columns)
    findings: Any                         # pandas: the audit's findings columns, evidence in the deployment's files
    inputs: list[dict[str, Any]]          # every input file: path, size_bytes, sha256
    launches: list[str] = field(default_factory=list)   # the nodes read from launches (not from logs)

    @staticmethod
    def rules() -> tuple[Rule, ...]:
        """Every rule preflight runs: each registered mechanism's, then the shared preflight table's."""
        from kvir.audit.rules import all_rules
        from kvir.preflight.transfer_rules import RULES

        return all_rules() + RULES

    @property
    def nodes(self) -> list[str]:
        return sorted({str(n) for n in self.node_configs["node"]}) if len(self.node_configs) else []

    def gate(self, threshold: str) -> Any:
        """The failed findings at or above `threshold` (pandas)."""
        if threshold not in SEVERITY_RANK:
            raise ValueError(f"unknown severity {threshold!r}; expected one of {', '.join(SEVERITIES)}")
        f = self.findings
        return f[(f["status"] == "fail") & (f["severity"].map(SEVERITY_RANK) >= SEVERITY_RANK[threshold])]

    def exit_code(self, threshold: str) -> int:
        return 1 if len(self.gate(threshold)) else 0

    def counts(self) -> dict[str, dict[str, int]]:
        f = self.findings
        return {st: {s: int(((f["severity"] == s) & (f["status"] == st)).sum()) for s in SEVERITIES}
                for st in ("fail", "unknown")}

    def as_json(self) -> dict[str, Any]:
        import json

        from kvir import __version__

        def records(df) -> list[dict[str, Any]]:
            return json.loads(df.to_json(orient="records", date_format="iso", date_unit="us")) if len(df) else []

        return {"kvir_version": __version__, "inputs": self.inputs, "nodes": self.nodes, "counts": self.counts(),
                "rules": [r.rule_id for r in self.rules()], "node_configs": records(self.node_configs),
                "findings": records(self.findings)}

    def to_sarif(self) -> dict[str, Any]:
        from kvir.preflight.report import to_sarif

        return to_sarif(self)

    def to_junit(self, threshold: str) -> str:
        from kvir.preflight.report import to_junit

        return to_junit(self, threshold)
