"""The oversized-prompt mechanism's triage part (hookspec: kvir.triage.plugin.TriagePart).

A served response counts when its prompt reached the trigger (kvir.rules.trigger.Trigger: the public rule,
longer than the KV pool; or the engine's own limit). Its queries (queries/mechanisms/oversized_prompt/
triage/) judge every request of the model inside the window against one global pool, or against the pool in
effect on its node at its time when start-up logs give node_configs; the other rule is counted beside, so
the two thresholds can be compared; Prometheus prompt-token histograms give an aggregate finding (bounds,
never requests). The same files run on Spark (kvir.triage.transpile).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvir.core.errors import InputError
from kvir.mechanisms.oversized_prompt import MECHANISM
from kvir.rules.trigger import Trigger
from kvir.triage.plugin import Shown

# triage/hits, then the shared questions (triage/hits_pool_in_effect with start-up logs)
_QUERIES = ("triage/listed", "triage/affected", "triage/excluded", "triage/accounts", "triage/nodes")


@dataclass(frozen=True)
class OversizedPromptRule:
    """The spec's trigger with the serving engine it is judged for (kvir.triage.plugin.TriageRule)."""

    trigger: Trigger

    def describe(self) -> str:
        return self.trigger.describe()

    def other(self) -> str:
        return self.trigger.describe(self.trigger.other_rule)

    def query_params(self) -> dict[str, Any]:
        return {**self.trigger.query_params(), "other_rule_text": self.other(),
                "condition_text": self.trigger.condition()}


@dataclass(frozen=True)
class OversizedPromptSummary:
    """summary.json's "oversized_prompt": what each request was judged against."""

    threshold: str                     # one global pool, or the pool in effect per node and time
    threshold_sources: dict[str, int]  # pool in effect: flagged requests per threshold that judged them
    other_rule_name: str               # the rule counted beside ("engine" / "public")


class OversizedPromptTriage:
    spark = True
    listed = ("affected",)
    summary_queries = ("triage/aggregate_bounds", "triage/summary_aggregates")
    exports = ()

    def queries(self, pool_in_effect: bool) -> tuple[str, ...]:
        return ("triage/hits_pool_in_effect" if pool_in_effect else "triage/hits",) + _QUERIES

    def rule(self, spec, engine) -> OversizedPromptRule:
        trigger = spec.params.with_engine(engine.name)
        if not trigger.available():
            raise InputError(f"[trigger] rule = \"engine\" needs the serving engine, and {engine.source}: set "
                             f"[trigger] engine in {spec.path or 'incident.toml'}, or use rule = \"public\"")
        return OversizedPromptRule(trigger)

    def summary(self, case, rule: OversizedPromptRule, pool_in_effect: bool) -> OversizedPromptSummary:
        if not pool_in_effect:
            return OversizedPromptSummary(f"one global pool: {rule.trigger.pool_tokens:,} tokens", {},
                                          rule.trigger.other_rule)
        sources = case.run("triage/threshold_sources", fetch=True, mechanism=MECHANISM.folder)
        return OversizedPromptSummary("pool in effect per node and time (node_configs from start-up logs)",
                                      dict(sources), rule.trigger.other_rule)

    def present(self, s: dict[str, Any], own: OversizedPromptSummary) -> Shown:
        other = own.other_rule_name
        rows = [
            ("affected responses", s["affected"]),
            ("  of which to customer accounts", s.get("affected_customer")),
            ("  of which to labelled accounts (spec [[accounts]])", s["affected_labelled"]),
            ("  of which to no known account (no record names one)", s["affected_unknown_account"]),
            ("accounts affected (known ids)", s["affected_accounts"]),
            ("  customer accounts", s.get("customer_accounts")),
            ("  labelled accounts", s.get("labelled_accounts")),
            ("excluded accounts' affected responses", s["excluded"]),
            ("rejected correctly (4xx / abort 400)", s["rejected"]),
            ("failed (5xx)", s["failed"]),
            ("aborted by the client", s["aborted"]),
            ("undecidable (field missing)", s["undecidable"]),
            ("possibly affected (start known only to the hour, crossing a window edge)", s.get("possibly_affected", 0)),
            ("requests whose records conflict (conflicts.csv: most exposing reading taken)", s.get("conflicts", 0)),
            (f"other rule would add ({other})", s["other_rule_adds"]),
            (f"other rule would drop ({other})", s["other_rule_drops"]),
        ]
        rows += [(f"  flagged requests judged by: {src}", n) for src, n in own.threshold_sources.items()]
        return Shown(rows)


PART = OversizedPromptTriage()
