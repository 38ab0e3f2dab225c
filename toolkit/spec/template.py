"""The commented incident.toml `kvir init` writes, one per exposure mechanism (`kvir init --mechanism`): examples
only, no incident's facts (tests/test_spec.py checks each parses and that every [disclosure] and [defect] key is
shown). The parts every mechanism shares are written here once; each mechanism's spec part gives its section,
its example title and any [[sources]] example (kvir.spec.mechanism.SpecPart)."""
from __future__ import annotations

from kvir.spec.mechanism import mechanism


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
# title = "@@title@@"
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

_TITLE = "@@title@@"      # where the mechanism's example title goes in _REST


def template(name: str | None = None) -> str:
    """The commented spec for the mechanism `name` (None: the default mechanism)."""
    part = mechanism(name).spec
    return _HEAD + part.template + _REST.replace(_TITLE, part.title_example) + part.sources_example

