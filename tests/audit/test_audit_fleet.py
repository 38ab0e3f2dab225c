"""`kvir audit` and pool-in-effect triage on the simulated reference fleet (kvir simulate), checked against
the simulator's own ground truth (ground_truth/, which kvir itself never reads) and the reference incident's numbers (README)."""
from __future__ import annotations

import json

import jsonschema
import pandas as pd
import pytest
from typer.testing import CliRunner

from kvir.audit import audit
from kvir.cli.app import app

from .test_audit_cli import SARIF_SCHEMA

POOL_BUG, POOL_FIXED, CONTEXT = 681_280, 2_042_880, 1_048_576   # the reference incident


@pytest.fixture(scope="module")
def truth(fleet):
    return json.loads((fleet / "ground_truth" / "summary.json").read_text())


@pytest.fixture(scope="module")
def result(fleet):
    return audit([fleet / "engine"], inventory=fleet / "inventory.toml")


def test_mismatch_on_every_prefill_node_before_the_fix_and_none_after(result, truth):
    prefill = set(truth["prefill_fixed_at"])
    assert len(prefill) == 4
    nc = result.node_configs
    f = result.findings[result.findings.rule_id == "KVA001"]
    assert set(f["node"]) == prefill and set(f["status"]) == {"fail"} and set(f["severity"]) == {"critical"}
    assert len(f) == 4                                                # one per node: the start before the fix
    pre = nc[(nc.role == "prefill") & ~nc.is_current]
    post = nc[(nc.role == "prefill") & nc.is_current]
    assert set(pre.node) == set(post.node) == prefill
    assert set(pre.pool_tokens) == {POOL_BUG} and set(post.pool_tokens) == {POOL_FIXED}
    assert set(nc.context_len) == {CONTEXT}
    assert set(f["config_id"]) == set(pre["config_id"])               # fired on the pre-fix starts only
    for node, fixed_at in truth["prefill_fixed_at"].items():
        start = post[post.node == node]["ts"].iloc[0]
        assert start == pd.Timestamp(fixed_at)
    # no pool/context finding on decode or mixed nodes (their pools hold the context)
    assert not set(f["node"]) & set(nc[nc.role != "prefill"]["node"])


def test_node_exposure_says_when_each_prefill_node_stopped(result, truth):
    ne = result.node_exposure.set_index("node")
    assert set(ne.index) == set(truth["prefill_fixed_at"])
    for node, fixed_at in truth["prefill_fixed_at"].items():
        assert ne.loc[node, "state"] == "exposed"
        assert ne.loc[node, "exposed_until"] == pd.Timestamp(fixed_at)
        assert ne.loc[node, "pool_tokens"] == POOL_BUG
        assert ne.loc[node, "ended_by"] == f"restart with pool {POOL_FIXED:,} >= context {CONTEXT:,}"
    assert max(ne["exposed_until"]) == pd.Timestamp("2026-09-09T14:52:00Z")   # "14:52 all prefill nodes fixed"


def test_decode_pools_larger_than_prefill_are_flagged(result):
    f = result.findings[result.findings.rule_id == "KVA002"]
    nc = result.node_configs
    assert set(f["config_id"]) == set(nc[(nc.role == "prefill") & ~nc.is_current]["config_id"])
    assert set(f["related_node"]) <= set(nc[nc.role == "decode"]["node"])
    assert nc[nc.node == "glm53-decode-2"]["pool_tokens"].iloc[0] > POOL_FIXED > POOL_BUG


def test_runtime_indicators_match_the_exposed_responses(result, fleet):
    # the simulator logs one scheduler rejection per exposed response on its prefill node: the 155 over
    # the pool and the 7 between the engine limit and the pool
    gt = fleet / "ground_truth"
    aff = pd.concat([pd.read_parquet(gt / "affected.parquet"), pd.read_parquet(gt / "engine_only.parquet")])
    want = aff.groupby("prefill_node").size().to_dict()
    ri = result.runtime_indicators
    got = ri[ri.indicator == "input-length-exceeds"].groupby("node")["count"].sum().to_dict()
    assert got == want and sum(got.values()) == 162
    # min(1,048,575, 681,279) - 5, worked by hand
    assert set(ri[ri.indicator == "input-length-exceeds"]["limit_tokens"]) == {681_274}


def test_environment_in_the_startup_logs_is_judged(result):
    f = result.findings
    nc = result.node_configs
    # the fleet's entrypoint prints SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=0 and
    # SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=0 (unbounded): both fail, on the nodes they concern
    # (unknown-when-absent is tested on hand-made fleets in test_audit_rules.py)
    assert set(f[(f.rule_id == "KVA007")]["status"]) == {"fail"}
    assert set(f[f.rule_id == "KVA007"]["node"]) == set(nc[nc.role == "decode"]["node"])
    assert set(f[(f.rule_id == "KVA008")]["status"]) == {"fail"}
    assert set(nc["version"]) == {"0.5.19"} and set(nc["version_source"]) != {"inventory"}


def test_cli_sarif_on_the_fleet(fleet, tmp_path):
    out = tmp_path / "fleet.sarif"
    r = CliRunner().invoke(app, ["audit", str(fleet / "engine"), "--inventory", str(fleet / "inventory.toml"),
                                 "-q", "-f", "sarif", "-o", str(out), "--fail-on", "critical"])
    assert r.exit_code == 1                                           # critical findings: the gate trips
    doc = json.loads(out.read_text())
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    r = CliRunner().invoke(app, ["audit", str(fleet / "engine"), "--inventory", str(fleet / "inventory.toml"),
                                 "-q", "--current", "--fail-on", "critical"])
    assert r.exit_code == 1       # the scheduler rejections (KVA011) stay critical: they show exposure happened


def test_triage_with_pool_in_effect_gives_the_same_155(fleet, truth, tmp_path):
    from kvir.triage.run import triage

    res = triage(fleet / "incident.toml", out=tmp_path / "case", startup=[fleet / "engine"],
                 inventory=fleet / "inventory.toml")
    try:
        assert res.summary["affected"] == truth["affected"] == 155
        assert "pool in effect" in res.summary["oversized_prompt"]["threshold"]
        gt = set(pd.read_parquet(fleet / "ground_truth" / "affected.parquet")["request_id"])
        assert set(res.affected["request_id"]) == gt
        h = res.case.df("SELECT threshold_source, pool_in_effect, count(*) AS n FROM triage_hits "
                        "WHERE category = 'affected' GROUP BY ALL")
        assert h.to_dict("records") == [{"threshold_source": "node start", "pool_in_effect": POOL_BUG, "n": 155}]
        # every affected response started before its prefill node's restart onto the fixed config
        last = res.case.df("SELECT prefill_node, max(ts) AS last FROM affected GROUP BY ALL").set_index("prefill_node")
        for node, fixed_at in truth["prefill_fixed_at"].items():
            assert last.loc[node, "last"] < pd.Timestamp(fixed_at)
        # the case also says, node by node, when each prefill node stopped being exposed
        ne = res.case.df("SELECT node, exposed_until FROM node_exposure WHERE state = 'exposed'").set_index("node")
        assert {n: ne.loc[n, "exposed_until"] for n in ne.index} == \
            {n: pd.Timestamp(t) for n, t in truth["prefill_fixed_at"].items()}
        assert res.case.manifest["audit"]["inventory"].endswith("inventory.toml")
    finally:
        res.case.close()
