"""Each audit rule fires exactly where it should, and nowhere else, on a hand-made fleet.

Deployment "glm" (PD, context 1,048,576 advertised):
  glm-prefill-0  pool 681,280 < context; sglang 0.5.19 (version line); checksum disabled line; canary off;
                 batch cap 1024 in an env dump; 3 scheduler rejections (2 in 10:00 UTC, 1 in 11:00 UTC)
  glm-prefill-1  context lowered to 524,288, pool 600,000 (holds its own context); sglang 0.5.22;
                 checksum on; canary log; batch cap 0 (explicitly uncapped)
  glm-decode-0   pool 1,310,720; sglang 0.5.19; deferred release on; checksum off in server_args; one
                 KV checksum mismatch line
  glm-decode-1   pool 900,000 < context; version not logged (inventory: none); no env dump; dump without
                 kv_canary (an older build); a canary violation line
Deployment "small" (not PD): small-0 pool 100,000 < context 131,072 with the context override warning.
vLLM: refused-0 refused to start.

Hand-worked limits: max_req_input_len = min(context-1, pool-1) - 5:
  prefill-0 681,274; prefill-1 min(524,287, 599,999) - 5 = 524,282; decode-0 1,048,570; decode-1 899,994.
"""
from __future__ import annotations

import pytest

from kvir.audit import audit

from .conftest import one, rows, write


def start(ts: str, *, mode: str, ctx: int, pool: int, model: str = "zai-org/GLM-5.3", extra_args: str = "",
          checksum_line: str | None = None, tp: int = 2) -> list[str]:
    args = (f"model_path='{model}', context_length={ctx}, served_model_name='{model}', page_size=64, "
            f"tp_size={tp}, dp_size=1, disaggregation_mode='{mode}', disaggregation_transfer_backend='mooncake'"
            + (", " + extra_args if extra_args else ""))
    lines = [f"[{ts}] server_args=ServerArgs({args})"]
    lines += [f"[{ts} TP{r}] KV Cache is allocated. #tokens: {pool}, K size: 4.95 GB, V size: 4.95 GB" for r in range(tp)]
    lines += [f"[{ts} TP0] max_total_num_tokens={pool}, chunked_prefill_size=16384, max_prefill_tokens=16384, "
              f"max_running_requests=64, context_len={ctx}, available_gpu_mem=8.93 GB"]
    if checksum_line:
        lines.append(f"[{ts}] {checksum_line}")
    lines.append(f"[{ts}] The server is fired up and ready to roll!")
    return lines


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("rules")
    write(d / "glm-prefill-0.log", "\n".join(
        ["export SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=1024", "[2026-08-26 22:00:00] SGLang version: 0.5.19"]
        + start("2026-08-26 22:10:00", mode="prefill", ctx=1_048_576, pool=681_280,
                extra_args="disaggregation_enable_kv_checksum=False, kv_canary='off'",
                checksum_line="PD KV checksum disabled: --disaggregation-enable-kv-checksum is not set")
        + ["[2026-08-27 10:05:00 TP0] Input length (700000 tokens) exceeds the maximum allowed length (681274 tokens). "
           "Use a shorter input or enable --allow-auto-truncate., self.rid='a1'",
           "[2026-08-27 10:59:59 TP0] Input length (900000 tokens) exceeds the maximum allowed length (681274 tokens). "
           "Use a shorter input or enable --allow-auto-truncate., self.rid='a2'",
           "[2026-08-27 11:00:00 TP0] Input length (681274 tokens) exceeds the maximum allowed length (681274 tokens). "
           "Use a shorter input or enable --allow-auto-truncate., self.rid='a3'"]))
    write(d / "glm-prefill-1.log", "\n".join(
        ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=0", "[2026-08-26 22:00:00] SGLang version: 0.5.22"]
        + start("2026-08-26 22:11:00", mode="prefill", ctx=524_288, pool=600_000,
                extra_args="disaggregation_enable_kv_checksum=True, kv_canary='log'")))
    write(d / "glm-decode-0.log", "\n".join(
        ["environ({'PATH': '/usr/bin', 'SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE': '1'})",
         "[2026-08-26 22:00:00] SGLang version: 0.5.19"]
        + start("2026-08-26 22:15:00", mode="decode", ctx=1_048_576, pool=1_310_720,
                extra_args="disaggregation_enable_kv_checksum=False, kv_canary='off'")
        + ["[2026-08-28 03:00:00] KV checksum mismatch for request r9: group 0 block positions [3]."]))
    write(d / "glm-decode-1.log", "\n".join(
        start("2026-08-26 22:16:00", mode="decode", ctx=1_048_576, pool=900_000)
        + ["[2026-08-29 04:00:00] KV canary violation: request r7 read a slot written by r3"]))
    write(d / "small-0.log", "\n".join([
        "[2026-08-20 08:00:00] server_args=ServerArgs(model_path='small/model', context_length=131072, disaggregation_mode='null')",
        "[2026-08-20 08:00:01] User-specified context_length (131072) is greater than the derived context_length (32768). This may lead to incorrect model outputs or CUDA errors.",
        "[2026-08-20 08:01:00 TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB",
    ]))
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
name = "small-0"
[[node]]
name = "refused-0"
""")
    return audit([d], inventory=inv)


def fired(result, rule_id: str, status: str | None = None) -> dict[str, str]:
    f = rows(result.findings, rule_id=rule_id)
    return {x["node"]: x["severity"] for x in f if status is None or x["status"] == status}


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


def test_kva001_pool_below_context(result):
    assert fired(result, "KVA001", "fail") == {"glm-prefill-0": "critical", "glm-decode-1": "high", "small-0": "medium"}
    assert fired(result, "KVA001", "unknown") == {}
    f = one(result.findings, rule_id="KVA001", node="glm-prefill-0")
    assert "681,280" in f["message"] and "681,274" in f["message"]
    assert f["evidence_line"] == 6            # lines: env, version, server_args, 2 x allocation, pool
    assert f["evidence_file"].endswith("glm-prefill-0.log")


def test_kva002_prefill_limit_below_decode_limit(result):
    # prefill-0 (681,274) and prefill-1 (524,282) both admit less than decode-0 (1,048,570)
    assert fired(result, "KVA002") == {"glm-prefill-0": "high", "glm-prefill-1": "high"}
    f = one(result.findings, rule_id="KVA002", node="glm-prefill-0")
    assert f["related_node"] == "glm-decode-0" and "1,048,569" in f["message"]
    assert f["related_evidence"].endswith("glm-decode-0.log:6")


def test_kva003_context_below_advertised(result):
    # only prefill-1: its pool holds its own (lowered) context, which is below the deployment's 1,048,576
    assert fired(result, "KVA003") == {"glm-prefill-1": "high"}
    assert "524,282" in one(result.findings, rule_id="KVA003")["message"]


def test_kva004_build_without_fix(result):
    assert fired(result, "KVA004", "fail") == {"glm-prefill-0": "high", "glm-decode-0": "high"}
    assert fired(result, "KVA004", "unknown") == {"glm-decode-1": "high"}   # version not in the evidence


def test_kva005_to_kva008_safety_flags(result):
    assert fired(result, "KVA005", "fail") == {"glm-prefill-0": "medium", "glm-decode-0": "medium"}
    assert fired(result, "KVA005", "unknown") == {"glm-decode-1": "medium"}
    assert fired(result, "KVA006", "fail") == {"glm-prefill-0": "low", "glm-decode-0": "low", "glm-decode-1": "low"}
    assert "no --kv-canary" in one(result.findings, rule_id="KVA006", node="glm-decode-1")["message"]
    assert fired(result, "KVA007", "fail") == {}
    assert fired(result, "KVA007", "unknown") == {"glm-decode-1": "medium"}     # never assumed on
    assert fired(result, "KVA008", "fail") == {"glm-prefill-1": "medium"}       # 0 = uncapped
    assert fired(result, "KVA008", "unknown") == {}


def test_kva009_kva010(result):
    assert fired(result, "KVA009") == {"refused-0": "medium"}
    assert fired(result, "KVA010") == {"small-0": "medium"}
    assert "131,072" in one(result.findings, rule_id="KVA010")["message"]


def test_kva011_and_runtime_indicators(result):
    ri = result.runtime_indicators
    p0 = rows(ri, node="glm-prefill-0", indicator="input-length-exceeds")
    # 10:05 and 10:59:59 CDT are 15:05 and 15:59:59 UTC; 11:00:00 CDT is 16:00 UTC
    assert [(str(r["hour"])[:16], r["count"]) for r in p0] == [("2026-08-27 15:00", 2), ("2026-08-27 16:00", 1)]
    assert all(r["incident_signal"] and r["limit_tokens"] == 681_274 for r in p0)
    assert p0[0]["max_prompt_tokens"] == 900_000
    assert one(ri, node="glm-decode-0")["indicator"] == "kv-checksum-mismatch"
    assert one(ri, node="glm-decode-1")["indicator"] == "kv-canary-violation"
    assert fired(result, "KVA011") == {"glm-prefill-0": "critical", "glm-decode-0": "high", "glm-decode-1": "high"}
    assert "3 prompt(s)" in one(result.findings, rule_id="KVA011", node="glm-prefill-0")["message"]


def test_no_other_findings(result):
    # every finding is one of the expectations above: nothing fires elsewhere
    expected = {
        ("KVA001", "glm-prefill-0"), ("KVA001", "glm-decode-1"), ("KVA001", "small-0"),
        ("KVA002", "glm-prefill-0"), ("KVA002", "glm-prefill-1"), ("KVA003", "glm-prefill-1"),
        ("KVA004", "glm-prefill-0"), ("KVA004", "glm-decode-0"), ("KVA004", "glm-decode-1"),
        ("KVA005", "glm-prefill-0"), ("KVA005", "glm-decode-0"), ("KVA005", "glm-decode-1"),
        ("KVA006", "glm-prefill-0"), ("KVA006", "glm-decode-0"), ("KVA006", "glm-decode-1"),
        ("KVA007", "glm-decode-1"), ("KVA008", "glm-prefill-1"), ("KVA009", "refused-0"), ("KVA010", "small-0"),
        ("KVA011", "glm-prefill-0"), ("KVA011", "glm-decode-0"), ("KVA011", "glm-decode-1"),
    }
    got = list(zip(result.findings["rule_id"], result.findings["node"]))
    assert sorted(got) == sorted(expected)


def test_gate(result):
    assert result.fails("critical")
    assert result.counts()["critical"] == 2
    assert result.counts(include_unknown=True)["high"] == result.counts()["high"] + 1
