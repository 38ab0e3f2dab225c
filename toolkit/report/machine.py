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
    """The values of every machine document; the engine advisory's (title, ranges, purls, remediation) only
    from the case's defect (declared or matched by the build table: kvir.report.defect), else empty."""
    d, f, c, st = m.disclosure, m.facts, m.counts, m.story
    x = m.defect
    now = iso(m.generated_at)
    window = span(c.first_affected, c.last_affected)      # "A and B UTC", after "between"
    labelled = (f" and {c.labelled_accounts} account(s) incident.toml labels ({c.affected_labelled} responses)"
                if c.labelled_accounts else "")
    inc_summary = (f"Between {window}, {c.affected} responses of {f.model} {st.summary_clause}. They went to "
                   f"{c.affected_accounts} accounts: {c.customer_accounts} customer accounts ({c.affected_customer} "
                   f"responses){labelled}. Investigated window: {minute(f.window_start)} to {minute(f.window_end)}.")
    data_text = ("Exposed: " + "; ".join(d.data_exposed) + ". Not exposed: " + "; ".join(d.data_not_exposed) + ".")
    fixed = [n for n in m.node_fixes if n.fixed_at]
    remediation = (f"{len(fixed)} node(s) restarted with a KV pool that holds the whole context, the last at "
                   f"{iso(max(n.fixed_at for n in fixed))} (start-up logs). " if fixed else "")
    if st.remediation_public is not None:
        remediation = " ".join(st.remediation_public) + " "
    remediation += st.engine_fix + " Every affected customer is notified individually (GDPR Art. 33(2))."
    reporter = d.reporter or "[reporter: set [disclosure] reporter]"
    aliases = [a for a in (d.cve_id, d.ghsa_id) if a]
    published = iso(d.published_at) if d.published_at else now
    common = dict(now=now, published=published, kvir_version=__version__,
                  publisher_name=d.provider_name if d.provider else "[provider]", reporter=reporter,
                  ack_summary="reported the issue" + (f" through {d.reporter_channel}" if d.reporter_channel else ""),
                  distribution_text=f"TLP:{d.tlp}. Draft rendered by kvir; review before distribution."
                  if d.csaf_status == "draft" else f"TLP:{d.tlp}.",
                  incident_tracking_id=d.advisory_id, incident_summary=inc_summary,
                  root_cause=st.what_happened_public, data_text=data_text, remediation=remediation,
                  incident_csaf_url=csaf_url(d.csaf_base_url, published, d.advisory_id),
                  public_report_url=d.public_report_url or f"{d.namespace.rstrip('/')}/security/{d.advisory_id.lower()}",
                  aliases=aliases, cvss=d.cvss.as_json() if d.cvss_v3 else None)
    if x is None:
        return MachineValues(**common, advisory_title="", advisory_tracking_id="", engine_summary="", preconditions="",
                             incident_details="", impact="", vendor_fix="", workaround="", coordination_summary="",
                             vers_range="", range_text="", fixed_purl="", package_purl="", advisory_csaf_url="",
                             involvement_date="", fixed_release_datetime="", osv_id="", pypi_name="", cve_timeline=[])
    intro = x.introduced_version
    range_text = f"< {x.fixed_version}" if intro == "0" else f">= {intro}, < {x.fixed_version}"
    vers = f"vers:pypi/<{x.fixed_version}" if intro == "0" else f"vers:pypi/>={intro}|<{x.fixed_version}"
    engine_summary = f"{x.description} (Source: {x.how}.)" + (f" {x.code_note}" if x.code_note else "")
    details = (f"Found in incident {f.id} at {d.provider_name}: {c.affected} responses of {f.model} between {window} "
               f"were affected; {st.details_config}")
    timeline = []
    if d.reported_at:
        timeline.append({"time": iso(d.reported_at), "lang": "en",
                         "value": "Reported" + (f" via {d.reporter_channel}" if d.reporter_channel else "")})
    for e in m.public_timeline:
        timeline.append({"time": e.iso, "lang": "en", "value": e.title})
    if x.fixed_release_date:
        timeline.append({"time": f"{x.fixed_release_date.isoformat()}T00:00:00Z", "lang": "en",
                         "value": f"{x.package} {x.fixed_version} released"})
    timeline.sort(key=lambda t: t["time"])
    fixed_release = f"{x.fixed_release_date.isoformat()}T00:00:00Z" if x.fixed_release_date else ""
    advisory_id = f"{d.advisory_id}-{pypi_name(x.package)}"
    workaround = x.workaround or st.workaround
    return MachineValues(
        **common, advisory_title=x.title, advisory_tracking_id=advisory_id, engine_summary=engine_summary,
        preconditions=st.preconditions, incident_details=details, impact=st.impact,
        vendor_fix=f"Upgrade {x.package} to {x.fixed_version} or later." + (f" {x.code_note}" if x.code_note else ""),
        workaround=workaround,
        coordination_summary=f"{d.provider_name} coordinated the disclosure with the {x.package} maintainers.",
        vers_range=vers, range_text=range_text, fixed_purl=f"pkg:pypi/{pypi_name(x.package)}@{x.fixed_version}",
        package_purl=f"pkg:pypi/{pypi_name(x.package)}",   # a range has no single version: the purl names the package
        advisory_csaf_url=csaf_url(d.csaf_base_url, published, advisory_id),
        # the coordination is complete as of the fix release, else as of this document
        involvement_date=fixed_release or published, fixed_release_datetime=fixed_release,
        osv_id=f"x_{d.advisory_id}", pypi_name=pypi_name(x.package), cve_timeline=timeline,
    )
