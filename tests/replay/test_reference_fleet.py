"""The replay on the simulated reference fleet (kvir simulate -> triage -> audit -> replay) at a small scale.

The fleet's affected responses are all stub-path requests on prefill nodes with the 681,280 pool on 0.5.19
(the build their nodes ran): that build must serve every one (HTTP 200) and the first fixed build (0.5.20)
refuse it after its forward (400); whose data each read is checked against the case's own request log (same
decode node, earlier, the logged account)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


def _fleet(root: Path, requests: int) -> Path:
    import kvir
    import kvir.audit

    kvir.simulate(root / "fleet", requests=requests, seed=7)
    tri = kvir.triage(root / "fleet" / "incident.toml", out=root / "case")
    assert tri.summary["affected"] == 155
    tri.case.close()
    kvir.audit.audit(sorted((root / "fleet").glob("engine/*/server.log")), inventory=root / "fleet" / "inventory.toml",
                     case=root / "case")
    return root / "case"


def _check(run, case_dir: Path, n: int) -> None:
    r = run.results
    assert r.request_id.nunique() == n and len(r) == 2 * n
    inc, fix = r[r.build_role == "incident"], r[r.build_role == "compared"]
    assert set(inc.build) == {"sglang-0.5.19"} and set(fix.build) == {"sglang-0.5.20"} and fix.first_fixed.all()
    # only a node's first logged request can lack history; everything replayed is 200 on 0.5.19, 400 on 0.5.20
    unknown = inc[inc.verdict == "inconclusive"]
    assert (unknown.history_requests == 0).all() and unknown.reason.str.startswith("no earlier request").all()
    assert unknown.decode_node.nunique() == len(unknown)
    rep = inc[inc.verdict != "inconclusive"]
    assert (rep.http_status == 200).all()
    assert set(rep.verdict) <= {"exposed", "served-unwritten"} and (rep.verdict == "exposed").any()
    assert (rep.prefill_tokens == 1).all() and (rep.transferred_pages == 1).all()
    fx = fix[fix.request_id.isin(rep.request_id)]
    assert (fx.http_status == 400).all() and (fx.stage == "prefill-retired-after-forward").all()
    quiet = rep[rep.verdict == "served-unwritten"]
    assert all(len(o) == 0 for o in quiet.foreign_owners) and (quiet.uninitialised_mass > 0.5).all()
    truth = json.loads((case_dir.parent / "fleet" / "ground_truth" / "summary.json").read_text())
    assert set(rep.account_id) <= set(truth["per_account"])
    # every named source: a request logged on the reader's decode node before it, with the logged account
    src = run.case.df("""
        SELECT e.source_request_id, e.source_account_id, q.account_id AS logged_account,
               q.decode_node = rr.decode_node AS same_node, q.ts < a.ts AS earlier
        FROM replay_exposure e
        JOIN requests q ON q.request_id = e.source_request_id
        JOIN replay_results rr ON rr.request_id = e.reader_request_id AND rr.build_role = 'incident'
        JOIN affected a ON a.request_id = e.reader_request_id""")
    n_exp = run.case.df("SELECT count(*) AS n FROM replay_exposure").n[0]
    assert len(src) == n_exp > 0
    assert src.same_node.all() and src.earlier.all()
    assert (src.source_account_id.fillna("?") == src.logged_account.fillna("?")).all()
    assert run.summary["source_accounts"] > 0 and run.summary["limits_source"] == "node_configs"


def test_reference_fleet_first_targets(tmp_path):
    from kvir.replay import replay_case

    case_dir = _fleet(tmp_path, 1000)
    run = replay_case(case_dir, limit=20, scale=1 / 64)
    _check(run, case_dir, 20)


@pytest.mark.slow
def test_reference_fleet_all_affected(tmp_path):
    from kvir.replay import replay_case

    case_dir = _fleet(tmp_path, 5000)
    run = replay_case(case_dir, scale=1 / 64)
    _check(run, case_dir, 155)
    assert run.summary["exposed"] >= 140          # early targets meet pools the fleet has barely used
