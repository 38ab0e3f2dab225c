"""The embedded reference incident: kvir simulate + kvir triage against the simulator's own ground truth."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import kvir

PREFILL = {f"glm53-prefill-{i}" for i in range(4)}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    kvir.simulate(out, requests=20_000, seed=11)
    return out


def _truth(fleet: Path) -> dict:
    return json.loads((fleet / "ground_truth" / "summary.json").read_text())


def test_native_fleet_triage_equals_ground_truth(fleet, tmp_path):
    truth = _truth(fleet)
    assert truth["affected"] == 155
    r = kvir.triage(fleet / "incident.toml", out=tmp_path / "case")
    s = r.summary
    assert s["affected"] == 155 and s["affected_unknown_account"] == 0
    assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == truth["per_account"]
    assert s["affected_accounts"] == truth["affected_accounts"]
    assert s["rejected"] == truth["rejected_context"] and s["undecidable"] == truth["undecidable"]
    assert s["failed"] == truth["failed"] == 7                       # the gateway's 504s without usage
    # the engine rule would add the 7 responses between the engine limit (681,274) and the pool (681,280)
    assert s["other_rule_adds"] == truth["engine_only"] == 7 and s["other_rule_drops"] == 0
    a = r.affected
    assert set(a["prefill_node"]) <= PREFILL and a["prefill_tokens"].eq(1).all()   # the placeholder, every time
    assert a["decode_node"].str.startswith("glm53-decode-").all()
    import pyarrow.parquet as pq   # the ground truth is read from Parquet, never through kvir

    truth_ids = set(pq.read_table(fleet / "ground_truth" / "affected.parquet")["request_id"].to_pylist())
    assert set(a["request_id"]) == truth_ids
    labels = dict(zip(r.accounts["account_id"], r.accounts["label"]))
    assert labels[truth["researcher_account"]] == "reporting researcher"
    assert r.accounts.set_index("account_id").loc[truth["researcher_account"], "affected"] == truth["researcher_affected"]
    # every input accounted for
    for src in r.sources:
        assert src["read"] == src["parsed"] + src["quarantined"] and src["quarantined"] == 0


def test_rule_switch_on_the_reference_fleet(fleet, tmp_path):
    spec = (fleet / "incident.toml").read_text().replace('rule = "public"', 'rule = "engine"')
    p = tmp_path / "incident.toml"
    p.write_text(spec.replace('path = "', f'path = "{fleet}/'))
    r = kvir.triage(p, out=tmp_path / "case")
    truth = _truth(fleet)
    s = r.summary
    assert s["rule"].startswith("engine: prompt_tokens >= 681,274")
    # 155 over the pool + 7 between 681,274 and 681,280 tokens, worked out by the simulator's own plan
    assert s["affected"] == truth["affected_engine_rule"] == 162
    assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == truth["per_account_engine_rule"]
    assert s["other_rule_drops"] == 7 and s["other_rule_adds"] == 0     # what the public rule would drop
    import pyarrow.parquet as pq

    gt = pq.read_table(fleet / "ground_truth" / "engine_only.parquet").to_pandas()
    assert gt["prompt_tokens"].between(681_274, 681_280).all() and len(gt) == 7
    engine_only = r.affected[r.affected["prompt_tokens"] <= 681_280]
    assert set(engine_only["request_id"]) == set(gt["request_id"])


def test_parquet_fleet_gives_the_same_answer(tmp_path):
    out = tmp_path / "pq"
    kvir.simulate(out, requests=120_000, seed=3, format="parquet")
    truth = _truth(out)
    r = kvir.triage(out / "incident.toml", out=tmp_path / "case")
    assert r.summary["affected"] == 155
    assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == truth["per_account"]
    assert r.summary["requests_total"] == truth["requests"]


def test_simulate_is_deterministic(tmp_path):
    def digest(root: Path) -> str:
        h = hashlib.sha256()
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        return h.hexdigest()

    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    kvir.simulate(a, requests=5_000, seed=1)
    kvir.simulate(b, requests=5_000, seed=1)
    kvir.simulate(c, requests=5_000, seed=2)
    assert digest(a) == digest(b) and digest(a) != digest(c)
    assert _truth(c)["affected"] == 155


def test_manifest_records_inputs_queries_and_counts(fleet, tmp_path):
    r = kvir.triage(fleet / "incident.toml", out=tmp_path / "case")
    m = json.loads((tmp_path / "case" / "manifest.json").read_text())
    assert m["duckdb_version"] and m["kvir_version"] == kvir.__version__
    some = m["inputs"][0]
    path = Path(some["files"][0]["path"])
    assert some["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    hits = [q for q in m["queries"] if q["query"] == "queries/mechanisms/oversized_prompt/triage/hits.sql"][0]
    from kvir.core import sql

    assert hits["sha256"] == sql.load("triage/hits", mechanism="oversized_prompt").sha256
    assert hits["params"]["pool_tokens"] == 681280 and hits["params"]["rule"] == "public"
    assert "$pool_tokens" in hits["compiled_sql"] and "681280" not in hits["compiled_sql"]   # bound, not pasted
    assert (tmp_path / "case" / "compiled").is_dir() and any((tmp_path / "case" / "compiled").iterdir())
    assert sum(s["read"] for s in m["counts"]["sources"]) > 0
    assert m["triage"]["summary"]["affected"] == 155
    assert m["incident_spec"]["sha256"] == hashlib.sha256((fleet / "incident.toml").read_bytes()).hexdigest()
    r.case.close()


@pytest.mark.slow   # the whole demo as a process, ~25 s: its own step in .ci/run (the report tests run kvir.demo in-process)
def test_kvir_demo_end_to_end(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kvir.cli.app", "demo", "--out", str(tmp_path / "d"), "--requests",
                           "20000", "--json", "--quiet"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["stages"]["triage"]["affected"] == 155
    truth = _truth(tmp_path / "d" / "fleet")
    r = kvir.open_case(tmp_path / "d" / "case", read_only=True)
    assert dict(r.con.execute("SELECT account_id, affected FROM accounts").fetchall()) == truth["per_account"]
    for name in ("affected.parquet", "affected.csv", "accounts.csv", "nodes.csv", "manifest.json"):
        assert (tmp_path / "d" / "case" / name).exists(), name
    r.close()
