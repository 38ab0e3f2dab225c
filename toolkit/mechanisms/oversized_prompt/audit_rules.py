"""The oversized-prompt mechanism's audit rules (KVA001-KVA012): pool against context, prefill against decode,
the PD build and its safety flags, what the runtime lines show. Their checks are SQL
(queries/mechanisms/oversized_prompt/audit/findings.sql); what each SGLang build does comes from
kvir.rules.builds (builds.toml, read from the wheels).
"""
from __future__ import annotations

from kvir.audit.rules import FIXED_SGLANG, Rule
from kvir.mechanisms.oversized_prompt import MECHANISM
from kvir.rules.builds import TABLE as BUILDS
from kvir.rules.trigger import FORMULA

# the first build that rejects the over-long stub at the bootstrap door, and where the two flags first exist
DOOR_SGLANG = BUILDS.first_door_reject
CHECKSUM_SGLANG = BUILDS.fields["disaggregation_enable_kv_checksum"].first
CANARY_SGLANG = BUILDS.fields["kv_canary"].first


def _rule(rule_id: str, name: str, title: str, severity: str, fix: str, help: str) -> Rule:
    return Rule(rule_id, name, title, severity, fix, help, MECHANISM.name)


RULES: tuple[Rule, ...] = (
    _rule("KVA001", "pool-below-context", "KV pool smaller than the context length",
         "critical",
         "Lower --context-length to at most the KV pool, or raise the pool (--mem-fraction-static, more GPUs) "
         "above the context, restart, and check the new max_total_num_tokens line; never rely on proxy limits "
         "or engine rejection.",
         "SGLang does not refuse to start when max_total_num_tokens < context_len (only 0.5.23 warns: `KV pool "
         f"holds N tokens, fewer than --context-length M`): it silently clamps max_req_input_len = {FORMULA}. "
         f"On a PD prefill node of a build before {FIXED_SGLANG}, a prompt between that limit and the context "
         "becomes a 1-token stub while the decode side serves KV pages nobody wrote (the incident). Critical on "
         "PD prefill nodes (medium when the build is known not to transfer the stub: clients get HTTP 400), high "
         "on decode nodes, medium on non-PD nodes (they answer HTTP 400). vLLM: maximum concurrency below 1.00x. "
         "Status unknown when the start-up log does not show both numbers."),
    _rule("KVA002", "prefill-limit-below-decode-limit", "PD prefill node admits shorter prompts than its decode nodes",
         "high",
         "Give every prefill node a pool at least as large as the decode nodes' (or lower the deployment's "
         "context length to what the smallest prefill pool holds).",
         "Prefill and decode validate a request independently against their own pools. When the decode "
         "pool is larger, decode reserves pages for a prompt that prefill rejects, which is the asymmetry "
         "the incident needed. Compared between prefill and decode starts of one deployment (inventory "
         "`deployment`, else the served model) that were up at the same time."),
    _rule("KVA003", "input-limit-below-advertised-context", "Node rejects prompts its deployment advertises",
         "medium",
         "Start the node with the same --context-length as the rest of its deployment (and a pool that "
         "holds it), or advertise the smaller context to clients.",
         "The node's pool holds its own context, but that context is below the one the deployment "
         "advertises (the inventory's advertised_context, else the largest context of its deployment), so "
         "max_req_input_len sits below the one the advertised context gives."),
    _rule("KVA004", "build-without-pd-abort-fix", "PD node runs an SGLang build that transfers the over-long stub",
         "high",
         f"Upgrade the prefill and decode nodes to sglang >= {DOOR_SGLANG}, which rejects intake-rejected "
         f"requests at the bootstrap door ({FIXED_SGLANG} already retires them after their forward, without a "
         "transfer).",
         f"Up to the build before {FIXED_SGLANG} the code swaps an over-long prompt for a 1-token stub, forwards it "
         "and transfers its first KV page, so decode commits a request whose KV was never written "
         f"(kvir.rules.builds: {BUILDS.policy_row(BUILDS.leaking_policy).evidence.text()}). SGLang prints no "
         "version at start-up: the build comes from /server_info JSON given as input, a version line, the "
         "inventory, else the range of builds the start-up log allows (the settings dump's shape and fields, "
         "lines only later builds print); every finding names which. Unknown when none of these decides."),
    _rule("KVA005", "kv-checksum-off", "PD KV checksum not enabled",
         "medium",
         f"Start prefill and decode on sglang >= {CHECKSUM_SGLANG} with --disaggregation-enable-kv-checksum "
         "(both sides) and check disaggregation_enable_kv_checksum in the server_args dump.",
         "With the checksum on, decode verifies an Adler-32 digest of the transferred KV pages and aborts a request "
         "whose KV landed corrupted (`KV checksum mismatch`, HTTP 500). No build prints a line when it is on: the "
         f"evidence is disaggregation_enable_kv_checksum in the server_args dump (from {CHECKSUM_SGLANG}) or "
         "/server_info. Fails when it is False or the build cannot have it; unknown when the dump is missing or cut."),
    _rule("KVA006", "kv-canary-off", "KV canary not enabled",
         "low",
         f"Run canary verification (--kv-canary log, or raise in tests; sglang >= {CANARY_SGLANG}) at least on a "
         "verification replica.",
         "The canary checks that a request reads only KV it wrote, which is the exposure this incident was. "
         "--kv-canary takes none (the default), log or raise; environ.py heads its variables 'testing only'. "
         "Evidence: kv_canary in the server_args dump, the install_canary line or `[canary] step=...` statistics. "
         f"Builds before {CANARY_SGLANG} do not offer it (failing, with that reason); unknown without evidence."),
    _rule("KVA007", "deferred-kv-release-off", "Deferred decode KV release not enabled",
         "medium",
         "Set SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1 on the decode nodes and print the "
         "environment at start-up so the setting is auditable.",
         "Without it, a decode-side abort frees pages at once and a prefill write already in flight can land "
         "on pages handed to another request. Evidence: an environment dump in the log or the inventory's "
         "env table; otherwise unknown, never assumed on."),
    _rule("KVA008", "mooncake-transfer-batch-uncapped", "Mooncake transfer batch count not capped",
         "medium",
         "Set SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES (e.g. 1024) on the prefill nodes and print the "
         "environment at start-up so the setting is auditable.",
         "The default (0) sends each transfer as one unbounded all-layer batch; long-context transfers then "
         "fail in ways that trigger aborts across nodes. Evidence: an environment dump in the log or the "
         "inventory's env table; otherwise unknown."),
    _rule("KVA009", "engine-refused-start", "vLLM refused to start: one request does not fit the KV cache",
         "medium",
         "Lower --max-model-len to the estimate vLLM printed or raise --gpu-memory-utilization, then restart.",
         "vLLM checks at start-up that one max_model_len request fits the KV cache and refuses to start "
         "otherwise; the node served nothing with this configuration."),
    _rule("KVA010", "context-length-override", "Context length forced beyond the model's",
         "medium",
         "Serve the model's derived context length, or validate the longer one (quality and KV sizing) "
         "before leaving SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN set.",
         "SGLang warns when --context-length exceeds the context derived from the model config and only "
         "starts with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1; such contexts are where pool sizing was "
         "never checked."),
    _rule("KVA011", "runtime-exposure-indicator", "Runtime lines show the exposure path being taken",
         "high",
         "Run kvir triage over the same period with the start-up logs (--startup) to list the responses "
         "these lines correspond to.",
         "Counted from the same logs: scheduler rejections (`Input length ... exceeds the maximum allowed "
         "length`) on a PD prefill node (critical on a build that transfers the stub: each one reached decode; "
         "low on a build that answers them with 400), PD admission rejections (`exceeds the maximum number of "
         "tokens`), `KV checksum mismatch`, `kv_canary violation:` lines, canary statistics with violations > 0 "
         "and `Context corruption detected`. A healthy canary's `[canary] ... violations=0` is evidence of "
         "verification, never a violation."),
    _rule("KVA012", "requests-not-verified", "The logs do not show requests being verified",
         "medium",
         "Run the KV canary (--kv-canary log) and check its `[canary] step=... protected_tokens=N` lines (N > 0), "
         "and keep prefill and decode KV layouts equal so the checksum is never skipped.",
         "The operator recommendation is to check in the logs that requests are actually verified, not that a "
         "flag is set. Passes when the canary's statistics show protected tokens. Fails on `KV checksum skipped "
         "... admitted unverified` (0.5.23; high) and when nothing can verify (checksum and canary both off or "
         "absent). Unknown otherwise: a checksum that passes prints nothing, and decode admits a request "
         "unchecked when its prefill sent digest 0."),
)


def rule_params() -> dict[str, str]:
    """The build facts findings.sql binds."""
    return {"first_fixed": FIXED_SGLANG, "first_door": DOOR_SGLANG, "checksum_first": CHECKSUM_SGLANG,
            "canary_first": CANARY_SGLANG}
