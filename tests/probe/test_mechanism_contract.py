"""The probe and serve parts every registered mechanism keeps (kvir.probe.plugin.ProbePart,
kvir.serve.plugin.ServePart), run over every mechanism the registry holds: its checks are reachable by
`kvir probe --checks`, planned, run and described in SARIF; its serve options are flags of `kvir serve` and
its target mode starts in a server that answers.

The server: kvir serve with every mechanism's defaults (pool 512, context 1,024, page 16; SGLang's limit
min(1023, 511) - 5 = 506 tokens), the tenants two API keys."""
from __future__ import annotations

import dataclasses
import json

import httpx
import pytest
from typer.testing import CliRunner

import kvir
from kvir.cli.app import app
from kvir.probe.config import ProbeOptions
from kvir.probe.plugin import probe_part
from kvir.probe.rules import DISCOVERY_RULES, checks, rules
from kvir.serve import ServeConfig, ServerThread
from kvir.serve.plugin import serve_part, serve_parts
from kvir.spec.mechanism import mechanisms

ALL = [m.name for m in mechanisms()]
CHECKS = [(m.name, c.name) for m in mechanisms() for c in probe_part(m.name).checks]
runner = CliRunner()


def test_check_names_and_rule_ids_are_unique_across_mechanisms():
    names = [c.name for c in checks()]
    assert names == [c for _, c in CHECKS] and len(names) == len(set(names))
    finding_ids = [r.rule_id for r in DISCOVERY_RULES] + [r.rule_id for m in ALL for r in probe_part(m).rules]
    check_ids = [c.rule_id for c in checks()]
    assert len(finding_ids + check_ids) == len(set(finding_ids + check_ids))
    assert [r.rule_id for r in rules()] == sorted(finding_ids)


@pytest.mark.parametrize("mechanism, name", CHECKS)
def test_every_check_is_reachable_by_checks_planned_and_in_the_help(mechanism, name):
    ProbeOptions("http://127.0.0.1:9", checks=(name,)).validate()
    r = runner.invoke(app, ["probe", "-e", "http://127.0.0.1:9", "--context", "1024", "--pool", "512",
                            "--checks", name, "--dry-run", "--json"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    phases = [p["phase"] for p in json.loads(r.stdout)["plan"]["phases"]]
    assert phases == ["discovery", "tokenize", name]
    check = next(c for c in probe_part(mechanism).checks if c.name == name)
    text = " ".join(runner.invoke(app, ["probe", "--help"], env={"COLUMNS": "200"}).output.split())
    assert " ".join(check.help.split()) in text


@pytest.fixture(scope="module")
def server():
    mp = pytest.MonkeyPatch()
    mp.setenv("KVIR_CONTRACT_KEY_A", "contract-key-a")
    mp.setenv("KVIR_CONTRACT_KEY_B", "contract-key-b")
    with ServerThread(ServeConfig(pool=512, context=1024)) as srv:
        yield srv
    mp.undo()


@pytest.mark.parametrize("mechanism, name", CHECKS)
def test_every_check_runs_and_its_verdict_is_in_sarif(server, mechanism, name):
    r = kvir.probe(server.url, checks=(name,), api_key_env="KVIR_CONTRACT_KEY_A",
                   tenant_b_key_env="KVIR_CONTRACT_KEY_B", progress=False, max_requests=120, timing_pairs=4,
                   prefix_tokens=64, prefix_rounds=1, canary_rounds=1, canaries_per_round=1)
    assert [c.name for c in r.checks] == [name] and r.sent > 0
    assert r.checks[0].verdict in ("exposed", "not exposed", "inconclusive")
    sarif = r.to_sarif()["runs"][0]
    listed = {x["id"] for x in sarif["tool"]["driver"]["rules"]}
    assert {x.rule_id for x in rules()} | {c.rule_id for c in checks()} == listed
    check = next(c for c in probe_part(mechanism).checks if c.name == name)
    assert [x["ruleId"] for x in sarif["results"] if x["ruleId"] == check.rule_id] == [check.rule_id]
    assert {f.rule_id for f in r.findings} <= {x.rule_id for x in rules()}


def test_serve_options_are_unique_and_no_shared_setting():
    shared = {f.name for f in dataclasses.fields(ServeConfig)}
    names = [o.name for p in serve_parts().values() for o in p.options]
    assert names and len(names) == len(set(names)) and not set(names) & shared
    text = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    for p in serve_parts().values():
        assert all(o.flag in text for o in p.options) and " ".join(p.help.split()) in " ".join(text.split())


@pytest.mark.parametrize("name", ALL)
def test_every_serve_mode_starts_and_answers(server, name):
    part = serve_part(name)
    cfg = ServeConfig(pool=512, context=1024)
    target = part.target(cfg.values(part), cfg)
    info = httpx.get(server.url + "/get_server_info", timeout=30).json()
    assert target.describe().items() <= info["kvir_serve"].items()
    assert target.server_info().items() <= info.items() and target.banner()
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "contract", "max_tokens": 2},
                   headers={"Authorization": "Bearer contract-key-a"}, timeout=60)
    assert r.status_code == 200, r.text
    assert set(target.logged) <= set(server.records[-1])
    # exactly one mechanism's target chooses the replay policy requests are admitted under
    chosen = [p.target(cfg.values(p), cfg).policy() for p in serve_parts().values()]
    assert len([p for p in chosen if p is not None]) == 1
