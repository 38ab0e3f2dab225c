"""Helpers for the format tests: triage a fixture folder with the shared minimal incident spec."""
from __future__ import annotations

from pathlib import Path

import pytest

import kvir

from ..conftest import spec_text
from .expected import FIXTURES


@pytest.fixture
def run_fixture(tmp_path: Path):
    """run_fixture("sglang_json", source_tz=..., rule=..., **triage kwargs) -> TriageResult."""
    def run(*folders: str, rule: str = "public", paths: list[Path] | None = None, **kw):
        spec = tmp_path / "incident.toml"
        spec.write_text(spec_text(rule, engine="sglang"))   # the reference fleet's engine: gateways name none
        kw.setdefault("hash", "none")
        return kvir.triage(spec, paths or [FIXTURES / f for f in folders], out=tmp_path / "case", **kw)
    return run


def affected_ids(result) -> set[str]:
    return set(result.affected["request_id"])


def categories(result) -> dict[str, str]:
    return dict(result.case.con.execute("SELECT request_id, category FROM triage_hits").fetchall())
