"""Every template and report query says what it is and what it takes (a Datasette-style documentation test)."""
from __future__ import annotations

import re
from importlib import resources

import pytest

from kvir.report.disclosure import KEYS
from kvir.core.sql import all_query_names, load
from kvir.spec.model import TEMPLATE

TEMPLATES = sorted(p.name for p in resources.files("kvir.templates").iterdir() if p.name.endswith(".j2"))
REPORT_QUERIES = [n for n in all_query_names() if n.startswith("report/")]


def test_there_is_one_template_per_artifact():
    assert {"timeline.md.j2", "timeline.html.j2", "postmortem.md.j2", "public_report.md.j2", "advisory.md.j2",
            "csaf_advisory.json.j2", "csaf_incident.json.j2", "osv.json.j2", "cve_cna.json.j2",
            "notice_affected.md.j2", "notice_source.md.j2", "gdpr_art33.md.j2", "index.html.j2"} <= set(TEMPLATES)


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_starts_with_what_it_is_and_its_variables(name):
    text = resources.files("kvir.templates").joinpath(name).read_text()
    m = re.match(r"\{#-?\s*(\S+): (.+?)-?#\}", text, re.S)
    assert m, f"{name} must start with a {{# name: what it is ... Variables: ... #}} comment"
    assert m.group(1) == name
    assert "Variables:" in m.group(2) and len(m.group(2)) > 80


@pytest.mark.parametrize("name", REPORT_QUERIES)
def test_report_query_header(name):
    q = load(name)
    assert q.description
    assert set(q.params) == set(q.declared), f"{name}: header documents {q.declared}, SQL uses {q.params}"


def test_disclosure_keys_are_documented_in_the_spec_template():
    for key in KEYS:
        pattern = r"^# \[\[disclosure\.action_items\]\]" if key == "action_items" else rf"^# {key} = "
        assert re.search(pattern, TEMPLATE, re.M), key
