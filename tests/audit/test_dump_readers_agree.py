"""Two readers of SGLang's settings dump, tested to agree: triage's planner reads the served model and the
PD role from the first `server_args=` line of a log (kvir.ingest.sources, a regex over the first MiB, before
any SQL runs) and the audit reads every field of every start in SQL (queries/audit). On every published
build's own dump (tests/fixtures/sglang/golden, both shapes) with chosen values put in, they must say the
same model and role, and both must say what was put in."""
from __future__ import annotations

from kvir.audit import audit
from kvir.ingest.sources import _server_args

from .grammar import GOLDEN, startup

BUILDS = sorted(p.name.removesuffix(".server_args.log") for p in GOLDEN.glob("*.server_args.log"))
ROLE = {"prefill": "prefill", "decode": "decode", "null": "mixed"}


def test_every_golden_build_is_here():
    assert len(BUILDS) == 16 and "0.5.11" in BUILDS and "0.5.23" in BUILDS


def test_planner_and_audit_read_every_dump_alike(tmp_path):
    served = "zai-org/GLM-5.3-Air"
    logs = {}
    for version in BUILDS:
        for mode in ROLE:
            log = tmp_path / f"{version}-{mode}" / "server.log"
            log.parent.mkdir()
            log.write_text("\n".join(startup(version, "2026-08-26 22:10:00", mode=mode, context=1_048_576,
                                              pool=681_280, served_model_name=served)) + "\n")
            logs[log.parent.name] = log
    planner = {name: _server_args(log)[:2] for name, log in logs.items()}
    nc = audit(list(logs.values())).node_configs              # one audit over all 48 (one per node start)
    audited = {n: (m, r) for n, m, r in zip(nc["node"], nc["served_model"], nc["role"])}
    expected = {name: (served, ROLE[name.rsplit("-", 1)[1]]) for name in logs}
    assert planner == expected
    assert audited == expected
