"""The oversized-prompt mechanism's audit part (hookspec: kvir.audit.plugin.AuditPart): KV pool against context,
prefill against decode limits, the PD build and its safety flags, the runtime lines of the exposure path.

Everything it judges is a shared column of node_configs (pool, context, limits, build, flags: parsed from the
start-up logs for every mechanism), so it adds no column of its own.
"""
from __future__ import annotations

from typing import Any

from kvir.audit.signals import Configuration
from kvir.core.sql import QueryLog, run
from kvir.mechanisms.oversized_prompt import MECHANISM
from kvir.mechanisms.oversized_prompt.audit_rules import RULES, rule_params
from kvir.mechanisms.oversized_prompt.signals import SIGNALS


class OversizedPromptAudit:
    rules = RULES
    start_columns: tuple[str, ...] = ()
    signals = SIGNALS

    def annotate(self, con, log: QueryLog) -> None:
        return None

    def findings(self, con, params: Any, log: QueryLog) -> None:
        """KVA001-KVA012 (queries/mechanisms/oversized_prompt/audit/findings.sql). The [trigger] section does
        not change what a start-up log shows, so `params` is not read."""
        run(con, "audit/findings", rule_params(), log=log, mechanism=MECHANISM.folder)

    def start_settings(self, start: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return ()

    def configuration(self, start: dict[str, Any]) -> Configuration:
        """The defect needs prefill/decode disaggregation: only a PD node hands decode a request whose KV was
        never written (a node without it answers the stub itself, HTTP 400 from its scheduler's verdict)."""
        role, mode = start.get("role"), start.get("disaggregation_mode")
        if role in ("prefill", "decode") or mode in ("prefill", "decode"):
            return Configuration(True, f"{role or mode} node of a prefill/decode deployment ({start.get('role_source')})")
        if role == "mixed" and start.get("role_source") not in (None, "file name"):
            return Configuration(False, f"no prefill/decode disaggregation ({start.get('role_source')}): the "
                                 "over-long stub is never transferred to a decode node",
                                 "vulnerable_code_not_in_execute_path")
        return Configuration(None, "whether the node runs prefill/decode disaggregation is not in the evidence")


PART = OversizedPromptAudit()
