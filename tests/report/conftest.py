"""Fixtures for the report tests: a small case built by kvir.triage over hand-written logs (fleet.py),
with hand-made audit and replay rows, rendered once per session; and the same case without audit and
replay (stages not run)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kvir import triage
from kvir.report import report

from . import fleet

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"   # verbatim official schemas (tests/schemas/SOURCES.md)


def _build(root: Path, with_stages: bool) -> Path:
    spec = fleet.write_fleet(root / "fleet")
    result = triage(spec, [], out=root / "case")
    if with_stages:
        fleet.add_audit_rows(result.case.con)
        fleet.add_replay_rows(result.case.con)
    result.case.close()
    return root / "case"


@pytest.fixture(scope="session")
def small_case(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("report_full"), True)


@pytest.fixture(scope="session")
def rendered(small_case):
    """The ReportResult of rendering every artifact of the small case (audit + replay present)."""
    return report(small_case)


@pytest.fixture(scope="session")
def bare_case(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("report_bare"), False)


@pytest.fixture(scope="session")
def bare_rendered(bare_case):
    return report(bare_case)


@pytest.fixture(scope="session")
def shared_schemas() -> Path:
    return SCHEMAS
