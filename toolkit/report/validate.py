"""Validation of the machine-readable documents, as part of rendering.

    CSAF 2.0   the `csaf` package (PyPI, by the CSAF TC editor): JSON schema + the 33 mandatory tests
               (preset "basic"), offline
    OSV        jsonschema against the OSV schema shipped in kvir.templates/static (a verbatim copy of
               ossf/osv-schema validation/schema.json)
    CVE 5.x    cvelib's CveRecord.validate: the CVE 5.1.1 cnaPublishedContainer schema, offline

A validator that is not installed gives valid=None ("not validated"), never True. A document that fails
is written as *.invalid.json next to its errors and reported; it is never written as if valid.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any


@dataclass
class Validation:
    document: str              # path relative to reports/
    standard: str              # CSAF 2.0 / OSV / CVE 5.1
    validator: str
    valid: bool | None         # None: no validator available
    errors: list[str] = field(default_factory=list)


def validate_csaf(doc: dict[str, Any]) -> tuple[str, bool | None, list[str]]:
    try:
        from csaf.csaf.v20 import validate
    except ImportError:
        return "csaf package not installed (pip install csaf)", None, []
    report = validate(doc, preset="basic")
    errors = []
    for r in report.results:
        if r.passed or r.skipped:
            continue
        if r.group not in ("schema", "mandatory", "profile"):
            continue
        for e in r.errors or (None,):
            where = f" at {e.instance_path}" if e else ""
            errors.append(f"{r.id} {r.title}{where}: {e.message if e else 'failed'}")
    ok = report.overall_valid and not errors
    return "csaf (CSAF 2.0, schema + mandatory tests, offline)", ok, errors


def osv_schema() -> dict[str, Any]:
    return json.loads(resources.files("kvir.templates").joinpath("static", "osv_schema.json").read_text())


def validate_osv(doc: dict[str, Any]) -> tuple[str, bool | None, list[str]]:
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        return "jsonschema not installed (pip install jsonschema)", None, []
    v = Draft202012Validator(osv_schema())
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
              for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]
    return "jsonschema + OSV schema 1.7 (ossf/osv-schema)", not errors, errors


def validate_cve(doc: dict[str, Any]) -> tuple[str, bool | None, list[str]]:
    try:
        from cvelib.cve_api import CveRecord, CveRecordValidationError
    except ImportError:
        return "cvelib not installed (pip install cvelib)", None, []
    try:
        CveRecord.validate(doc)
    except CveRecordValidationError as e:
        errs = [f"{'/'.join(map(str, x.absolute_path)) or '(root)'}: {x.message}" for x in (e.errors or [])]
        return "cvelib (CVE 5.1.1 cnaPublishedContainer schema)", False, errs or [str(e)]
    return "cvelib (CVE 5.1.1 cnaPublishedContainer schema)", True, []


VALIDATORS = {"csaf": validate_csaf, "osv": validate_osv, "cve": validate_cve}
