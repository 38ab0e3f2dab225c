"""The audit rules: stable ids, what each checks, its default severity and a one-sentence fix.

The checks themselves are SQL (queries/audit/findings.sql); this catalogue is loaded into the table
`audit_rules` for it and describes the rules in SARIF output. Rule ids never change meaning: add a new
id instead of repurposing one.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvir.rules.builds import TABLE as BUILDS
from kvir.rules.trigger import FORMULA
from kvir.spec.mechanism import MECHANISMS, OVERSIZED_PROMPT, PREFIX_CACHE

SEVERITIES = ("critical", "high", "medium", "low")
SEVERITY_RANK = {s: len(SEVERITIES) - i for i, s in enumerate(SEVERITIES)}   # critical 4 ... low 1
STATUSES = ("fail", "unknown")
# What each SGLang build does comes from kvir.rules.builds (builds.toml, read from the wheels): the first
# build whose code never transfers the over-long stub, and the first that rejects it at the bootstrap door.
FIXED_SGLANG = BUILDS.first_fixed
DOOR_SGLANG = BUILDS.first_door_reject
CHECKSUM_SGLANG = BUILDS.fields["disaggregation_enable_kv_checksum"].first
CANARY_SGLANG = BUILDS.fields["kv_canary"].first
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
    mechanism: str = OVERSIZED_PROMPT   # the exposure mechanism it checks: an incident's audit runs its own only

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity
        assert self.mechanism in MECHANISMS, self.mechanism


RULES: tuple[Rule, ...] = (
    Rule("KVA001", "pool-below-context", "KV pool smaller than the context length",
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
    Rule("KVA004", "build-without-pd-abort-fix", "PD node runs an SGLang build that transfers the over-long stub",
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
    Rule("KVA005", "kv-checksum-off", "PD KV checksum not enabled",
         "medium",
         f"Start prefill and decode on sglang >= {CHECKSUM_SGLANG} with --disaggregation-enable-kv-checksum "
         "(both sides) and check disaggregation_enable_kv_checksum in the server_args dump.",
         "With the checksum on, decode verifies an Adler-32 digest of the transferred KV pages and aborts a request "
         "whose KV landed corrupted (`KV checksum mismatch`, HTTP 500). No build prints a line when it is on: the "
         f"evidence is disaggregation_enable_kv_checksum in the server_args dump (from {CHECKSUM_SGLANG}) or "
         "/server_info. Fails when it is False or the build cannot have it; unknown when the dump is missing or cut."),
    Rule("KVA006", "kv-canary-off", "KV canary not enabled",
         "low",
         f"Run canary verification (--kv-canary log, or raise in tests; sglang >= {CANARY_SGLANG}) at least on a "
         "verification replica.",
         "The canary checks that a request reads only KV it wrote, which is the exposure this incident was. "
         "--kv-canary takes none (the default), log or raise; environ.py heads its variables 'testing only'. "
         "Evidence: kv_canary in the server_args dump, the install_canary line or `[canary] step=...` statistics. "
         f"Builds before {CANARY_SGLANG} do not offer it (failing, with that reason); unknown without evidence."),
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
         "length`) on a PD prefill node (critical on a build that transfers the stub: each one reached decode; "
         "low on a build that answers them with 400), PD admission rejections (`exceeds the maximum number of "
         "tokens`), `KV checksum mismatch`, `kv_canary violation:` lines, canary statistics with violations > 0 "
         "and `Context corruption detected`. A healthy canary's `[canary] ... violations=0` is evidence of "
         "verification, never a violation."),
    Rule("KVA012", "requests-not-verified", "The logs do not show requests being verified",
         "medium",
         "Run the KV canary (--kv-canary log) and check its `[canary] step=... protected_tokens=N` lines (N > 0), "
         "and keep prefill and decode KV layouts equal so the checksum is never skipped.",
         "The operator recommendation is to check in the logs that requests are actually verified, not that a "
         "flag is set. Passes when the canary's statistics show protected tokens. Fails on `KV checksum skipped "
         "... admitted unverified` (0.5.23; high) and when nothing can verify (checksum and canary both off or "
         "absent). Unknown otherwise: a checksum that passes prints nothing, and decode admits a request "
         "unchecked when its prefill sent digest 0."),
    # ------------------------------------------------------------ prefix-cache (queries/audit/prefix_findings.sql)
    Rule("KVA013", "prefix-cache-salt-not-honoured", "Prefix cache shared: the build does not key every cache tier on the salt",
         "high",
         "Run a build whose code keys every cache tier on the salt (kvir.rules.prefix_cache names them: e.g. vLLM "
         ">= 0.10.0 on both routes, no LMCache tier that drops it), or turn prefix caching off "
         "(--no-enable-prefix-caching, --disable-radix-cache) until then.",
         "A prefix cache serves a prompt's leading blocks from KV computed for an earlier prompt with the same tokens; "
         "only a salt in the block key keeps tenants apart. What each release does is read from its code "
         "(toolkit/rules/prefix_cache.toml: vLLM takes cache_salt on chat from 0.9.0 and on completions from 0.10.0 "
         "and puts it in the first block's hash; SGLang's LMCache tier 0.5.11-0.5.20 keys stored blocks on tokens "
         "alone; vLLM's LMCache MP connector 0.12.0-0.19.0 too). Prefix caching on or off comes from the start-up "
         "log (vLLM's resolved config enable_prefix_caching=, SGLang's disable_radix_cache= / enable_lmcache=), else "
         "the build's default. Unknown when the build is not known: never assumed honoured.",
         PREFIX_CACHE),
    Rule("KVA014", "prefix-cache-caller-chosen-salt", "Tenants isolated by a salt the caller chooses, or by nothing",
         "high",
         "Set the cache salt at the gateway from the authenticated tenant (replacing any salt in the request body), "
         "and record that as [prefix_cache] isolation = \"gateway-salt\".",
         "The engines take cache_salt as an ordinary request field: no route derives it from the caller's identity "
         "(kvir.rules.prefix_cache). A salt the caller sends isolates tenants only from callers who do not know it; "
         "one tenant that sends another's salt is served that tenant's cached prefix (measured on a real vLLM-CPU "
         "server: tests/fixtures/real/vllm-*-cpu-prefix-cache, request 9). Fails when incident.toml says tenants "
         "were isolated by their own salt (isolation = \"salt\") or by nothing (\"none\", critical); unknown when "
         "it does not say; a gateway that sets the salt per tenant passes.",
         PREFIX_CACHE),
)

RULES_BY_ID = {r.rule_id: r for r in RULES}


def rule_params() -> dict[str, str]:
    """The build facts findings.sql binds."""
    return {"first_fixed": FIXED_SGLANG, "first_door": DOOR_SGLANG, "checksum_first": CHECKSUM_SGLANG,
            "canary_first": CANARY_SGLANG}


def severity_at_least(severity: str, threshold: str) -> bool:
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]
