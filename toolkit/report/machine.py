"""Values for the machine-readable documents (CSAF, OSV, CVE), computed once from the incident model.

The JSON templates only place these values (each through `tojson`); every text here is a projection of
the model, so the numbers match the prose documents.
"""
from __future__ import annotations


import re
from dataclasses import dataclass
from typing import Any

from kvir import __version__
from kvir.report.model import IncidentModel
from kvir.report.times import iso, minute, span


def csaf_filename(tracking_id: str) -> str:
    """CSAF 2.0 §5.1: lower-case the id, replace each run of other characters by '_', append .json."""
    return re.sub(r"[^+\-a-z0-9]+", "_", tracking_id.lower()) + ".json"


def pypi_name(name: str) -> str:
    """PEP 503 normalised name (what OSV expects for PyPI)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def csaf_url(base: str, release_date: str, tracking_id: str) -> str:
    """A CSAF document's canonical URL: <base>/<year of its initial release>/<file name> (CSAF 2.0 §7.1,
    requirement 11: one folder per year); '' without a base."""
    if not base:
        return ""
    return f"{base.rstrip('/')}/{release_date[:4]}/{csaf_filename(tracking_id)}"


@dataclass(frozen=True)
class MachineValues:
    now: str
    published: str              # initial release: [disclosure] published_at, else the render time
    kvir_version: str
    publisher_name: str
    reporter: str
    ack_summary: str
    distribution_text: str
    advisory_title: str
    advisory_tracking_id: str
    incident_tracking_id: str
    engine_summary: str
    preconditions: str
    incident_details: str
    incident_summary: str
    root_cause: str
    data_text: str
    remediation: str
    impact: str
    vendor_fix: str
    workaround: str
    coordination_summary: str
    vers_range: str
    range_text: str
    fixed_purl: str
    package_purl: str
    advisory_csaf_url: str
    incident_csaf_url: str
    cvss: dict[str, Any] | None
    involvement_date: str
    fixed_release_datetime: str
    public_report_url: str
    osv_id: str
    aliases: list[str]
    pypi_name: str
    cve_timeline: list[dict[str, str]]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def machine_values(m: IncidentModel) -> MachineValues:
    d, f, c = m.disclosure, m.facts, m.counts
    now = iso(m.generated_at)
    engine = d.engine
    intro = d.introduced_version
    range_text = f"< {d.fixed_version}" if intro == "0" else f">= {intro}, < {d.fixed_version}"
    vers = f"vers:pypi/<{d.fixed_version}" if intro == "0" else f"vers:pypi/>={intro}|<{d.fixed_version}"
    summary = (f"In {engine} before {d.fixed_version}, a request whose prompt does not fit the prefill KV cache pool "
               "(possible whenever the configured context length exceeds the pool) is replaced by a one-token "
               "placeholder instead of being aborted. With prefill/decode disaggregation the decode side then reads "
               "KV cache pages that were never written for the request and hold another request's data, and the "
               "client receives HTTP 200 with a response derived from that data instead of HTTP 400.")
    pre = ("The context length is larger than the KV pool on a prefill node, and a prompt reaches the engine's "
           f"limit {f.rule_formula} tokens.")
    window = span(c.first_affected, c.last_affected)      # "A and B UTC", after "between"
    details = (f"Found in incident {f.id} at {d.provider_name}: {c.affected} responses of {f.model} between {window} "
               f"were affected; context {f.context_tokens} tokens, prefill KV pool {f.pool_tokens} tokens.")
    inc_summary = (f"Between {window}, {c.affected} responses of {f.model} to prompts of "
                   f"{f.condition} may have contained text derived from other requests' KV-cache data. They "
                   f"went to {c.affected_accounts} accounts: {c.customer_accounts} customer accounts "
                   f"({c.affected_customer} responses) and {c.labelled_accounts} labelled test accounts of the "
                   f"reporting researcher and the provider ({c.affected_labelled} responses). Investigated window: "
                   f"{minute(f.window_start)} to {minute(f.window_end)}.")
    root = (f"Configuration: context length {f.context_tokens} tokens with a prefill KV pool of {f.pool_tokens} "
            f"tokens. Engine bug: {summary}")
    data_text = ("Exposed: " + "; ".join(d.data_exposed) + ". Not exposed: " + "; ".join(d.data_not_exposed) + ".")
    fixed = [x for x in m.node_fixes if x.fixed_at]
    remediation = (f"{len(fixed)} node(s) restarted with a KV pool that holds the whole context, the last at "
                   f"{iso(max(x.fixed_at for x in fixed))}. " if fixed else "")
    remediation += (f"Engine fixed upstream in {engine} {d.fixed_version}. Every affected customer is notified "
                    "individually (GDPR Art. 33(2)).")
    workaround = d.workaround or (
        "Set --context-length no larger than the KV pool (max_total_num_tokens in the start-up log) on every prefill "
        "and decode node, and check it after any change of weights, quantisation, parallelism or memory settings; "
        "enable --disaggregation-enable-kv-checksum and --kv-canary; do not rely on proxy limits.")
    reporter = d.reporter or "the reporting security researcher"
    aliases = [a for a in (d.cve_id, d.ghsa_id) if a]
    timeline = []
    if d.reported_at:
        timeline.append({"time": iso(d.reported_at), "lang": "en",
                         "value": "Reported" + (f" via {d.reporter_channel}" if d.reporter_channel else "")})
    for e in m.public_timeline:
        timeline.append({"time": e.iso, "lang": "en", "value": e.title})
    if d.fixed_release_date:
        timeline.append({"time": f"{d.fixed_release_date.isoformat()}T00:00:00Z", "lang": "en",
                         "value": f"{engine} {d.fixed_version} released"})
    timeline.sort(key=lambda t: t["time"])
    published = iso(d.published_at) if d.published_at else now
    fixed_release = f"{d.fixed_release_date.isoformat()}T00:00:00Z" if d.fixed_release_date else ""
    advisory_id = f"{d.advisory_id}-{pypi_name(engine)}"
    return MachineValues(
        now=now, published=published, kvir_version=__version__, publisher_name=d.provider_name if d.provider else "[provider]",
        reporter=reporter,
        ack_summary="reported the issue" + (f" through {d.reporter_channel}" if d.reporter_channel else ""),
        distribution_text=f"TLP:{d.tlp}. Draft rendered by kvir; review before distribution." if d.csaf_status == "draft"
        else f"TLP:{d.tlp}.",
        advisory_title=f"{engine}: a prompt that does not fit the KV pool is served from another request's KV cache",
        advisory_tracking_id=advisory_id, incident_tracking_id=d.advisory_id,
        engine_summary=summary, preconditions=pre, incident_details=details, incident_summary=inc_summary,
        root_cause=root, data_text=data_text, remediation=remediation,
        impact="Cross-request (cross-tenant) disclosure of KV-cache contents: text derived from other users' prompts "
               "and completions.",
        vendor_fix=f"Upgrade {engine} to {d.fixed_version} or later: rejected requests are ended before KV transfer and "
                   "allocation and the client gets HTTP 400.",
        workaround=workaround,
        coordination_summary=f"{d.provider_name} coordinated the disclosure with the {engine} maintainers.",
        vers_range=vers, range_text=range_text, fixed_purl=f"pkg:pypi/{pypi_name(engine)}@{d.fixed_version}",
        package_purl=f"pkg:pypi/{pypi_name(engine)}",   # a range has no single version: the purl names the package
        advisory_csaf_url=csaf_url(d.csaf_base_url, published, advisory_id),
        incident_csaf_url=csaf_url(d.csaf_base_url, published, d.advisory_id),
        cvss=d.cvss.as_json() if d.cvss_v3 else None,
        # the coordination is complete as of the fix release, else as of this document
        involvement_date=fixed_release or published,
        fixed_release_datetime=fixed_release,
        public_report_url=d.public_report_url or f"{d.namespace.rstrip('/')}/security/{d.advisory_id.lower()}",
        osv_id=f"x_{d.advisory_id}", aliases=aliases, pypi_name=pypi_name(engine), cve_timeline=timeline,
    )


