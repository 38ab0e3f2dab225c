"""The probe's vocabulary: verdicts, exit statuses, and the rules its findings and checks are reported under
(the same ids in JSON, SARIF and the case)."""
from __future__ import annotations

from dataclasses import dataclass

EXPOSED, NOT_EXPOSED, INCONCLUSIVE = "exposed", "not exposed", "inconclusive"
EXIT = {NOT_EXPOSED: 0, EXPOSED: 1, INCONCLUSIVE: 3}


@dataclass(frozen=True)
class Rule:
    rule_id: str
    name: str
    severity: str            # critical, high, medium, low
    title: str
    help: str


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
    Rule("KVIR-P005", "shared-prefix-cache-timing", "medium", "Timing suggests a prefix cache shared across tenants",
         "A paired timing test found another tenant's prompt served faster than a fresh one. A statistical "
         "indication, never proof on its own; isolate the prefix cache per tenant (cache salt) if unintended."),
    Rule("KVIR-P006", "server-info-secret", "high", "The server's info endpoint shows a secret field",
         "The info route lists a non-empty secret (the probe kept only its name). Restrict the route or "
         "unset the argument."),
    Rule("KVIR-P007", "refused-below-limit", "low", "A prompt below the limit was refused",
         "Not an exposure. Something (a gateway, a smaller context) refuses earlier than the engine's limit, "
         "so the probe may not have reached the engine's own boundary."),
    Rule("KVIR-P008", "cross-tenant-prefix-cache-hit", "high", "Another tenant's prompt was served from the cache",
         "A prompt one tenant sent was served to another tenant from the prefix cache (cached_tokens above what a "
         "fresh prompt gets): the tenants share KV blocks, and each can learn what the other sent. Key the "
         "cache per tenant: a cache salt the gateway injects (never one the caller chooses), and check that the "
         "salt reaches every cache tier's key (the engine's and its connectors')."),
)
RULE = {r.rule_id: r for r in RULES}
CHECK_RULE = {"length": "KVIR-P100", "canary": "KVIR-P101", "timing": "KVIR-P102", "prefix-isolation": "KVIR-P103"}
CHECK_TITLE = {"length": "Boundary prompts around the engine's limit are refused at and above it",
               "canary": "No tenant's output carries another tenant's canary",
               "timing": "No prefix-cache timing signal between tenants",
               "prefix-isolation": "No tenant's prompt is served from blocks another tenant's request wrote"}
