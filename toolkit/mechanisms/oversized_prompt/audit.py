"""The oversized-prompt mechanism's audit part (hookspec: kvir.audit.plugin.AuditPart): KV pool against context,
prefill against decode limits, the PD build and its safety flags, the runtime lines of the exposure path.

Everything it judges is a shared column of node_configs (pool, context, limits, build, flags: parsed from the
start-up logs for every mechanism), so it adds no column of its own.
"""
from __future__ import annotations

from typing import Any

from kvir.core.sql import QueryLog, run
from kvir.mechanisms.oversized_prompt import MECHANISM
from kvir.mechanisms.oversized_prompt.audit_rules import RULES, rule_params


class OversizedPromptAudit:
    rules = RULES
    start_columns: tuple[str, ...] = ()

    def annotate(self, con, log: QueryLog) -> None:
        return None

    def findings(self, con, params: Any, log: QueryLog) -> None:
        """KVA001-KVA012 (queries/mechanisms/oversized_prompt/audit/findings.sql). The [trigger] section does
        not change what a start-up log shows, so `params` is not read."""
        run(con, "audit/findings", rule_params(), log=log, mechanism=MECHANISM.folder)

    def start_settings(self, start: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return ()


PART = OversizedPromptAudit()
