"""Validation of the machine-readable documents, as part of rendering (the validators are default
dependencies of kvir: a plain install validates).

    CSAF 2.0   the `csaf` package (PyPI, by the CSAF TC editor), offline, preset "full": the JSON schema and
               the 33 mandatory tests decide validity; the recommended tests (6.2.x) are kept as warnings and
               the informative ones (6.3.x) as infos. 6.3.6 / 6.3.7 (URLs reachable: network) and 6.3.8
               (spell check: not implemented by the package) are not run and listed as such.
    OSV        jsonschema against the OSV schema shipped in kvir.templates/static (a verbatim copy of
               ossf/osv-schema validation/schema.json)
    CVE 5.x    cvelib's CveRecord.validate: the CVE 5.1.1 cnaPublishedContainer schema, offline

A validator that cannot be imported gives valid=None ("not validated"), never True. A document that fails
is written as *.invalid.json next to its errors and reported; it is never written as if valid.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable

# CSAF tests that are not run offline, with the reason shown in the index
CSAF_NOT_RUN = {"6.3.6": "URL reachability, needs the network", "6.3.7": "URL reachability, needs the network",
                "6.3.8": "spell check, not implemented by the csaf package"}


@dataclass
class Validation:
    document: str              # path relative to reports/
    standard: str              # CSAF 2.0 / OSV / CVE 5.1
    validator: str
    valid: bool | None         # None: no validator available
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)    # CSAF recommended tests (6.2.x)
    infos: list[str] = field(default_factory=list)       # CSAF informative tests (6.3.x)
    not_run: list[str] = field(default_factory=list)


@dataclass
class Check:
    """What one validator said about one document."""

    validator: str
    valid: bool | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)

    def for_document(self, document: str, standard: str) -> Validation:
        return Validation(document, standard, self.validator, self.valid, self.errors, self.warnings, self.infos,
                          self.not_run)


def _csaf_lines(result) -> list[str]:
    return [f"{result.id} {result.title}{f' at {e.instance_path}' if e else ''}: {e.message if e else 'failed'}"
            for e in (result.errors or [None])]


def validate_csaf(doc: dict[str, Any]) -> Check:
    try:
        from csaf.csaf.v20 import validate
    except ImportError:
        return Check("csaf package not installed (pip install csaf)", None)
    report = validate(doc, preset="full", skip_rules=frozenset(CSAF_NOT_RUN))
    errors, warnings, infos = [], [], []
    for r in report.results:
        if r.passed or r.skipped:
            continue
        if r.group in ("schema", "mandatory", "profile"):
            errors += _csaf_lines(r)
        elif r.group == "recommended":
            warnings += _csaf_lines(r)
        else:
            infos += _csaf_lines(r)
    not_run = [f"{k}: {why}" for k, why in CSAF_NOT_RUN.items()]
    # preset "full" sets overall_valid False on any warning: validity is the schema and mandatory groups only
    return Check("csaf (CSAF 2.0: schema, mandatory, recommended and informative tests, offline)", not errors,
                 errors, warnings, infos, not_run)


def osv_schema() -> dict[str, Any]:
    return json.loads(resources.files("kvir.templates").joinpath("static", "osv_schema.json").read_text())


def validate_osv(doc: dict[str, Any]) -> Check:
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        return Check("jsonschema not installed (pip install jsonschema)", None)
    v = Draft202012Validator(osv_schema())
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
              for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]
    return Check("jsonschema + OSV schema 1.7 (ossf/osv-schema)", not errors, errors)


def validate_cve(doc: dict[str, Any]) -> Check:
    name = "cvelib (CVE 5.1.1 cnaPublishedContainer schema)"
    try:
        from cvelib.cve_api import CveRecord, CveRecordValidationError
    except ImportError:
        return Check("cvelib not installed (pip install cvelib)", None)
    try:
        CveRecord.validate(doc)
    except CveRecordValidationError as e:
        errs = [f"{'/'.join(map(str, x.absolute_path)) or '(root)'}: {x.message}" for x in (e.errors or [])]
        return Check(name, False, errs or [str(e)])
    return Check(name, True)


VALIDATORS: dict[str, Callable[[dict[str, Any]], Check]] = {"csaf": validate_csaf, "osv": validate_osv,
                                                             "cve": validate_cve}
