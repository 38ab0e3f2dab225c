"""The oversized-prompt mechanism's probe part (hookspec: kvir.probe.plugin.ProbePart): prompts at the engine's
limit must be refused (the length check), and what a tenant is served for one must not carry another
tenant's text (the canary check).

The canary check is this mechanism's because what it sends across tenants is its trigger: tenant B's
over-limit prompts, which a leaking build answers from pages another tenant wrote. Its verdict "not
exposed" rests on every one of them being refused. The canary machinery it uses (plant text, the n-gram
index over every output of the run) is kvir.probe.canary's, for any mechanism's check to use.
"""
from __future__ import annotations

from kvir.mechanisms.oversized_prompt.probe_canary import canary_check
from kvir.mechanisms.oversized_prompt.probe_length import length_check
from kvir.probe.config import ProbeOptions
from kvir.probe.learn import ServerFacts, boundary_lengths
from kvir.probe.plugin import PlanPhase, ProbeCheck
from kvir.probe.rules import Rule

RULES = (
    Rule("KVIR-P001", "over-limit-prompt-served", "high", "A prompt at or over the engine's limit was served",
         "The engine must refuse (HTTP 400) a prompt it cannot hold; serving it is the incident's mechanism "
         "(decode attended over KV pages the request never wrote). Upgrade the engine (SGLang >= 0.5.21 "
         "rejects at the bootstrap door) and make the KV pool at least the context length."),
    Rule("KVIR-P002", "placeholder-prompt-count", "high", "usage.prompt_tokens is 1 for a longer prompt",
         "A 1-token prompt count for a longer prompt is SGLang's placeholder: the request was aborted at "
         "intake but still answered."),
    Rule("KVIR-P003", "prompt-count-mismatch", "medium", "usage.prompt_tokens disagrees with the prompt sent",
         "The server counted a different prompt than its own /tokenize: truncation, a template, or a "
         "gateway rewriting requests. The boundary set is then not where it should be."),
    Rule("KVIR-P004", "cross-tenant-canary", "critical", "Another tenant's canary appeared in a response",
         "Text planted by one tenant came back to another: cross-tenant KV exposure. Take the model out of "
         "service, find the affected responses (kvir triage) and replay them (kvir replay)."),
    Rule("KVIR-P007", "refused-below-limit", "low", "A prompt below the limit was refused",
         "Not an exposure. Something (a gateway, a smaller context) refuses earlier than the engine's limit, "
         "so the probe may not have reached the engine's own boundary."),
)


def _length_plan(opts: ProbeOptions, facts: ServerFacts) -> PlanPhase:
    lengths, _ = boundary_lengths(facts, opts.engine)
    n = len(lengths) if lengths else 7
    return PlanPhase(n, f"{n} boundary prompts by {opts.tenant_b.label}, {opts.max_tokens} output tokens each")


def _canary_plan(opts: ProbeOptions, facts: ServerFacts) -> PlanPhase:
    lengths, _ = boundary_lengths(facts, opts.engine)
    low, _, _ = facts.limits(opts.engine)
    n_over = len([n for _, n in lengths if low is not None and n >= low]) if lengths else 4
    plants = opts.canary_rounds * opts.canaries_per_round
    return PlanPhase(plants + opts.canary_rounds * n_over,
                     f"{opts.canary_rounds} round(s): {opts.canaries_per_round} canary plant(s) by "
                     f"{opts.tenant_a.label}, then {n_over} over-limit prompt(s) by {opts.tenant_b.label} "
                     f"({opts.canary_max_tokens} output tokens, every other one streamed)", tokenize=plants)


LENGTH = ProbeCheck(
    "length", "KVIR-P100", "Boundary prompts around the engine's limit are refused at and above it",
    "length: tenant B sends prompts around the engine's own limit: SGLang max_req_input_len - 1, itself and "
    "+ 1, the pool, context - 1, context and context + 1; vLLM context - 2 to context + 1; an unidentified "
    "server pool +-1 and context +-1 tokens. HTTP 400 is expected at and above the engine's limit; HTTP 200 "
    "there, usage.prompt_tokens of 1, or a count that disagrees with what was sent is a finding.",
    length_check, _length_plan, default=True)
CANARY = ProbeCheck(
    "canary", "KVIR-P101", "No tenant's output carries another tenant's canary",
    "canary: tenant A plants unique canaries, then tenant B sends over-limit prompts; every output of B "
    "(streamed too) is scanned for any fragment of any canary. A fragment found is exposure, reported with "
    "the request ids.",
    canary_check, _canary_plan, default=True,
    skipped_note="the canary check did not run: outputs were not scanned for other tenants' text")


class OversizedPromptProbe:
    checks = (LENGTH, CANARY)
    rules = RULES


PART = OversizedPromptProbe()
