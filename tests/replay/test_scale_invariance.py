"""Whose data a response read does not depend on --scale (issue 39): on the demo case and on a foreign fleet,
every scale from 1/64 to 1 names the same source accounts and requests, and each source the same token count
in each response.

Before issue 39 a scaled replay rounded every request up to whole pages of the unscaled size, and the demo's
first 12 affected responses named 107, 100, 89 and 87 source accounts (246, 225, 214, 214 requests) at
1/64, 1/16, 1/4 and 1 (the issue's table, measured with that code); the full-size figures, 87 and 214, are
what every scale must give now. The foreign fleet (below) shares nothing with the reference incident.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from .helpers import sglang_finished, write

SCALES = (1 / 64, 1 / 16, 1 / 4, 1.0)


def _replay(case: Path, tmp: Path, scale: float, limit: int | None = None):
    from kvir.replay import replay_case

    copy = tmp / f"scale-{scale:g}"
    shutil.copytree(case, copy)
    return replay_case(copy, limit=limit, scale=scale)


def _attribution(run) -> tuple[set, set, set]:
    e = run.exposure
    return (set(e.source_account_id.dropna()), set(e.source_request_id),
            set(zip(e.reader_request_id, e.source_request_id, e.tokens)))


# ------------------------------------------------------------------------------------------------ the demo

@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`kvir demo` as it runs (kvir.sim.demo: 30,000 requests, seed 7; its first 12 affected responses
    replayed at 1/64, then every document rendered)."""
    from kvir.sim.demo import demo

    return demo(tmp_path_factory.mktemp("demo") / "out", progress=False)


def _notified(reports: Path) -> set[str]:
    """The accounts the source notices are addressed to."""
    return {re.search(r"^\| to \| account \*\*(.+?)\*\*", f.read_text(), re.M).group(1)
            for f in (reports / "notices" / "source").glob("*.md")}


def test_the_demo_states_the_full_size_figures(demo_run):
    import kvir

    assert demo_run.stages["replay"]["source_accounts"] == 87
    assert demo_run.stages["replay"]["verdicts"] == {"exposed": 9, "served-unwritten": 3, "rejected": 12}
    case = kvir.open_case(demo_run.case, read_only=True)
    try:
        exposure = case.df("replay_exposure")
    finally:
        case.close()
    accounts = set(exposure.source_account_id.dropna())
    assert (len(accounts), exposure.source_request_id.nunique(), len(exposure)) == (87, 214, 338)
    reports = demo_run.case / "reports"
    docs = {name: (reports / name).read_text() for name in ("public_report.md", "postmortem.md", "gdpr_art33.md")}
    assert "Data of 87 account(s) was found" in docs["public_report.md"]
    assert "87 source account(s) whose data reached someone else" in docs["postmortem.md"]
    assert "Data of 87 source account(s)" in docs["gdpr_art33.md"] and "214 source request(s)" in docs["gdpr_art33.md"]
    scope = ("The replay covered the first 12 of the 155 affected responses (by time)", "a replay of all 155 may name "
             "more", "worked out at full size", "sample of pages, scale 1/64, which changes none of these names")
    for name, text in docs.items():
        flat = " ".join(text.split())
        assert all(x in flat for x in scope), name
    notices = list((reports / "notices" / "source").glob("*.md"))
    assert all("worked out at full size" in " ".join(f.read_text().split()) for f in notices)
    assert _notified(reports) == accounts                        # never an account only a scaled replay found


@pytest.mark.slow   # replays of the demo's first 12 at three more scales, full size among them (~30 s of CPU)
def test_every_scale_reproduces_the_demos_figures(demo_run, tmp_path):
    import kvir
    from kvir.report import report

    demo_case = demo_run.case
    case = kvir.open_case(demo_case, read_only=True)
    try:
        demo = set(zip(*[case.df("replay_exposure")[c] for c in ("reader_request_id", "source_request_id", "tokens")]))
    finally:
        case.close()
    for f in SCALES[1:]:
        run = _replay(demo_case, tmp_path, f, limit=12)
        assert _attribution(run)[2] == demo, f
        inc = run.results[run.results.build_role == "incident"]
        assert inc.verdict.value_counts().to_dict() == {"exposed": 9, "served-unwritten": 3}
        assert (inc.attribution_scale == 1.0).all() and (inc.scale == f).all()
    full = report(tmp_path / "scale-1")                             # the full-size replay's documents
    assert _notified(full.out_dir) == _notified(demo_case / "reports")
    text = " ".join((full.out_dir / "postmortem.md").read_text().split())
    assert "87 source account(s)" in text and "worked out at full size: every logged request at its logged " \
        "lengths on its nodes' own pools." in text


# ------------------------------------------------------------------------------------------------ a foreign fleet

FOREIGN_SPEC = """\
[incident]
id = "ACME-INC-7"
title = "Long-context tenant crossover"
models = ["@cf/acme/longctx-34b", "acme/longctx-34b"]
window_start = 2027-03-02T00:00:00Z
window_end = 2027-03-02T23:59:59Z
[trigger]
pool_tokens = 12288
context_tokens = 32768
rule = "public"

[[sources]]
path = "gateway/*.jsonl"
format = "cloudflare-gateway"

[[sources]]
path = "engine/*/requests.jsonl"
format = "sglang-json"
source_tz = "UTC"
served_model = "acme/longctx-34b"
"""
PREFILL_POOL, DECODE_POOLS, CONTEXT, PAGE = 12_288, {"acme-decode-a": 49_152, "acme-decode-b": 40_960}, 32_768, 16
LIMIT = min(CONTEXT - 1, PREFILL_POOL - 1) - 5                    # SGLang's max_req_input_len: 12,282


def _foreign_requests(seed: int = 11) -> list[tuple]:
    """(rid, start s, latency s, prompt, outputs, account, decode node): per decode node 90 requests over
    three hours, prompts log-uniform in 30..9,000 tokens and 1 in 9 between the pool and the context."""
    rng = np.random.default_rng(seed)
    out = []
    for node in DECODE_POOLS:
        t = 0.0
        for i in range(90):
            t += float(rng.exponential(110.0))
            long = i > 3 and rng.random() < 1 / 9
            prompt = int(rng.integers(PREFILL_POOL + 1, 30_000)) if long else int(np.exp(rng.uniform(np.log(30), np.log(9_000))))
            outs = int(rng.integers(1, 400))
            out.append((f"{node}-r{i:03d}", t, round(5 + outs * 0.05 + prompt / 4000, 3), prompt, outs,
                        f"tenant-{int(rng.integers(0, 23)):02d}", node))
    return out


def _at(seconds: float) -> str:
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"2027-03-02T{9 + int(h):02d}:{int(m):02d}:{s:06.3f}"


@pytest.fixture(scope="module")
def foreign_case(tmp_path_factory) -> Path:
    import kvir
    import kvir.audit

    from ..audit.grammar import startup

    root = tmp_path_factory.mktemp("foreign")
    gw, pre, dec = [], [], {n: [] for n in DECODE_POOLS}
    for k, (rid, start, lat, prompt, outs, acct, node) in enumerate(_foreign_requests()):
        gw.append(json.dumps({"id": rid, "created_at": _at(start) + "Z", "model": "@cf/acme/longctx-34b",
                              "provider": "workers-ai", "status_code": 200, "success": True, "tokens_in": prompt,
                              "tokens_out": outs, "duration": lat * 1000, "cached": False,
                              "metadata": json.dumps({"customer_id": acct})}))
        stub = prompt >= LIMIT
        pre.append(sglang_finished(_at(start + 0.2), f"p-{rid}", 1 if stub else prompt, latency=0.2, room=5000 + k,
                                   completion=0 if stub else 1))
        dec[node].append(sglang_finished(_at(start + lat), rid, prompt, latency=lat, room=5000 + k, completion=outs))
    write(root / "gateway" / "logs.jsonl", "\n".join(gw) + "\n")
    write(root / "engine" / "acme-prefill-a" / "requests.jsonl", "\n".join(pre) + "\n")
    boot = "2027-03-01 00:00:00"
    write(root / "engine" / "acme-prefill-a" / "server.log",
          "\n".join(startup("0.5.19", boot, mode="prefill", context=CONTEXT, pool=PREFILL_POOL, page_size=PAGE)) + "\n")
    for node, lines in dec.items():
        write(root / "engine" / node / "requests.jsonl", "\n".join(sorted(lines)) + "\n")
        write(root / "engine" / node / "server.log", "\n".join(
            startup("0.5.19", boot, mode="decode", context=CONTEXT, pool=DECODE_POOLS[node], page_size=PAGE)) + "\n")
    write(root / "incident.toml", FOREIGN_SPEC)
    tri = kvir.triage(root / "incident.toml", out=root / "case")
    assert tri.summary["affected"] == sum(1 for r in _foreign_requests() if r[3] > PREFILL_POOL)
    tri.case.close()
    kvir.audit.audit(sorted(root.glob("engine/*/server.log")), case=root / "case", source_tz="UTC")
    return root / "case"


def test_foreign_fleet_every_scale_equals_full_size(foreign_case, tmp_path):
    runs = {f: _replay(foreign_case, tmp_path, f) for f in SCALES}
    full = _attribution(runs[1.0])
    inc = runs[1.0].results[runs[1.0].results.build_role == "incident"]
    assert (inc.verdict == "exposed").sum() >= 10 and len(full[0]) >= 10     # the fleet exercises attribution
    assert set(inc.limits_source.str.contains("node_configs")) == {True}     # its own pools and page size
    for f, run in runs.items():
        assert _attribution(run) == full, f
        verdicts = run.results.set_index(["request_id", "build"]).verdict
        assert verdicts.equals(runs[1.0].results.set_index(["request_id", "build"]).verdict), f


def test_what_the_documents_say_a_replay_covers(foreign_case, tmp_path):
    """The documents' replay scope (kvir.mechanisms.oversized_prompt.report.replay_scope): a limited replay
    says how many it covered, and a case replayed before issue 39 at a scale says its sources may differ."""
    import kvir
    from kvir.mechanisms.oversized_prompt.report import replay_scope

    _replay(foreign_case, tmp_path, 1 / 4, limit=5)
    total = sum(1 for r in _foreign_requests() if r[3] > PREFILL_POOL)
    case = kvir.open_case(tmp_path / "scale-0.25")
    try:
        now = replay_scope(case)
        case.con.execute("ALTER TABLE replay_results DROP COLUMN attribution_scale")     # as replayed before
        before = replay_scope(case)
    finally:
        case.close()
    covered = (f"The replay covered the first 5 of the {total} affected responses (by time): the accounts, requests "
               f"and token counts it names are those these 5 read, and a replay of all {total} may name more.")
    assert now == covered + (" Whose data each replayed response read was worked out at full size: every logged "
                             "request at its logged lengths on its nodes' own pools (only the decode attention ran "
                             "over a sample of pages, scale 1/4, which changes none of these names or counts).")
    assert before == covered + (" The replay was scaled by 1/4 (every length shrunk): the accounts, requests and "
                                "token counts it names may differ from those of a full-size replay.")
