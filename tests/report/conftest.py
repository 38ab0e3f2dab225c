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


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`kvir demo` (the reference incident), rendered once for the session: its DemoResult. Fewer background
    requests and replays than the default demo; the incident (155 responses, 68 accounts) is the same. Five
    replays: at full size the first four read only pages nobody wrote, the fifth names sources (a source notice)."""
    from kvir.sim.demo import demo          # a missing stage is a failure here, never a skip

    result = demo(tmp_path_factory.mktemp("demo") / "out", requests=8000, replay_limit=5, progress=False)
    assert not [s for s, v in result.stages.items() if "skipped" in v], result.stages    # every stage ran
    assert (result.case / "reports" / "index.html").exists(), result.stages.get("report")
    return result


@pytest.fixture(scope="session")
def demo_reports(demo_run) -> Path:
    return demo_run.case / "reports"


@pytest.fixture(scope="session")
def ground_truth(demo_run) -> dict:
    """What the simulator planned (written from its own plan, never read by kvir): the expected values."""
    import json

    return json.loads((demo_run.fleet / "ground_truth" / "summary.json").read_text())
