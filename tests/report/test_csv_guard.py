"""CSV formula guard (issue 24): kept in every CSV, said in the manifest per file and per column, and the
exact values in files that need no guard (the Parquet twins, the case tables). Expected values from the
small fleet's hand-written rows (tests/report/fleet.py)."""
from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq

from .fleet import FORMULA, GW_MODEL

AFFECTED_BY_FORMULA_ACCOUNT = 1       # r06 (fleet.REQUESTS): the one affected response of the account =HYPERLINK(...)
AFFECTED = 10                         # every one through the gateway, whose model is @cf/zai-org/glm-5.3


def test_csv_is_guarded_and_the_parquet_twin_is_exact(small_case):
    rows = list(csv.DictReader((small_case / "affected.csv").open(encoding="utf-8")))
    exact = pq.read_table(small_case / "affected.parquet").to_pylist()
    assert {r["model"] for r in rows} == {"'" + GW_MODEL}            # the guard stays: a spreadsheet shows text
    assert {r["model"] for r in exact} == {GW_MODEL}                 # the twin holds the value as logged
    assert sorted(r["request_id"] for r in rows) == sorted(r["request_id"] for r in exact)
    accounts = {r["account_id"] for r in pq.read_table(small_case / "accounts.parquet").to_pylist()}
    assert FORMULA in accounts and "'" + FORMULA not in accounts
    assert "'" + FORMULA in {r["account_id"] for r in csv.DictReader((small_case / "accounts.csv").open())}
    for twin in ("nodes.parquet", "excluded.parquet"):
        assert (small_case / twin).exists()


def test_the_manifest_says_what_the_guard_changed_and_where_the_exact_values_are(small_case):
    m = json.loads((small_case / "manifest.json").read_text())["csv"]
    assert "apostrophe" in m["guard"] and "exact" in m["guard"]
    assert m["files"]["affected.csv"] == {
        "exact": "affected.parquet",
        "changed_cells": {"account_id": {"formula_prefixed": AFFECTED_BY_FORMULA_ACCOUNT, "controls_escaped": 0},
                          "model": {"formula_prefixed": AFFECTED, "controls_escaped": 0},
                          # the alias each response matched: the gateway's name, which starts with "@"
                          "matched_name": {"formula_prefixed": AFFECTED, "controls_escaped": 0}}}
    assert m["files"]["accounts.csv"]["exact"] == "accounts.parquet"
    assert m["files"]["nodes.csv"] == {"exact": "nodes.parquet", "changed_cells": {}}
    assert m["files"]["quarantine.csv"]["exact"] == "case.duckdb table quarantine"
    # every CSV the case holds is accounted for
    assert {p.name for p in small_case.glob("*.csv")} <= set(m["files"])


def test_every_stage_records_its_csv_guard(demo_run):
    """Triage, audit and replay each write CSVs into the demo's case: each one has its manifest entry."""
    m = json.loads((demo_run.case / "manifest.json").read_text())["csv"]
    assert {p.name for p in demo_run.case.glob("*.csv")} == set(m["files"])
    assert m["files"]["replay_exposure.csv"]["exact"] == "replay_exposure.parquet"
    assert m["files"]["findings.csv"]["exact"].startswith("case.duckdb table findings")
    model = pq.read_table(demo_run.case / "affected.parquet").column("model").to_pylist()
    assert set(model) <= {"@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"} and "'" not in "".join(model)
