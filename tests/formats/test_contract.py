"""The record contract, checked for every registered format (Datasette-style: a format without a fixture,
or an adapter whose output drifts from queries/case/create_tables.sql's records_text, fails here).

For each format: its adapter runs over its fixtures through the real ingest; the columns the adapter
itself emits must be contract columns with the contract's types, and what is filed into records_text
(after the shared epilogue, kvir.ingest.epilogue) must be the contract exactly: names, order, types."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import kvir.ingest.epilogue as epi
import kvir.ingest.run as run_mod
from kvir.case.records import record_columns
from kvir.case.store import Case
from kvir.ingest.formats import FORMATS
from kvir.ingest.run import IngestOptions, ingest, plan_sources
from kvir.spec.model import load_spec

from ..conftest import spec_text
from .fixture_index import fixtures_of

CONTRACT = [(c.name, c.type) for c in record_columns()]


def test_every_format_has_a_fixture():
    missing = [name for name in FORMATS if not fixtures_of(name)]
    assert missing == [], f"formats without a fixture: {missing}"


def test_contract_is_the_case_table():
    names = [n for n, _ in CONTRACT]
    assert names[:4] == ["source_id", "source_line", "kind", "reason"]
    assert {"request_id", "ts", "prompt_tokens", "outcome", "raw"} <= set(names)
    assert dict(CONTRACT)["ts"] == "TIMESTAMP WITH TIME ZONE"
    assert next(c for c in record_columns() if c.name == "ts_granularity_s").default == "0"


def _ingest_capturing(tmp_path: Path, name: str, paths: list[Path], options: dict, monkeypatch):
    emitted: list[dict[str, str]] = []
    staged: list[list[tuple[str, str]]] = []
    real_columns, real_run = epi.adapter_columns, run_mod.run_adapter

    def columns(*a, **kw):
        out = real_columns(*a, **kw)
        emitted.append(out)
        return out

    def run(con, iname, inp, sql, *a, **kw):
        # what the adapter + epilogue give (records_text takes it BY NAME, so its order is checked here);
        # a stream becomes one table (fixtures are small): the same rows, described before they are filed
        if isinstance(inp, pa.RecordBatchReader):
            inp = inp.read_all()
        if inp is not None:
            con.register(iname, inp)
        staged.append([(r[0], r[1]) for r in con.execute(f"DESCRIBE {sql}").fetchall()])
        if inp is not None:
            con.unregister(iname)
        real_run(con, iname, inp, sql, *a, **kw)

    monkeypatch.setattr(epi, "adapter_columns", columns)
    monkeypatch.setattr(run_mod, "run_adapter", run)
    spec_path = tmp_path / "incident.toml"
    spec_path.write_text(spec_text("public", options.get("spec_extra", "")))
    spec = load_spec(spec_path)
    opts = IngestOptions(format=name, source_tz=options.get("source_tz"), hash="none")
    sources = plan_sources(paths, spec, opts)
    case = Case.create(tmp_path / "case")
    ingest(case, sources, opts)
    return case, emitted, staged


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_adapter_output_is_the_contract(name, tmp_path, monkeypatch):
    fixtures = fixtures_of(name)
    assert fixtures, name
    paths = [f.path for f in fixtures]
    case, emitted, staged = _ingest_capturing(tmp_path, name, paths, fixtures[0].options, monkeypatch)
    contract = {n: t for n, t in CONTRACT if n not in ("kind", "reason")} | {"verdict": epi.VERDICT_TYPE}
    assert emitted, f"{name}: the adapter never ran"
    for cols in emitted:
        for required in epi.REQUIRED:
            assert required in cols, f"{name} does not emit {required}"
        for col, typ in cols.items():
            assert col in contract, f"{name} emits {col}, not a contract column (kind and reason come from verdict)"
            assert typ == contract[col], f"{name}.{col} is {typ}, the contract says {contract[col]}"
    views = [t for t in case.tables() if t.startswith("records_src")]    # in-place sources (Parquet)
    assert staged or views, f"{name}: nothing was filed"
    for desc in staged:
        assert desc == CONTRACT, name
    for view in [t for t in case.tables() if t.startswith("records_src")]:
        desc = [(r[0], r[1]) for r in case.con.execute(f"DESCRIBE {view}").fetchall()]
        assert desc == CONTRACT, (name, view)
    # every quarantined row of a text source is in quarantine_text, and only those
    bad = dict(case.con.execute(
        "SELECT source_id, sum(n) FROM source_counts WHERE kind = 'bad' GROUP BY ALL").fetchall())
    kept = dict(case.con.execute("SELECT source_id, count(*) FROM quarantine_text GROUP BY ALL").fetchall())
    if not any(t.startswith("records_src") for t in case.tables()):
        assert kept == bad, name
    case.close()
