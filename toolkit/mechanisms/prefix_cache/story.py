"""The prefix-cache mechanism's wording: a prefix cache shared across tenants served one tenant's request the
KV blocks another tenant's earlier request computed for the same leading tokens, because nothing (or only a
salt each caller chooses, or a salt the build drops from a cache tier's key) kept tenants apart.

What such a response carries is not foreign text: a block is reused only for the same tokens, so the response
answers its own prompt. What crossed tenants is the fact that the other tenant had sent that text: the
cached-token count and the latency tell it, which lets a tenant confirm a guess of another tenant's prompt
(a system prompt, a document). Every sentence states its owner: the spec's [prefix_cache], the triage's
verdicts (queries/mechanisms/prefix_cache/triage/*.sql), the start-up logs (kvir audit: prefix caching per start, the
salt in the build's code from kvir.rules.prefix_cache), the declared defect.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvir.mechanisms.prefix_cache.spec import PrefixCacheParams
from kvir.report.story import Story
from kvir.mechanisms.prefix_cache.triage import PrefixCacheRule

ISOLATION = {
    "salt": "the cache salt each caller sends ({field}): a tenant that sends another tenant's salt shares its cache",
    "gateway-salt": "a cache salt ({field}) that the gateway sets per tenant",
    "none": "nothing: no cache salt",
    "unknown": "a means incident.toml does not state ([prefix_cache] isolation unknown)",
}


@dataclass(frozen=True)
class PrefixFacts:
    """The prefix-cache case's own facts: the spec's table, the triage's verdict counts, the audit's starts."""

    spec: PrefixCacheParams
    possibly_affected: int = 0
    cannot_decide: int = 0
    starts: tuple[dict[str, Any], ...] = field(default_factory=tuple)   # node_configs' prefix-cache columns


@dataclass(frozen=True, kw_only=True)
class PrefixCacheStory(Story):
    pc: PrefixFacts

    defect_role = "let the cache serve one tenant's blocks to another"

    # ---------------------------------------------------------------- the rule and the configuration
    @property
    def rule_text(self) -> str:
        return PrefixCacheRule(self.pc.spec.lifetime_s, self.pc.spec.instances).describe()

    @property
    def condition(self) -> str:
        return "cached prompt tokens that another tenant's earlier request could have written"

    @property
    def isolation(self) -> str:
        return ISOLATION[self.pc.spec.isolation].format(field=self.pc.spec.salt_field)

    @property
    def possibly_affected(self) -> int:
        return self.pc.possibly_affected

    def _on(self) -> list[dict[str, Any]]:
        return [s for s in self.pc.starts if s.get("prefix_caching")]

    @property
    def engine_knowledge(self) -> str:
        return ""

    @property
    def configuration(self) -> str:
        s = f"incident.toml [prefix_cache] says tenants were isolated by {self.isolation}."
        if not self.ev.audit_ran:
            return s + (" No start-up logs are in the case (kvir audit not run), so no node's prefix caching or salt "
                        "handling is confirmed.")
        starts, on = self.pc.starts, self._on()
        out = s + f" The start-up logs show prefix caching on in {len(on)} of {len(starts)} node start(s)"
        out += f" (first: {on[0]['evidence']})." if on else "."
        bad = [x for x in on if x.get("salt_honoured") is False]
        unknown = [x for x in on if x.get("salt_honoured") is None]
        if bad:
            out += (f" In {len(bad)} of them the build's code does not keep the salt in every cache tier's key "
                    f"({bad[0]['salt_basis']}).")
        if unknown:
            out += f" For {len(unknown)} of them whether the build honours the salt is unknown ({unknown[0]['salt_basis']})."
        return out

    @property
    def configuration_public(self) -> str:
        s = f"Tenants sharing our prefix cache were isolated by {self.isolation}."
        on = self._on()
        if self.ev.audit_ran and on:
            s += f" Our start-up logs show prefix caching on in {len(on)} node start(s)."
            bad = [x for x in on if x.get("salt_honoured") is False]
            if bad:
                s += f" On {len(bad)} of them the engine build does not keep the salt in every cache tier's key."
        return s

    @property
    def config_details(self) -> list[str]:
        """One line per node start of the audit: prefix caching and the salt, with their evidence."""
        def yn(v, yes, no):
            return yes if v is True else no if v is False else "unknown"
        if not self.pc.starts:
            return ["audit not run: no start-up logs in the case, so no node's prefix caching is known."]
        return [f"{x['node']} ({x['role'] or 'role unknown'}): prefix caching "
                f"{yn(x.get('prefix_caching'), 'on', 'off')} ({x['prefix_caching_source']}); salt "
                f"{yn(x.get('salt_honoured'), 'honoured', 'not honoured')} by the build ({x['salt_basis']})"
                for x in self.pc.starts]

    @property
    def cause_short(self) -> str:
        parts = [{"salt": "a prefix cache shared across tenants that were isolated only by a salt each caller chose",
                  "none": "a prefix cache shared across tenants without a per-tenant salt",
                  "gateway-salt": "a prefix cache shared across tenants whose gateway-set salt did not keep them apart",
                  "unknown": "a prefix cache shared across tenants"}[self.pc.spec.isolation]]
        if any(x.get("salt_honoured") is False for x in self._on()):
            parts.append("an engine build whose cache key drops the salt")
        if self.defect is not None:
            parts.append(f"a defect in the inference engine ({self.defect.package})")
        return " together with ".join(parts)

    @property
    def what_happened_public(self) -> str:
        d = self.defect
        defect = (d.description if d is not None else
                  f"Which engine defect, if any, {self.defect_role} has not been established yet.")
        return " ".join((self.configuration_public, self.engine_public, self.meaning_public, defect))

    serving_path = ""              # a cached block is served on the instance that holds it: no path to state
    request_evidence = ""          # the requests themselves were served as sent
    warnings = ()                  # nothing of [prefix_cache] that the evidence can contradict is checked

    def served_on(self, prefill_node: str | None, decode_node: str | None) -> str:
        return f"on instance {prefill_node or decode_node or 'unknown'}"

    @property
    def meaning_public(self) -> str:
        return ("A cached block is reused only for the same leading tokens, so each affected response answered its own "
                "prompt; but how many prompt tokens came from the cache, and how fast, told the requester that another "
                "tenant had sent the same leading text.")

    # ---------------------------------------------------------------- the documents' mechanism sentences
    def other_rule_sentence(self, adds: int, drops: int) -> str:
        pc = self.pc
        return (f"{pc.possibly_affected:,} more response(s) are possibly affected (a same-tenant request could also "
                f"have written their blocks) and {pc.cannot_decide:,} cannot be decided (no cached-token count or no "
                f"tenant in their records).")

    @property
    def summary_clause(self) -> str:
        return (f"were served with {self.condition} (rule {self.rule_text}), and {self.pc.possibly_affected:,} more "
                f"possibly so; such a response reveals that another tenant had sent the same leading text")

    def trigger_sentence(self, model: str) -> str:
        return (f"Requests to {model} whose leading prompt tokens matched blocks another tenant's earlier request had "
                f"left in the shared prefix cache ({self.rule_text})")

    @property
    def condition_row(self) -> str:
        return (f"every affected response was served with {self.condition} ({self.rule_text}); "
                f"{self.pc.possibly_affected:,} more are possibly affected")

    @property
    def not_exposed(self) -> str:
        return ("responses served without cached prompt tokens, or whose cached tokens an earlier request of the same "
                "tenant wrote: no other tenant's cache entry was involved")

    @property
    def exposed_clause(self) -> str:
        return "were served in part from KV-cache blocks that another tenant's request had computed"

    @property
    def notice_what(self) -> str:
        return ("were served in part from KV-cache blocks that another tenant's earlier request had computed for the "
                "same leading tokens (a prefix cache shared across tenants).")

    @property
    def notice_meaning(self) -> str:
        return ("Each response listed above still answered your own prompt (a cached block is reused only for the same "
                "tokens), but the cache did not keep tenants apart: the cached-token count and the response time "
                "showed that another tenant had sent the same leading text, and a tenant that guessed the leading "
                "text of your prompts could confirm it the same way.")

    @property
    def notice_actions(self) -> tuple[str, ...]:
        return ("Treat the leading text of the prompts listed above (system prompts, documents, templates) as possibly "
                "known to other tenants of the service, and replace any secret it contains.",
                "No action is needed on the responses themselves: they answered your prompts.")

    @property
    def not_replayed(self) -> str:
        return ("Which tenant's request computed the cached blocks of each response is not established beyond the "
                "candidates the request logs allow (replay not run).")

    def source_what(self, model: str) -> str:
        return (f"{self.cause_short} may have let requests of another customer to the model {model} be served from "
                f"KV-cache blocks computed for your requests' leading tokens.")

    @property
    def gdpr_mechanism(self) -> str:
        return ("were served in part from KV-cache blocks another tenant's request had computed for the same leading "
                "tokens (a prefix cache shared across tenants); the cached-token count and the response time "
                "revealed to the requester that another tenant had sent that text")

    @property
    def gdpr_consequences(self) -> str:
        return ("Another business customer could confirm that text it guessed (e.g. a system prompt or a document) had "
                "been sent by another customer; the cached blocks hold the same tokens, so no other text reached it.")

    @property
    def workaround(self) -> str:
        return (f"Set {self.pc.spec.salt_field} at the gateway from the authenticated tenant (replacing any value the "
                f"caller sends), or turn prefix caching off, on every instance until the fix is deployed.")

    @property
    def impact(self) -> str:
        return ("Cross-tenant disclosure through a shared prefix cache: a tenant learns whether another tenant's prompts "
                "begin with text it sends (cached-token counts, latency).")

    @property
    def preconditions(self) -> str:
        return (f"A prefix cache shared by tenants whose requests start with the same tokens, with tenants isolated by "
                f"{self.isolation}.")

    @property
    def details_config(self) -> str:
        sp = self.pc.spec
        life = f"{sp.lifetime_s:,} s" if sp.lifetime_s else "unknown"
        inst = ", ".join(sp.instances) if sp.instances else "not stated"
        return (f"incident.toml [prefix_cache]: isolation {sp.isolation}, salt field {sp.salt_field}, cache lifetime "
                f"{life}, instances with prefix caching {inst}.")

    @property
    def remediation_public(self) -> list[str]:
        off = [x for x in self.pc.starts if x.get("is_current") and x.get("prefix_caching") is False]
        if not self.ev.audit_ran:
            return ["No change of the cache's configuration is in the case (audit not run: no start-up logs)."]
        if off:
            return [f"{len(off)} node(s) run, in their latest start-up log, with prefix caching off."]
        return ["No node start with prefix caching off is in the case's start-up logs."]

    @property
    def records_clause(self) -> str:
        return "were served from cache blocks another tenant's request computed"

    @property
    def source_meaning(self) -> str:
        return ("The other customer's cached-token count and response time could show it that a request of yours had "
                "begun with the same text: a customer that guessed the leading text of your prompts (a system prompt, "
                "a document) could confirm the guess.")

    @property
    def source_action(self) -> str:
        return ("Check which of your prompts in that period began with confidential text, treat that text as possibly "
                "confirmed by another customer, and replace any secret it contains.")

    @property
    def data_exposed(self) -> tuple[str, ...]:
        return ("whether another tenant's prompts began with the same text as a request's own (shown to the requester "
                "by its cached-token count and response time)",)

    @property
    def replay_source_meaning(self) -> tuple[str, ...]:
        return ("The other customer's requests began with the same tokens as these requests of yours, so no other text "
                "of yours reached it; but its cached-token count and response time could show it that a request of "
                "yours had begun with that text. If that text held personal data, this is a personal data breach "
                "(confidentiality) for which you are the controller.",
                "A customer that guessed the leading text of your prompts (a system prompt, a document) could confirm "
                "the guess this way.",
                "The replay re-keys the cache from the logged token ids; the token counts are the prompt tokens the "
                "other response was served from blocks your requests computed.")

    replay_tokens = "prompt tokens served from blocks another tenant computed"    # after the replay's token count in the post-mortem
