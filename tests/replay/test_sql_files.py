"""The replay stage's SQL files (replay/sql/*.sql) follow the project's query rules: a header saying what
each answers, documented $params equal to the ones used, values bound (never formatted into the text)."""
from __future__ import annotations

from importlib import resources

import pytest

from kvir.errors import KvirError
from kvir.replay import queries

NAMES = sorted(p.name[:-4] for p in resources.files("kvir.replay").joinpath("sql").iterdir() if p.name.endswith(".sql"))


def test_the_files_are_found():
    assert {"targets", "node_history", "node_configs", "incident_facts", "write_results", "write_exposure",
            "summary", "sources_by_account"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_header_and_params(name):
    q = queries.load(name)
    assert q.description, f"replay/sql/{name}.sql: the first line must say what it answers"
    head = [line for line in q.text.splitlines() if line.startswith("--")]
    assert any(h.lower().startswith("-- params:") for h in head), f"replay/sql/{name}.sql: no '-- Params:' line"
    assert set(q.declared) == set(q.params), f"replay/sql/{name}.sql documents {q.declared}, uses {q.params}"
    assert "{" not in q.text and "%s" not in q.text          # nothing is formatted into the SQL


def test_missing_parameter_is_refused(tmp_path):
    class FakeCase:
        con = None

    with pytest.raises(KvirError, match=r"\$node"):
        queries.run(FakeCase(), "node_history", {"until": 0})
