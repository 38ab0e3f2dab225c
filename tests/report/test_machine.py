"""CSAF, OSV and CVE outputs: valid against the official schemas (shared/schemas) and the csaf package's
mandatory tests, with the facts of the engine bug in them."""
from __future__ import annotations

import copy
import json

import pytest

from kvir.report.validate import osv_schema, validate_csaf


def _load(rendered, rel):
    return json.loads(rendered.path(rel).read_text())


def _csaf_validator(schemas):
    from jsonschema import Draft202012Validator, FormatChecker
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4, DRAFT7

    first = schemas / "csaf" / "first"
    reg = Registry().with_resources([
        ("https://www.first.org/cvss/cvss-v2.0.json",
         Resource.from_contents(json.loads((first / "cvss-v2.0.json").read_text()), default_specification=DRAFT4)),
        ("https://www.first.org/cvss/cvss-v3.0.json",
         Resource.from_contents(json.loads((first / "cvss-v3.0.json").read_text()), default_specification=DRAFT4)),
        ("https://www.first.org/cvss/cvss-v3.1.json",
         Resource.from_contents(json.loads((first / "cvss-v3.1.json").read_text()), default_specification=DRAFT7)),
    ])
    schema = json.loads((schemas / "csaf" / "csaf_json_schema.json").read_text())
    return Draft202012Validator(schema, registry=reg, format_checker=FormatChecker())


@pytest.mark.parametrize("rel", ["csaf/kvir-2026-0001-sglang.json", "csaf/kvir-2026-0001.json"])
def test_csaf_official_schema_and_mandatory_tests(rendered, shared_schemas, rel):
    doc = _load(rendered, rel)
    errors = [e.message for e in _csaf_validator(shared_schemas).iter_errors(doc)]
    assert errors == []
    from csaf.csaf.v20 import validate

    report = validate(doc, preset="basic")
    failed = [(r.id, r.errors) for r in report.results if not r.passed and not r.skipped]
    assert report.overall_valid and failed == []
    assert sum(1 for r in report.results if r.group == "mandatory") >= 30   # the mandatory tests ran


def test_csaf_advisory_facts(rendered):
    doc = _load(rendered, "csaf/kvir-2026-0001-sglang.json")
    assert doc["document"]["category"] == "csaf_security_advisory"
    assert doc["document"]["tracking"]["id"] == "KVIR-2026-0001-sglang"     # file name per CSAF §5.1
    v = doc["vulnerabilities"][0]
    assert v["cwe"] == {"id": "CWE-488", "name": "Exposure of Data Element to Wrong Session"}
    assert v["product_status"] == {"known_affected": ["CSAFPID-0001"], "fixed": ["CSAFPID-0002"]}
    names = json.dumps(doc["product_tree"])
    # the spec's [defect] declares the provider's statement (0.5.22); the evidence is SGLang, so the build
    # table's reading of the code (0.5.20 is the first build that never transfers the stub) is quoted beside it
    assert "vers:pypi/<0.5.22" in names and "pkg:pypi/sglang@0.5.22" in names
    fix = next(r["details"] for r in v["remediations"] if r["category"] == "vendor_fix")
    assert "0.5.20 is the first build that never transfers" in fix
    assert "This document uses 0.5.22, declared in incident.toml (the provider's post-incident report" in fix
    assert {r["category"] for r in v["remediations"]} == {"vendor_fix", "workaround"}
    assert doc["document"]["acknowledgments"][0]["names"] == ["A. Researcher"]
    assert list(doc) == sorted(doc)   # keys sorted (CSAF: SHOULD)


def test_csaf_incident_facts(rendered):
    doc = _load(rendered, "csaf/kvir-2026-0001.json")
    assert doc["document"]["category"] == "csaf_security_incident_response"
    assert any(r["category"] == "external" for r in doc["document"]["references"])
    summary = doc["document"]["notes"][0]["text"]
    assert "10 responses" in summary and "4 customer accounts" in summary
    assert "Between 2026-08-27 06:15 and 2026-09-09 13:55 UTC, 10 responses" in summary   # "between A and B"
    assert "4 customer accounts (7 responses) and 2 account(s) incident.toml labels" in summary


def test_csaf_validator_catches_a_broken_document(rendered):
    doc = _load(rendered, "csaf/kvir-2026-0001-sglang.json")
    bad = copy.deepcopy(doc)
    bad["vulnerabilities"][0]["cwe"]["name"] = "Some Other Name"              # 6.1.11
    bad["vulnerabilities"][0]["product_status"]["fixed"] = ["CSAFPID-9999"]   # 6.1.1
    check = validate_csaf(bad)
    ok, errors = check.valid, check.errors
    assert ok is False
    assert any(e.startswith("6.1.11") for e in errors) and any(e.startswith("6.1.1 ") for e in errors)


def test_osv_official_schema_and_range(rendered, shared_schemas):
    from jsonschema import Draft202012Validator

    doc = _load(rendered, "osv/x_KVIR-2026-0001.json")
    official = json.loads((shared_schemas / "osv" / "schema.json").read_text())
    assert list(Draft202012Validator(official).iter_errors(doc)) == []
    assert osv_schema() == official          # the copy kvir ships is the official file
    aff = doc["affected"][0]
    assert aff["package"] == {"ecosystem": "PyPI", "name": "sglang", "purl": "pkg:pypi/sglang"}
    assert aff["ranges"] == [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "0.5.22"}]}]
    assert "(Source: declared in incident.toml [defect].)" in doc["details"]
    assert "0.5.20 is the first build that never transfers" in doc["details"]
    assert doc["id"] == "x_KVIR-2026-0001" and doc["credits"][0] == {"name": "A. Researcher", "type": "REPORTER"}


def test_cve_container_official_schema(rendered, shared_schemas):
    from cvelib.cve_api import CveRecord
    from jsonschema import Draft7Validator

    doc = _load(rendered, "cve/cna_container.json")
    official = json.loads((shared_schemas / "cve" / "CVE_JSON_cnaPublishedContainer_5.1.1.json").read_text())
    assert [e.message for e in Draft7Validator(official).iter_errors(doc)] == []
    CveRecord.validate(doc)
    v = doc["affected"][0]["versions"][0]
    assert v == {"version": "0", "lessThan": "0.5.22", "status": "affected", "versionType": "python"}
    assert doc["problemTypes"][0]["descriptions"][0]["cweId"] == "CWE-488"
    times = [t["time"] for t in doc["timeline"]]
    assert times == sorted(times) and "2026-09-08T09:00:00Z" in times


def test_json_templates_keep_hostile_values_inside_strings(tmp_path, small_case):
    """A provider name with quotes, a closing brace and markup stays one JSON string in every document."""
    import shutil

    from kvir import open_case
    from kvir.report import report

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    hostile = 'Evil", "x": {"y": 1}} </script><b>'
    case = open_case(dst)
    try:
        case.con.execute("UPDATE disclosure SET value = $v WHERE key = 'provider'", {"v": json.dumps(hostile)})
    finally:
        case.close()
    r = report(dst, only=["csaf", "osv", "cve"])
    assert r.ok
    doc = json.loads((dst / "reports/csaf/kvir-2026-0001.json").read_text())
    assert doc["document"]["publisher"]["name"] == hostile
    osv = json.loads((dst / "reports/osv/x_KVIR-2026-0001.json").read_text())
    assert "x" not in osv and osv["credits"][1]["name"] == hostile


# CVSS v3.1 base scores of well-known vectors, as FIRST's and NVD's calculators give them
KNOWN_SCORES = [("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8, "CRITICAL"),
                ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H", 10.0, "CRITICAL"),
                ("CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:N/A:N", 5.5, "MEDIUM"),
                ("CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N", 6.1, "MEDIUM"),
                ("CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N", 6.3, "MEDIUM"),
                ("CVSS:3.1/AV:P/AC:H/PR:H/UI:R/S:U/C:L/I:N/A:N", 1.6, "LOW"),
                ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0, "NONE")]


@pytest.mark.parametrize("vector, score, severity", KNOWN_SCORES)
def test_cvss_base_score(vector, score, severity):
    from kvir.report.cvss import parse_vector

    got = parse_vector(vector)
    assert (got.base_score, got.severity) == (score, severity)


def test_csaf_recommended_tests_pass_and_the_values_are_the_analysts(rendered):
    """Both CSAF documents pass every offline test set of the csaf package (no warning); the canonical URL,
    the score and the dates are the ones worked out by hand from the fleet's [disclosure]."""
    from csaf.csaf.v20 import validate

    base = "https://inference.example.com/.well-known/csaf/amber/2026/"
    for rel, name in (("csaf/kvir-2026-0001-sglang.json", "kvir-2026-0001-sglang.json"),
                      ("csaf/kvir-2026-0001.json", "kvir-2026-0001.json")):
        doc = _load(rendered, rel)
        report = validate(doc, preset="full", skip_rules=frozenset({"6.3.6", "6.3.7", "6.3.8"}))
        bad = [(r.id, r.group) for r in report.results
               if not r.passed and not r.skipped and r.group != "informative"]
        assert bad == [], (rel, bad)
        assert {"category": "self", "summary": "Canonical URL", "url": base + name} in doc["document"]["references"]
        t = doc["document"]["tracking"]
        assert t["initial_release_date"] == t["current_release_date"] == "2026-10-26T09:00:00Z"
    v = _load(rendered, "csaf/kvir-2026-0001-sglang.json")["vulnerabilities"][0]
    score = v["scores"][0]
    assert score["products"] == ["CSAFPID-0001"]
    assert (score["cvss_v3"]["baseScore"], score["cvss_v3"]["baseSeverity"]) == (6.3, "MEDIUM")
    assert all("date" in i for i in v["involvements"])
    osv = _load(rendered, "osv/x_KVIR-2026-0001.json")
    assert osv["published"] == "2026-10-26T09:00:00Z"
    assert osv["severity"] == [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"}]
    cve = _load(rendered, "cve/cna_container.json")
    assert cve["metrics"][0]["cvssV3_1"]["baseScore"] == 6.3


def test_without_the_keys_the_warnings_stay_and_the_keys_are_listed(tmp_path, small_case):
    """kvir never chooses a score or a URL: without cvss_v3 and csaf_base_url, 6.2.3 and 6.2.11 stay as
    warnings and the index lists both keys as not set."""
    import shutil

    from kvir import open_case
    from kvir.report import report

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    case = open_case(dst)
    try:
        case.con.execute("DELETE FROM disclosure WHERE key IN ('cvss_v3', 'csaf_base_url')")
    finally:
        case.close()
    r = report(dst, only=["csaf"])
    adv = next(v for v in r.validations if v.document.endswith("-sglang.json"))
    assert adv.valid is True
    assert sorted(w.split()[0] for w in adv.warnings) == ["6.2.11", "6.2.3"]
    index = r.index.read_text()
    assert "csaf_base_url" in index and "cvss_v3" in index and "badge warn" in index


def test_bad_disclosure_keys_name_the_key():
    from kvir.core.errors import KvirError
    from kvir.report.disclosure import parse_disclosure

    with pytest.raises(KvirError, match=r"disclosure\.cvss_v3"):
        parse_disclosure({"cvss_v3": "CVSS:3.1/AV:N/AC:H"}, "X")
    with pytest.raises(KvirError, match=r"disclosure\.csaf_base_url"):
        parse_disclosure({"csaf_base_url": "http://insecure.example.com/csaf/"}, "X")


def test_the_validators_are_default_dependencies():
    """A plain `pip install kvir` (no extras) brings every validator the report runs, so the documents of
    the README's first command are validated ("valid" per document in the index, no "not installed")."""
    from importlib.metadata import requires

    plain = {r.split(";")[0].split(">")[0].split("=")[0].strip().lower() for r in requires("kvir") or []
             if "extra ==" not in r}
    assert {"csaf", "cvelib", "jsonschema"} <= plain


def test_the_declared_fix_and_the_code_are_both_quoted_only_for_sglang_evidence():
    from kvir.report.defect import defect_for
    from kvir.report.plugin import report_part

    table = report_part("oversized-prompt").defect_knowledge    # SGLang's build table

    raw = {"package": "sglang", "fixed_version": "0.5.22", "description": "x", "fixed_source": "a statement"}
    sglang = [{"engine": "sglang", "role": "prefill", "holds_context": False, "stub_transferred": True,
               "node": "p0", "build": "0.5.19", "build_evidence": "server_args dump shaped dict"}]
    d, why = defect_for(raw, sglang, "unknown", table)
    assert why == "" and d.source == "spec" and d.fixed_version == "0.5.22"
    assert "0.5.20 is the first build that never transfers" in d.code_note
    assert "This document uses 0.5.22, declared in incident.toml (a statement)" in d.code_note
    assert defect_for(raw, [], "unknown", table)[0].code_note == ""            # no SGLang evidence: the table is not applied
    vllm = {"package": "vllm", "fixed_version": "0.31.1", "description": "x"}
    assert defect_for(vllm, sglang, "unknown", table)[0].code_note == ""
    # no [defect]: the table's own defect, said as such, only when the evidence matches it
    t, _ = defect_for({}, sglang, "unknown", table)
    assert t.source == "build table" and t.fixed_version == "0.5.20" and "matched by kvir's SGLang build table" in t.how
    none, why = defect_for({}, [], "unknown", table)
    assert none is None and "no engine advisory" in why and "[defect]" in why
