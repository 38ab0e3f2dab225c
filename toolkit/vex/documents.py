"""One deployment's VEX statement about one defect as a CSAF 2.0 document (profile csaf_vex) and an OpenVEX v0.2.0
document. Both are built from the same Statement (kvir.vex.status); every sentence is the statement's evidence or
the defect's declared or table-read facts.

CSAF: the product tree holds the deployment (a product of its own) and the engine release it runs (a vendor /
product / version branch with its PURL); their relationship (`default_component_of`) is the product the status
speaks of. known_affected carries a vendor_fix remediation (the action statement the profile requires),
known_not_affected a justification flag and an impact threat. OpenVEX: the deployment is the product, its engine
release a subcomponent (PURL).
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from kvir.vex.status import AFFECTED, FIXED, INVESTIGATING, NOT_AFFECTED

OPENVEX_CONTEXT = "https://openvex.dev/ns/v0.2.0"
OPENVEX_STATUS = {AFFECTED: "affected", NOT_AFFECTED: "not_affected", FIXED: "fixed", INVESTIGATING: "under_investigation"}


def _iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _purl(package: str, version: str | None) -> str:
    name = re.sub(r"[-_.]+", "-", package.lower())
    return f"pkg:pypi/{name}" + (f"@{version}" if version else "")


def tracking_id(node: str, known) -> str:
    return re.sub(r"[^A-Za-z0-9+._-]+", "-", f"KVIR-VEX-{node}-{known.slug}")


def _product_tree(st, known) -> tuple[dict[str, Any], str]:
    """(product_tree, the product id the status is about)."""
    d = known.defect
    deployment = {"product_id": f"DEPLOYMENT-{st.node}", "name": f"deployment {st.node}"}
    if st.justification == "component_not_present":
        return {"full_product_names": [deployment]}, deployment["product_id"]
    pid = f"{d.package}-{st.version or 'unknown'}"
    leaf: dict[str, Any] = {"product_id": pid, "name": f"{d.package} {st.version or '(build not known)'}"}
    if st.version and re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", st.version):
        leaf["product_identification_helper"] = {"purl": _purl(d.package, st.version)}
        product = {"category": "product_name", "name": d.package,
                   "branches": [{"category": "product_version", "name": st.version, "product": leaf}]}
    else:
        product = {"category": "product_name", "name": d.package, "product": leaf}
    vendor = {"category": "vendor", "name": d.vendor or d.package, "branches": [product]}
    rel_id = f"{pid}:DEPLOYMENT-{st.node}"
    rel = {"category": "default_component_of", "product_reference": pid,
           "relates_to_product_reference": deployment["product_id"],
           "full_product_name": {"product_id": rel_id, "name": f"{leaf['name']} in deployment {st.node}"}}
    return {"branches": [vendor], "full_product_names": [deployment], "relationships": [rel]}, rel_id


def csaf_vex(st, known, disclosure, now: dt.datetime) -> dict[str, Any]:
    """`disclosure`: the incident's [disclosure] (kvir.report.disclosure.Disclosure): publisher, TLP, status (draft
    while the publisher is a placeholder), base URL (the document's self reference), CVSS v3 (its score)."""
    d = known.defect
    placeholder = not (disclosure.provider and disclosure.provider_namespace)
    publisher = {"name": disclosure.provider_name, "namespace": disclosure.namespace}
    tlp, status, base_url = disclosure.tlp, "draft" if placeholder else disclosure.csaf_status, disclosure.csaf_base_url
    tree, pid = _product_tree(st, known)
    vuln: dict[str, Any] = {
        "ids": [{"system_name": "kvir defect", "text": known.label}],
        "title": d.title,
        "cwe": {"id": d.cwe, "name": d.cwe_name},
        "notes": [{"category": "description", "title": "Defect", "text": d.description},
                  {"category": "details", "title": "How kvir knows the defect", "text": d.how},
                  {"category": "other", "title": f"Deployment {st.node}", "text": f"{st.because} (evidence {st.evidence})."}],
        "product_status": {st.status: [pid]},
    }
    if d.references:
        vuln["references"] = [{"category": "external", "summary": "reference", "url": u} for u in d.references]
    if st.status == AFFECTED:
        vuln["remediations"] = [{"category": "vendor_fix", "details": st.action, "product_ids": [pid]}]
        if disclosure.cvss is not None:
            vuln["scores"] = [{"products": [pid], "cvss_v3": disclosure.cvss.as_json()}]
    if st.status == NOT_AFFECTED:
        vuln["flags"] = [{"label": st.justification, "product_ids": [pid]}]
        vuln["threats"] = [{"category": "impact", "details": st.because, "product_ids": [pid]}]
    from kvir import __version__

    when = _iso(now)
    document: dict[str, Any] = {
        "document": {
            "category": "csaf_vex", "csaf_version": "2.0", "lang": "en",
            "title": f"VEX: {d.package} before {d.fixed_version} on deployment {st.node}",
            "publisher": {"category": "vendor", **publisher},
            "distribution": {"tlp": {"label": tlp, "url": "https://www.first.org/tlp/"}},
            "notes": [{"category": "summary", "title": "Status",
                       "text": f"Deployment {st.node}: {st.status.replace('_', ' ')} ({known.label})."}],
            "tracking": {"id": tracking_id(st.node, known), "status": status, "version": "1",
                         "initial_release_date": when, "current_release_date": when,
                         "revision_history": [{"date": when, "number": "1", "summary": "Initial version."}],
                         "generator": {"engine": {"name": "kvir", "version": __version__}, "date": when}},
        },
        "product_tree": tree,
        "vulnerabilities": [vuln],
    }
    if base_url:
        document["document"]["references"] = [{"category": "self", "summary": "This document",
                                               "url": f"{base_url.rstrip('/')}/{tracking_id(st.node, known).lower()}.json"}]
    return _sorted(document)


def _sorted(x: Any) -> Any:
    """Keys sorted at every level (CSAF recommended test 6.2.13)."""
    if isinstance(x, dict):
        return {k: _sorted(x[k]) for k in sorted(x)}
    return [_sorted(v) for v in x] if isinstance(x, list) else x


def openvex(st, known, author: str, namespace: str, now: dt.datetime) -> dict[str, Any]:
    from kvir import __version__

    d = known.defect
    product: dict[str, Any] = {"@id": f"{namespace.rstrip('/')}/deployments/{st.node}"}
    if st.justification != "component_not_present":
        product["subcomponents"] = [{"@id": _purl(d.package, st.version)}]
    s: dict[str, Any] = {"vulnerability": {"name": known.label, "description": d.title}, "products": [product],
                         "status": OPENVEX_STATUS[st.status], "status_notes": f"{st.because} (evidence {st.evidence})"}
    if st.status == AFFECTED:
        s["action_statement"] = st.action
    if st.status == NOT_AFFECTED:
        s["justification"] = st.justification
        s["impact_statement"] = st.because
    return {"@context": OPENVEX_CONTEXT, "@id": f"{namespace.rstrip('/')}/vex/{tracking_id(st.node, known)}",
            "author": author, "timestamp": _iso(now), "version": 1, "tooling": f"kvir {__version__}",
            "statements": [s]}
