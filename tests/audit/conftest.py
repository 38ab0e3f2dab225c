"""Fixtures for the audit tests: write hand-made start-up logs, run the audit, look rows up by node."""
from __future__ import annotations

from pathlib import Path

import pytest


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")
    return path


def rows(df, **where) -> list[dict]:
    """The rows of a DataFrame whose columns equal the given values, as dicts."""
    out = df
    for k, v in where.items():
        out = out[out[k] == v]
    return out.to_dict("records")


def one(df, **where) -> dict:
    r = rows(df, **where)
    assert len(r) == 1, f"expected one row for {where}, got {len(r)}: {r}"
    return r[0]


@pytest.fixture
def logdir(tmp_path: Path):
    """logdir(name, text) -> path of a log file written under tmp_path/logs/."""
    def make(name: str, text: str) -> Path:
        return write(tmp_path / "logs" / name, text)
    return make


@pytest.fixture(scope="session")
def fleet(tmp_path_factory) -> Path:
    """The simulated reference fleet (kvir simulate; 10,000 requests: the 155 exposed ones and the restarts
    are the same at every size), written once per session."""
    from kvir import simulate

    out = tmp_path_factory.mktemp("fleet") / "fleet"
    simulate(out, requests=10_000)
    return out
