"""Per-deployment VEX: for every node and every known engine defect, a CSAF 2.0 VEX document (csaf_vex) and an
OpenVEX v0.2.0 document saying known_affected / not_affected (with its justification) / fixed /
under_investigation, from kvir preflight or an audit.

    import kvir.vex
    docs = kvir.vex.vex_documents(result.node_configs, spec=spec)   # [(Statement, KnownDefect, csaf, openvex)]
    kvir.vex.write_vex(result, "vex/", incident="incident.toml")     # vex/csaf/*.json, vex/openvex/*.json

The publisher is the incident's [disclosure] provider (name, namespace, TLP, CSAF status); without it the
documents carry the report stage's placeholders and the status "draft". CSAF documents are validated with the
`csaf` package (schema and mandatory tests) before they are written; an invalid one is never written as valid.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from kvir.vex.defects import KnownDefect, known_defects
from kvir.vex.documents import csaf_vex, openvex, tracking_id
from kvir.vex.status import Statement, statement

__all__ = ["vex_documents", "write_vex", "Statement", "KnownDefect"]


def _current(configs) -> list[dict[str, Any]]:
    rows = configs.to_dict("records") if hasattr(configs, "to_dict") else list(configs)
    cur = [r for r in rows if r.get("is_current") in (True, None)] or rows
    return sorted(cur, key=lambda r: str(r["node"]))


def _disclosure(spec):
    """[disclosure] (publisher, namespace, TLP, CSAF status, base URL, CVSS); placeholders without it."""
    from kvir.report.disclosure import parse_disclosure

    return parse_disclosure(spec.disclosure if spec is not None else {}, spec.id if spec is not None else "")


def vex_documents(configs, spec=None, now: dt.datetime | None = None) -> list[tuple[Statement, KnownDefect, dict, dict]]:
    from kvir.audit.plugin import audit_part

    now = now or dt.datetime.now(dt.timezone.utc)
    starts = _current(configs)
    d = _disclosure(spec)
    out = []
    for known in known_defects(starts, spec):
        part = audit_part(known.mechanism)
        for start in starts:
            st = statement(start, known.defect, part.configuration(start))
            out.append((st, known, csaf_vex(st, known, d, now), openvex(st, known, d.provider_name, d.namespace, now)))
    return out


def write_vex(result, folder: str | Path, *, incident=None, now: dt.datetime | None = None) -> list[Path]:
    """Write every document into folder/csaf/ and folder/openvex/ (file names from the CSAF tracking id, lowercased
    as CSAF §5 says); an invalid CSAF document is a KvirError naming it and its first error."""
    from kvir.core.errors import KvirError
    from kvir.report.validate import validate_csaf
    from kvir.spec.model import IncidentSpec, load_spec

    spec = incident if isinstance(incident, IncidentSpec) or incident is None else load_spec(incident)
    configs = result.node_configs if hasattr(result, "node_configs") else result
    root = Path(folder)
    written: list[Path] = []
    for st, known, csaf, ovex in vex_documents(configs, spec, now):
        name = tracking_id(st.node, known).lower().replace(".", "_")
        check = validate_csaf(csaf)
        if check.valid is False:
            raise KvirError(f"CSAF VEX for {st.node} is not valid: {check.errors[0]}")
        for sub, doc in (("csaf", csaf), ("openvex", ovex)):
            path = root / sub / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            written.append(path)
    return written
