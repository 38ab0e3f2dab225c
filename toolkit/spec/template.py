"""The commented incident.toml `kvir init` writes, one per exposure mechanism (`kvir init --mechanism`): examples
only, no incident's facts (tests/test_spec.py checks each parses and that every [disclosure] and [defect] key is
shown). The parts every mechanism shares are written once; TEMPLATE stays the default (oversized-prompt) one."""
from __future__ import annotations

from kvir.spec.mechanism import MECHANISMS, OVERSIZED_PROMPT, PREFIX_CACHE


_HEAD = '''\
# incident.toml: the facts of one KV-cache exposure investigation (read by every kvir command).
# Every value below is an example: replace it with your incident's. What you leave out stays "unknown"
# in the documents; kvir never fills it in. Times are UTC: write them with an offset (Z). Bounds of
# the window are inclusive.

[incident]
id = "INC-0001"
title = "Cross-tenant KV cache exposure"
models = ["example-org/example-model"]     # every name the model goes by (requested, served, gateway
                                           # model group or deployment); matched exactly: `kvir triage
                                           # --list-models LOGS` lists the names your logs carry
window_start = 2026-01-01T00:00:00Z        # inclusive
window_end = 2026-01-02T00:00:00Z          # inclusive
# awareness_time = 2026-01-02T09:00:00Z    # starts the GDPR Art. 33 72-hour clock

'''

_TRIGGER = '''\
[trigger]
pool_tokens = 100000        # the KV pool in effect (SGLang: max_total_num_tokens; vLLM: KV cache size)
context_tokens = 131072     # the served context length (SGLang context_len; vLLM max_model_len)
rule = "public"             # "public": prompt_tokens > pool_tokens
                            # "engine": prompt_tokens >= the engine's own limit (needs the engine)
# engine = "vllm"           # sglang, vllm or unknown; unset: taken from the logs (kvir.rules.engines)

'''

_PREFIX_CACHE = '''\
mechanism = "prefix-cache"                 # a prefix cache served one tenant's cached blocks to another
# engine = "vllm"                          # sglang, vllm or unknown; unset: taken from the logs

[prefix_cache]                             # what you know of the shared cache; leave out what you do not
instances = ["vllm-0"]                     # the instances (node names in your logs) with prefix caching on;
                                           # unset: every instance the logs name
isolation = "salt"                         # what was meant to keep tenants apart: "salt" (the caller's
                                           # cache_salt), "gateway-salt" (a gateway set it per tenant),
                                           # "none", or "unknown"
salt_field = "cache_salt"                  # the request field that carries the salt
# lifetime_s = 3600                        # the longest a cached block can live, if you can bound it: a
                                           # tenant's own request older than this cannot explain a hit;
                                           # unset: unbounded (any earlier request could)
# block_tokens = 16                        # the cache's block size in tokens (hits are whole blocks)

# Triage needs each response's cached prompt tokens (usage.prompt_tokens_details.cached_tokens of the
# bodies, vLLM with --enable-prompt-tokens-details; SGLang's cached_tokens; a gateway's cached-token field)
# and its tenant (account). Requests whose logs carry no count are counted "cannot decide", never clean.

'''

_REST = '''\
# Accounts the responders know. Labelled accounts stay in every count and are shown apart;
# exclude = true removes them from the affected set (they are listed in excluded.csv instead).
# [[accounts]]
# id = "acct_researcher"
# label = "reporting researcher"
# reason = "reproduction reported by the researcher"
# exclude = false

# Timeline events known by hand (mitigations come only from here or from a log line that says so).
# [[events]]
# ts = 2026-01-02T09:00:00Z
# title = "Incident declared"
# actor = "provider"
# category = "escalation"

# The engine defect, when you or the engine's maintainers have established one. Only with this table
# (or a defect kvir's build table matches on your start-up logs) does `kvir report` write an engine
# advisory (advisory, CSAF security advisory, OSV, CVE); without it the documents say the engine's part
# is not established.
# [defect]
# package = "example-engine"                       # the engine's package (PyPI name)
# ecosystem = "PyPI"
# vendor = "Example Engine maintainers"
# repo = "https://example.invalid/example-engine"   # the engine's source repository
# title = "A prompt that does not fit the KV pool is served from another request's KV cache"
# description = "..."                              # what the engine does wrong, in your words or upstream's
# introduced_version = "0"                         # 0 = every version before the fix
# fixed_version = "1.2.3"
# fixed_release_date = "2026-02-01"
# fixed_source = "the maintainers' release notes"  # who says it is fixed there
# references = ["https://example.invalid/issues/1"]   # upstream issue, fix, advisory
# cwe = "CWE-226"                                  # or CWE-488, CWE-200, CWE-362
# workaround = "..."

# What `kvir report` needs beyond the logs (all optional; a missing one is marked as missing in the documents).
# [disclosure]
# provider = "Your Company Ltd."                # publisher of the reports; processor in the notices
# provider_namespace = "https://inference.example.com"   # the provider's web address (CSAF namespace)
# contact = "security@inference.example.com"        # security contact for customers and users
# dpo_contact = "dpo@inference.example.com"         # GDPR Art. 33(3)(b) contact point
# reporter = "A. Researcher"                        # credited in every public document
# reporter_channel = "our security contact form"
# reported_at = 2026-01-02T08:00:00Z
# awareness_time = 2026-01-02T09:00:00Z             # defaults to [incident] awareness_time
# notified_at = 2026-01-04T10:00:00Z                # when the supervisory authority was notified
# delay_reason = "..."                              # required when notified_at is after awareness + 72 h
# lead_supervisory_authority = "..."
# gdpr_role = "processor"                           # or "controller"
# advisory_id = "INC-0001"                          # default: [incident] id
# cve_id = ""                                       # once assigned
# ghsa_id = ""
# cna_org_id = "..."                                # the CNA's UUID (CVE providerMetadata.orgId)
# tlp = "AMBER"                                     # CSAF TLP label: WHITE, GREEN, AMBER, RED
# csaf_status = "draft"                             # draft, interim, final
# public_report_url = "https://..."
# advisory_url = "https://..."                     # the advisory's web page
# csaf_base_url = "https://inference.example.com/.well-known/csaf/amber/"   # https folder of your CSAF documents
#                                                   # (canonical URL: <base>/<year>/<file name>; CSAF 6.2.11)
# cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"   # your CVSS v3.x base vector of the engine defect;
#                                                   # kvir computes the score (CSAF, OSV, CVE)
# published_at = 2026-01-10T00:00:00Z               # first publication of the documents (default: render time)
# traffic_gap_minutes = 30          # a pause in customer traffic this long is shown (inferred, internal)
# timeline_tolerance_minutes = 5    # larger hand-vs-data differences are shown as timeline conflicts
# data_exposed = ["..."]                            # lists of strings (defaults describe KV-cache text)
# data_not_exposed = ["..."]
# went_well = ["..."]                               # post-mortem lessons
# went_wrong = ["..."]
# lucky = ["..."]
# [[disclosure.action_items]]                       # post-mortem action items
# title = "Check KV pool >= context length at every node start"
# type = "prevent"                                  # mitigate, prevent or process
# owner = "serving team"
# bug = "OPS-1234"

# Per-source settings for files that cannot say everything themselves. `path` is a glob relative
# to this file; `format` is a name from `kvir formats`.
# [[sources]]
# path = "logs/engine/*.log"
# format = "vllm"
# source_tz = "Europe/Berlin"       # IANA name or fixed offset (+02:00); engine logs are host-local
# served_model = "example-org/example-model"   # when the file does not name the model
# role = "mixed"
#
# [[sources]]
# path = "exports/requests.parquet"
# format = "generic-parquet"
# [sources.columns]                 # kvir field = column name in the file
# request_id = "id"
# ts = "created_at"
# account_id = "customer"
# model = "model"
# prompt_tokens = "input_tokens"
# http_status = "status"
'''

_REST_PREFIX_CACHE_SOURCES = '''\
#
# [[sources]]                       # response bodies saved by a client or gateway, with the tenant beside them
# path = "responses.jsonl"
# format = "generic-jsonl"
# node = "vllm-0"                   # the instance that served them, when the file does not say
# [sources.columns]
# request_id = "body.id"
# ts = "body.created"
# account_id = "tenant"
# model = "body.model"
# prompt_tokens = "body.usage.prompt_tokens"
# cached_tokens = "body.usage.prompt_tokens_details.cached_tokens"
'''

TEMPLATE = _HEAD + _TRIGGER + _REST      # the default: the oversized-prompt mechanism


def template(mechanism: str = OVERSIZED_PROMPT) -> str:
    """The commented spec for one mechanism (kvir.spec.mechanism.MECHANISMS)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism: expected one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if mechanism == PREFIX_CACHE:
        rest = _REST.replace('# title = "A prompt that does not fit the KV pool is served from another request\'s KV cache"',
                             '# title = "The cache salt does not reach the prefix cache\'s block keys"')
        return _HEAD + _PREFIX_CACHE + rest + _REST_PREFIX_CACHE_SOURCES
    return TEMPLATE
