"""The audit rules: stable ids, what each checks, its default severity and a one-sentence fix.

The checks themselves are SQL (queries/audit/findings.sql); this catalogue is loaded into the table
`audit_rules` for it and describes the rules in SARIF output. Rule ids never change meaning: add a new
id instead of repurposing one.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvir.rules.trigger import FORMULA

SEVERITIES = ("critical", "high", "medium", "low")
SEVERITY_RANK = {s: len(SEVERITIES) - i for i, s in enumerate(SEVERITIES)}   # critical 4 ... low 1
STATUSES = ("fail", "unknown")
# SGLang release that ends intake-rejected requests before bootstrap/transfer (DESIGN.md §1;
# research/sglang.md §2.2: PR #38935, released in 0.5.22 on 2026-10-19).
FIXED_SGLANG = "0.5.22"
# vLLM's default KV block size (tokens per block) when neither the log nor the inventory gives one.
VLLM_DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class Rule:
    rule_id: str
    name: str                 # short kebab-case name (SARIF rule name)
    title: str                # one line: what is wrong
    severity: str             # the default; findings.sql may raise or lower it by role
    fix: str                  # one sentence an operator can act on
    help: str                 # why it matters, where the evidence comes from

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity


RULES: tuple[Rule, ...] = (
    Rule("KVA001", "pool-below-context", "KV pool smaller than the context length",
         "critical",
         "Lower --context-length to at most the KV pool, or raise the pool (--mem-fraction-static, more GPUs) "
         "above the context, restart, and check the new max_total_num_tokens line; never rely on proxy limits "
         "or engine rejection.",
         "SGLang does not refuse to start when max_total_num_tokens < context_len: it silently clamps "
         f"max_req_input_len = {FORMULA}. On a PD prefill node before the fix, a prompt "
         "between that limit and the context becomes a 1-token placeholder while the decode side serves KV "
         "pages nobody wrote (the incident). Critical on PD prefill nodes, high on decode nodes, medium on "
         "non-PD nodes (they answer HTTP 400). vLLM: maximum concurrency below 1.00x. Status unknown when "
         "the start-up log does not show both numbers."),
    Rule("KVA002", "prefill-limit-below-decode-limit", "PD prefill node admits shorter prompts than its decode nodes",
         "high",
         "Give every prefill node a pool at least as large as the decode nodes' (or lower the deployment's "
         "context length to what the smallest prefill pool holds).",
         "Prefill and decode validate a request independently against their own pools. When the decode "
         "pool is larger, decode reserves pages for a prompt that prefill rejects, which is the asymmetry "
         "the incident needed. Compared between prefill and decode starts of one deployment (inventory "
         "`deployment`, else the served model) that were up at the same time."),
    Rule("KVA003", "input-limit-below-advertised-context", "Node rejects prompts its deployment advertises",
         "medium",
         "Start the node with the same --context-length as the rest of its deployment (and a pool that "
         "holds it), or advertise the smaller context to clients.",
         "The node's pool holds its own context, but that context is below the one the deployment "
         "advertises (the inventory's advertised_context, else the largest context of its deployment), so "
         "max_req_input_len sits below the one the advertised context gives."),
    Rule("KVA004", "build-without-pd-abort-fix", "PD node runs an SGLang build older than the fix",
         "high",
         f"Upgrade the prefill and decode nodes to sglang >= {FIXED_SGLANG}, which ends intake-rejected "
         "requests before bootstrap and KV transfer.",
         "Builds before the fix swap an over-long prompt for a 1-token placeholder and still transfer it, "
         "so decode commits a request whose KV was never written (sglang PR #38935). The version comes "
         "from a version line in the log, else the inventory; unknown when neither names it."),
    Rule("KVA005", "kv-checksum-off", "PD KV checksum not enabled",
         "medium",
         "Start prefill and decode with --disaggregation-enable-kv-checksum and check for the "
         "`PD KV checksum enabled` line.",
         "With the checksum on, decode verifies a digest of the transferred KV and aborts a request whose "
         "KV landed corrupted (for example an in-flight write into reused pages). Evidence: the PD KV "
         "checksum line, else server_args disaggregation_enable_kv_checksum; unknown when neither is logged."),
    Rule("KVA006", "kv-canary-off", "KV canary not enabled",
         "low",
         "Run canary verification (--kv-canary log, or raise in tests) on a build that offers it, at least "
         "on a verification replica.",
         "The canary checks on every forward that a request reads only KV it wrote, which is the exposure "
         "this incident was. It is marked testing-only upstream; older builds do not offer it (reported as "
         "failing with that reason). Unknown when no server_args dump is in the log."),
    Rule("KVA007", "deferred-kv-release-off", "Deferred decode KV release not enabled",
         "medium",
         "Set SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1 on the decode nodes and print the "
         "environment at start-up so the setting is auditable.",
         "Without it, a decode-side abort frees pages at once and a prefill write already in flight can land "
         "on pages handed to another request. Evidence: an environment dump in the log or the inventory's "
         "env table; otherwise unknown, never assumed on."),
    Rule("KVA008", "mooncake-transfer-batch-uncapped", "Mooncake transfer batch count not capped",
         "medium",
         "Set SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES (e.g. 1024) on the prefill nodes and print the "
         "environment at start-up so the setting is auditable.",
         "The default (0) sends each transfer as one unbounded all-layer batch; long-context transfers then "
         "fail in ways that trigger aborts across nodes. Evidence: an environment dump in the log or the "
         "inventory's env table; otherwise unknown."),
    Rule("KVA009", "engine-refused-start", "vLLM refused to start: one request does not fit the KV cache",
         "medium",
         "Lower --max-model-len to the estimate vLLM printed or raise --gpu-memory-utilization, then restart.",
         "vLLM checks at start-up that one max_model_len request fits the KV cache and refuses to start "
         "otherwise; the node served nothing with this configuration."),
    Rule("KVA010", "context-length-override", "Context length forced beyond the model's",
         "medium",
         "Serve the model's derived context length, or validate the longer one (quality and KV sizing) "
         "before leaving SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN set.",
         "SGLang warns when --context-length exceeds the context derived from the model config and only "
         "starts with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1; such contexts are where pool sizing was "
         "never checked."),
    Rule("KVA011", "runtime-exposure-indicator", "Runtime lines show the exposure path being taken",
         "high",
         "Run kvir triage over the same period with the start-up logs (--startup) to list the responses "
         "these lines correspond to.",
         "Counted from the same logs: scheduler rejections (`Input length ... exceeds the maximum allowed "
         "length`) on a PD prefill node (critical on a build without the fix: each one reached decode as a "
         "placeholder), PD admission rejections, KV checksum mismatches and canary violations."),
)

RULES_BY_ID = {r.rule_id: r for r in RULES}


def severity_at_least(severity: str, threshold: str) -> bool:
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]
