"""Triage with the pool in effect per node and time (kvir.triage(..., startup=[...])) versus one global pool.

Hand-made PD fleet (all times UTC, incident pool 681,280, context 1,048,576, rule public: prompt > pool):
  prefill-a  starts 2026-08-27 00:00 with pool 500,000, restarts 2026-09-01 00:00 with pool 2,042,880
  prefill-b  starts 2026-08-28 00:00 with pool 900,000
  prefill-c  no start-up log
Requests (all served, HTTP 200 from decode):
  r1 2026-08-28 prefill-a 600,000   node pool 500,000 -> affected;   global 681,280 -> not
  r2 2026-09-02 prefill-a 700,000   node pool 2,042,880 -> not;      global -> affected
  r3 2026-08-29 prefill-b 800,000   node pool 900,000 -> not;        global -> affected
  r4 2026-08-29 prefill-b 950,000   both affected
  r6 2026-08-30 prefill-c 700,000   no start-up log: falls back to global -> affected under both
  r7 2026-08-27 00:00:00 prefill-a 550,000  starts at the same second as prefill-a: its pool 500,000 applies
  r8 2026-08-27 12:00 prefill-b 700,000  before prefill-b's first start: global -> affected under both
"""
from __future__ import annotations

import pytest

from kvir.triage.run import triage

from ..conftest import sglang_finished, spec_text
from .conftest import write

REQUESTS = [  # id, start (UTC, no fraction), prefill node, prompt tokens
    ("r1", "2026-08-28T10:00:00", "prefill-a", 600_000),
    ("r2", "2026-09-02T10:00:00", "prefill-a", 700_000),
    ("r3", "2026-08-29T10:00:00", "prefill-b", 800_000),
    ("r4", "2026-08-29T11:00:00", "prefill-b", 950_000),
    ("r6", "2026-08-30T10:00:00", "prefill-c", 700_000),
    ("r7", "2026-08-27T00:00:00", "prefill-a", 550_000),
    ("r8", "2026-08-27T12:00:00", "prefill-b", 700_000),
]


def _start(ts: str, pool: int) -> str:
    return "\n".join([
        f"[{ts}] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', context_length=1048576, "
        "served_model_name='zai-org/GLM-5.3', disaggregation_mode='prefill')",
        f"[{ts} TP0] max_total_num_tokens={pool}, chunked_prefill_size=16384, max_prefill_tokens=16384, "
        "max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB",
    ])


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("pie")
    write(d / "incident.toml", spec_text("public"))
    decode, prefill = [], {}
    for i, (rid, start, node, prompt) in enumerate(REQUESTS):
        finish = start[:-2] + "05"          # 5 s later; latency 5.0 -> the request starts at `start`
        decode.append(sglang_finished(finish, rid, prompt, latency=5.0, room=1000 + i, completion=50))
        prefill.setdefault(node, []).append(sglang_finished(finish, f"p-{rid}", 1, latency=5.0, room=1000 + i,
                                                            completion=0))
    write(d / "engine/decode-a/requests.jsonl", "\n".join(decode))
    for node, lines in prefill.items():
        write(d / f"engine/{node}/requests.jsonl", "\n".join(lines))
    write(d / "startup/prefill-a/server.log", _start("2026-08-27 00:00:00", 500_000) + "\n"
          + _start("2026-09-01 00:00:00", 2_042_880))
    write(d / "startup/prefill-b/server.log", _start("2026-08-28 00:00:00", 900_000))
    return d


@pytest.fixture(scope="module")
def both(fleet_dir):
    kw = dict(source_tz="UTC", served_model="zai-org/GLM-5.3")
    glob_ = triage(fleet_dir / "incident.toml", [fleet_dir / "engine"], out=fleet_dir / "case-global", **kw)
    pie = triage(fleet_dir / "incident.toml", [fleet_dir / "engine"], out=fleet_dir / "case-pie",
                 startup=[fleet_dir / "startup"], **kw)
    yield glob_, pie
    glob_.case.close()
    pie.case.close()


def test_pool_in_effect_differs_from_the_global_threshold(both):
    glob_, pie = both
    assert set(glob_.affected["request_id"]) == {"r2", "r3", "r4", "r6", "r8"}
    assert set(pie.affected["request_id"]) == {"r1", "r4", "r6", "r7", "r8"}
    assert "pool in effect" in pie.summary["oversized_prompt"]["threshold"] and \
        "one global pool" in glob_.summary["oversized_prompt"]["threshold"]


def test_each_request_says_which_pool_judged_it(both):
    _, pie = both
    h = pie.case.df("SELECT request_id, pool_in_effect, context_in_effect, engine_limit_in_effect, config_ts, "
                    "config_evidence, threshold_source, prefill_node FROM triage_hits").set_index("request_id")
    assert h.loc["r1", "pool_in_effect"] == 500_000 and h.loc["r1", "engine_limit_in_effect"] == 499_994
    assert h.loc["r1", "context_in_effect"] == 1_048_576
    assert h.loc["r1", "config_evidence"].endswith("startup/prefill-a/server.log:2")
    assert h.loc["r7", "pool_in_effect"] == 500_000                       # a start at the same second counts
    assert str(h.loc["r7", "config_ts"]) == "2026-08-27 00:00:00+00:00"
    assert h.loc["r4", "pool_in_effect"] == 900_000 and h.loc["r4", "engine_limit_in_effect"] == 899_994
    assert h.loc["r6", "threshold_source"] == "global: no start-up log for node prefill-c"
    assert h.loc["r6", "pool_in_effect"] == 681_280
    assert h.loc["r8", "threshold_source"] == "global: request before the first start of prefill-b"
    assert set(h.loc[["r1", "r4", "r7"], "threshold_source"]) == {"node start"}
    # r2 (700,000 under pool 2,042,880) and r3 (800,000 under pool 900,000, engine limit 899,994): neither
    # rule holds with their node's pool, so they are not hits at all
    assert "r2" not in h.index and "r3" not in h.index


def test_node_exposure_from_node_configs(both):
    _, pie = both
    ne = pie.case.df("SELECT * FROM node_exposure ORDER BY node").to_dict("records")
    a, b = ne
    assert (a["node"], a["state"], str(a["exposed_from"]), str(a["exposed_until"])) == \
        ("prefill-a", "exposed", "2026-08-27 00:00:00+00:00", "2026-09-01 00:00:00+00:00")
    assert a["ended_by"] == "restart with pool 2,042,880 >= context 1,048,576"
    assert (b["node"], b["state"], str(b["exposed_from"])) == ("prefill-b", "exposed", "2026-08-28 00:00:00+00:00")
    assert b["exposed_until"] is None or str(b["exposed_until"]) in ("NaT", "None")   # still exposed


def test_triage_cli_startup_option(fleet_dir, tmp_path):
    import json

    from typer.testing import CliRunner

    from kvir.cli.app import app

    r = CliRunner().invoke(app, ["triage", str(fleet_dir / "engine"), "--incident", str(fleet_dir / "incident.toml"),
                                 "--out", str(tmp_path / "case"), "--source-tz", "UTC", "--served-model",
                                 "zai-org/GLM-5.3", "--startup", str(fleet_dir / "startup"), "--json", "-q"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)["summary"]
    assert s["affected"] == 5 and "pool in effect" in s["oversized_prompt"]["threshold"]
