"""Which fixture files each registered format has, and how to read them.

Generated fixtures live in tests/fixtures/<format>/ with a meta.json (tests/fixtures/README.md): the
software and versions that wrote each file, the command, the date, and the reading options (source_tz).
The hand-written edge-case fixtures in tests/formats/fixtures/<folder>/ (expected.py) count too."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .expected import FIXTURES as HAND_FIXTURES
from .expected import FORMAT_OF

GENERATED = Path(__file__).resolve().parent.parent / "fixtures"
# hand-written fixture folders: the zone their naive times are in (expected.py SOURCES_TOML)
_HAND_TZ = {"sglang_json": "America/Chicago", "sglang_text": "Europe/Berlin", "sglang_metrics": "America/Chicago",
            "vllm": "Asia/Tokyo"}


@dataclass(frozen=True)
class Fixture:
    format: str
    path: Path
    generated: bool                 # written by the format's own software (meta.json says which)
    options: dict = field(default_factory=dict)   # source_tz, ...
    meta: dict = field(default_factory=dict)      # the file's entry in meta.json


def meta_of(fmt: str) -> dict | None:
    p = GENERATED / fmt / "meta.json"
    return json.loads(p.read_text()) if p.exists() else None


def generated_fixtures(fmt: str) -> list[Fixture]:
    meta = meta_of(fmt)
    if meta is None:
        return []
    out = []
    for rel, entry in sorted(meta["files"].items()):
        opts = {k: v for k, v in {"source_tz": entry.get("source_tz", meta.get("source_tz"))}.items() if v}
        out.append(Fixture(fmt, GENERATED / fmt / rel, entry.get("made_by", meta.get("made_by")) == "software",
                           opts, entry))
    return out


def hand_fixtures(fmt: str) -> list[Fixture]:
    out = []
    for folder, name in FORMAT_OF.items():
        if name != fmt:
            continue
        opts = {"source_tz": _HAND_TZ[folder]} if folder in _HAND_TZ else {}
        for p in sorted((HAND_FIXTURES / folder).rglob("*")):
            if p.is_file():
                out.append(Fixture(fmt, p, False, opts))
    return out


def fixtures_of(fmt: str) -> list[Fixture]:
    """Every fixture of a format, generated ones first."""
    return generated_fixtures(fmt) + hand_fixtures(fmt)
