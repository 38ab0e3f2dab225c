"""Every report query says what it answers and what it takes, every [disclosure] key is documented (a
Datasette-style documentation test; templates: test_coverage.py)."""
from __future__ import annotations

import re

import pytest

from kvir.report.disclosure import KEYS
from kvir.core.sql import all_query_names, load
from kvir.spec.template import template

REPORT_QUERIES = [n for n in all_query_names() if n.startswith("report/")]


@pytest.mark.parametrize("name", REPORT_QUERIES)
def test_report_query_header(name):
    q = load(name)
    assert q.description
    assert set(q.params) == set(q.declared), f"{name}: header documents {q.declared}, SQL uses {q.params}"


def test_disclosure_keys_are_documented_in_the_spec_template():
    for key in KEYS:
        pattern = r"^# \[\[disclosure\.action_items\]\]" if key == "action_items" else rf"^# {key} = "
        assert re.search(pattern, template(), re.M), key


def test_defect_keys_are_documented_in_the_spec_template():
    from kvir.spec.model import DEFECT_KEYS

    for key in DEFECT_KEYS:
        assert re.search(rf"^# {key} = ", template(), re.M), key
