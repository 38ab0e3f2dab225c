"""Each audit rule fires exactly where it should, and nowhere else, on a hand-made fleet whose every line is
in the exact grammar of the build it claims (tests/audit/grammar.py: each build's own settings dump, its
format strings). No log prints a version: the builds come from the dumps alone.

Deployment "glm" (PD, context 1,048,576 advertised), times America/Chicago (CDT, UTC-5), inventory only names
nodes and deployments:
  glm-prefill-0  0.5.19 dump; pool 681,280 < context; kv_canary 'none'; `export ..._BATCH_INDICES=1024` (a
                 variable 0.5.19 does not read); 3 scheduler rejections (2 at 10:xx UTC, 1 at 11:00 UTC)
  glm-prefill-1  0.5.22 dump (redacted); context 524,288, pool 600,000 (holds its own); checksum True;
                 kv_canary 'log' with a healthy `[canary] ... protected_tokens=5120 ... violations=0` line;
                 `SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=0` (explicitly uncapped)
  glm-decode-0   0.5.19 dump (decode); pool 1,310,720; deferred release 1 in an os.environ dump (0.5.19 reads
                 it); one `Context corruption detected` line
  glm-decode-1   0.5.21 dump (decode); pool 900,000 < context; checksum True, canary 'none'; one `KV checksum
                 mismatch` line; no environment shown (0.5.21's default: deferred release on)
Deployment "legacy": legacy-decode-2  0.5.13 repr dump (decode); pool 2,000,000; kv_canary 'log'; canary
                 statistics `protected_tokens=8192 violations=2` and two `kv_canary violation:` records
Deployment "small" (not PD): small-0  0.5.19 dump (mode null); context 131,072 forced over the derived
                 32,768 (the override warning); pool 100,000
vLLM: refused-0 refused to start.

Hand-worked limits: max_req_input_len = min(context-1, pool-1) - 5:
  prefill-0 681,274; prefill-1 min(524,287, 599,999) - 5 = 524,282; decode-0 1,048,570; decode-1 899,994.
Builds (toolkit/rules/builds.toml): 0.5.13 and 0.5.19 transfer the stub; 0.5.21 and 0.5.22 do not; the checksum
flag exists from 0.5.21, the canary from 0.5.13, deferred release is read from 0.5.19 (on by default from
0.5.21), the batch cap from 0.5.20.
"""
from __future__ import annotations

import pytest

from kvir.audit import audit

from .conftest import one, rows, write
from .grammar import (canary_stats, canary_violation, checksum_mismatch, context_corruption, input_too_long, stamp,
                      startup)

CTX = 1_048_576


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("rules")
    write(d / "glm-prefill-0.log", "\n".join(
        ["export SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=1024"]
        + startup("0.5.19", "2026-08-26 22:10:00", mode="prefill", context=CTX, pool=681_280, tp=2)
        + [input_too_long("2026-08-27 05:05:00", 700_000, 681_274, "a1"),
           input_too_long("2026-08-27 05:59:59", 900_000, 681_274, "a2"),
           input_too_long("2026-08-27 06:00:00", 681_274, 681_274, "a3")]))
    write(d / "glm-prefill-1.log", "\n".join(
        ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=0"]
        + startup("0.5.22", "2026-08-26 22:11:00", mode="prefill", context=524_288, pool=600_000, tp=2,
                  canary="log", checksum=True)
        + [canary_stats("2026-08-27 01:00:00", 100, 5120, 0)]))
    write(d / "glm-decode-0.log", "\n".join(
        ["environ({'PATH': '/usr/bin', 'SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE': '1'})"]
        + startup("0.5.19", "2026-08-26 22:15:00", mode="decode", context=CTX, pool=1_310_720)
        + [context_corruption("2026-08-28 03:00:00", "r9", 9001, 9002)]))
    write(d / "glm-decode-1.log", "\n".join(
        startup("0.5.21", "2026-08-26 22:16:00", mode="decode", context=CTX, pool=900_000, checksum=True)
        + [checksum_mismatch("2026-08-29 04:00:00", "r7", 7007)]))
    write(d / "legacy-decode-2.log", "\n".join(
        startup("0.5.13", "2026-08-20 08:00:00", mode="decode", context=CTX, pool=2_000_000, canary="log")
        + [canary_stats("2026-08-20 09:00:00", 100, 8192, 0)] + canary_violation("2026-08-20 09:10:00")
        + canary_violation("2026-08-20 09:20:00", slot=99) + [canary_stats("2026-08-20 09:30:00", 200, 8192, 2)]))
    write(d / "small-0.log", "\n".join(
        startup("0.5.19", "2026-08-20 08:00:00", mode="null", context=131_072, pool=100_000)[:1]
        + [f"{stamp('2026-08-20 08:00:01')} User-specified context_length (131072) is greater than the derived "
           "context_length (32768). This may lead to incorrect model outputs or CUDA errors.",
           f"{stamp('2026-08-20 08:01:00', 'TP0')} max_total_num_tokens=100000, chunked_prefill_size=8192, "
           "max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB"]))
    write(d / "refused-0.log", "\n".join([
        "INFO 08-20 12:00:02 [core.py:69] Initializing a V1 LLM engine (v0.10.1) with config: model='m', max_seq_len=1048576",
        "ERROR 08-20 12:01:00 [core.py:515] ValueError: To serve at least one request with the models's max seq len (1048576), "
        "(96.00 GiB KV cache is needed, which is larger than the available KV cache memory (62.50 GiB). Based on the available "
        "memory, the estimated maximum model length is 682624.",
    ]))
    inv = write(d / "inventory.toml", """
[defaults]
source_tz = "America/Chicago"
year = 2026
[[node]]
name = "glm-prefill-0"
deployment = "glm"
[[node]]
name = "glm-prefill-1"
deployment = "glm"
[[node]]
name = "glm-decode-0"
deployment = "glm"
[[node]]
name = "glm-decode-1"
deployment = "glm"
[[node]]
name = "legacy-decode-2"
deployment = "legacy"
[[node]]
name = "small-0"
[[node]]
name = "refused-0"
""")
    return audit([d], inventory=inv)


def fired(result, rule_id: str, status: str | None = None) -> dict[str, str]:
    f = rows(result.findings, rule_id=rule_id)
    return {x["node"]: x["severity"] for x in f if status is None or x["status"] == status}


def msg(result, rule_id: str, node: str) -> str:
    return one(result.findings, rule_id=rule_id, node=node)["message"]


def test_builds_come_from_the_dumps(result):
    nc = result.node_configs.set_index("node")
    sg = nc[nc["engine"] == "sglang"]
    assert dict(sg["build"]) == {"glm-prefill-0": "0.5.19", "glm-prefill-1": "0.5.22",
                                 "glm-decode-0": "0.5.19", "glm-decode-1": "0.5.21",
                                 "legacy-decode-2": "0.5.13–0.5.13.post1", "small-0": "0.5.19"}
    assert sg["version"].isna().all()                   # no SGLang log names a version
    assert nc.loc["refused-0", "build"] == "0.10.1"     # vLLM prints its own
    assert nc.loc["glm-prefill-0", "build_evidence"].startswith("inferred from the start-up log: server_args dump shaped dict")


def test_limits_worked_out_by_hand(result):
    nc = result.node_configs.set_index("node")
    assert nc.loc["glm-prefill-0", "max_req_input_len"] == 681_274
    assert nc.loc["glm-prefill-1", "max_req_input_len"] == 524_282
    assert nc.loc["glm-decode-0", "max_req_input_len"] == 1_048_570
    assert nc.loc["glm-decode-1", "max_req_input_len"] == 899_994
    assert set(nc["name_source"]) == {"inventory (file name)"}
    assert nc.loc["glm-decode-0", "deferred_release"] == True  # noqa: E712  (os.environ repr dump)
    assert nc.loc["glm-prefill-0", "transfer_batch_cap"] == 1024
    assert nc.loc["glm-prefill-1", "transfer_batch_cap"] == 0
    assert (nc.loc["glm-prefill-1", "kv_canary"], nc.loc["glm-prefill-1", "kv_checksum"]) == ("log", True)


def test_kva001_pool_below_context(result):
    assert fired(result, "KVA001", "fail") == {"glm-prefill-0": "critical", "glm-decode-1": "high", "small-0": "medium"}
    assert fired(result, "KVA001", "unknown") == {}
    f = one(result.findings, rule_id="KVA001", node="glm-prefill-0")
    assert "681,280" in f["message"] and "681,274" in f["message"] and "0.5.19" in f["message"]
    assert f["evidence_line"] == 5            # lines: env, dump, 2 x allocation, then the pool line
    assert f["evidence_file"].endswith("glm-prefill-0.log")


def test_kva002_prefill_limit_below_decode_limit(result):
    # prefill-0 (681,274) and prefill-1 (524,282) both admit less than decode-0 (1,048,570) and decode-1 (899,994)
    assert fired(result, "KVA002") == {"glm-prefill-0": "high", "glm-prefill-1": "high"}
    f = one(result.findings, rule_id="KVA002", node="glm-prefill-0")
    assert f["related_node"] == "glm-decode-0" and "1,048,569" in f["message"] and "1 other decode node" in f["message"]
    assert f["related_evidence"].endswith("glm-decode-0.log:4")


def test_kva003_context_below_advertised(result):
    # only prefill-1: its pool holds its own (lowered) context, which is below the deployment's 1,048,576
    assert fired(result, "KVA003") == {"glm-prefill-1": "high"}
    assert "524,282" in one(result.findings, rule_id="KVA003")["message"]


def test_kva004_builds_that_transfer_the_stub(result):
    assert fired(result, "KVA004", "fail") == {"glm-prefill-0": "high", "glm-decode-0": "high", "legacy-decode-2": "high"}
    assert fired(result, "KVA004", "unknown") == {}     # every build here is placed by its dump
    m = msg(result, "KVA004", "glm-prefill-0")
    assert "SGLang 0.5.19 (inferred from the start-up log" in m and "older than" not in m


def test_kva005_to_kva008_safety_flags(result):
    assert fired(result, "KVA005", "fail") == {"glm-prefill-0": "medium", "glm-decode-0": "medium",
                                               "legacy-decode-2": "medium"}
    assert "has no --disaggregation-enable-kv-checksum" in msg(result, "KVA005", "glm-decode-0")
    assert fired(result, "KVA005", "unknown") == {}
    assert fired(result, "KVA006", "fail") == {"glm-prefill-0": "low", "glm-decode-0": "low", "glm-decode-1": "low"}
    assert "kv_canary='none'" in msg(result, "KVA006", "glm-decode-1")
    assert fired(result, "KVA007", "fail") == {"legacy-decode-2": "medium"}          # 0.5.13 has no deferred release
    assert fired(result, "KVA007", "unknown") == {}    # decode-1: 0.5.21 defaults it on; decode-0 sets it
    assert fired(result, "KVA008", "fail") == {"glm-prefill-0": "medium", "glm-prefill-1": "medium"}
    assert "set to 1024" in msg(result, "KVA008", "glm-prefill-0") and "does not read it" in msg(result, "KVA008", "glm-prefill-0")
    assert "=0" in msg(result, "KVA008", "glm-prefill-1")


def test_kva009_kva010(result):
    assert fired(result, "KVA009") == {"refused-0": "medium"}
    assert fired(result, "KVA010") == {"small-0": "medium"}
    assert "131,072" in one(result.findings, rule_id="KVA010")["message"]


def test_kva011_and_runtime_indicators(result):
    ri = result.runtime_indicators
    p0 = rows(ri, node="glm-prefill-0", indicator="input-length-exceeds")
    # 05:05 and 05:59:59 CDT are 10:05 and 10:59:59 UTC; 06:00:00 CDT is 11:00 UTC
    assert [(str(r["hour"])[:16], r["count"]) for r in p0] == [("2026-08-27 10:00", 2), ("2026-08-27 11:00", 1)]
    assert all(r["incident_signal"] and r["limit_tokens"] == 681_274 for r in p0)
    assert p0[0]["max_prompt_tokens"] == 900_000
    assert one(ri, node="glm-decode-0")["indicator"] == "context-corruption"
    assert one(ri, node="glm-decode-1")["indicator"] == "kv-checksum-mismatch"
    legacy = {r["indicator"]: r["count"] for r in rows(ri, node="legacy-decode-2")}
    assert legacy == {"kv-canary-violation": 2, "canary-violations-counted": 2}
    assert rows(ri, node="glm-prefill-1") == []          # a healthy canary's statistics are not a violation
    assert fired(result, "KVA011") == {"glm-prefill-0": "critical", "glm-decode-0": "high", "glm-decode-1": "high",
                                       "legacy-decode-2": "high"}
    m = msg(result, "KVA011", "glm-prefill-0")
    assert "3 prompt(s)" in m and "handed to decode as a 1-token stub" in m


def test_kva012_verification_on_evidence(result):
    assert fired(result, "KVA012", "fail") == {"glm-prefill-0": "medium", "glm-decode-0": "medium"}
    assert fired(result, "KVA012", "unknown") == {"glm-decode-1": "medium"}   # checksum on: prints nothing when it passes
    # glm-prefill-1 and legacy-decode-2: the canary's statistics show protected tokens: verified, no finding


def test_no_other_findings(result):
    expected = [      # a list: legacy-decode-2 has two KVA011 findings (two indicators)
        ("KVA001", "glm-prefill-0"), ("KVA001", "glm-decode-1"), ("KVA001", "small-0"),
        ("KVA002", "glm-prefill-0"), ("KVA002", "glm-prefill-1"), ("KVA003", "glm-prefill-1"),
        ("KVA004", "glm-prefill-0"), ("KVA004", "glm-decode-0"), ("KVA004", "legacy-decode-2"),
        ("KVA005", "glm-prefill-0"), ("KVA005", "glm-decode-0"), ("KVA005", "legacy-decode-2"),
        ("KVA006", "glm-prefill-0"), ("KVA006", "glm-decode-0"), ("KVA006", "glm-decode-1"),
        ("KVA007", "legacy-decode-2"), ("KVA008", "glm-prefill-0"), ("KVA008", "glm-prefill-1"),
        ("KVA009", "refused-0"), ("KVA010", "small-0"),
        ("KVA011", "glm-prefill-0"), ("KVA011", "glm-decode-0"), ("KVA011", "glm-decode-1"),
        ("KVA011", "legacy-decode-2"), ("KVA011", "legacy-decode-2"),
        ("KVA012", "glm-prefill-0"), ("KVA012", "glm-decode-0"), ("KVA012", "glm-decode-1"),
    ]
    got = list(zip(result.findings["rule_id"], result.findings["node"]))
    assert sorted(got) == sorted(expected)


def test_gate(result):
    assert result.fails("critical")
    assert result.counts()["critical"] == 2
    assert result.counts(include_unknown=True)["medium"] == result.counts()["medium"] + 1
