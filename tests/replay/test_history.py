"""Node history from logged rows: limits in effect, restarts, skipped rows. (Lengths are never scaled: the
scale-invariance of attribution is tests/replay/test_scale_invariance.py's.)"""
from __future__ import annotations

import pandas as pd

from kvir.replay.history import LimitsSource, build_segments

INCIDENT = {"pool_tokens": 681_280, "context_tokens": 1_048_576}   # the pool and context the spec declares


def _configs():
    ts = pd.Timestamp
    return pd.DataFrame({
        "node": ["p0", "p0", "d0"],
        "role": ["prefill", "prefill", "decode"],
        "ts": [ts("2026-08-26T22:10:00Z"), ts("2026-09-09T14:38:00Z"), ts("2026-08-26T22:15:00Z")],
        "pool_tokens": [681_280, 2_042_880, 1_310_720],
        "context_len": [1_048_576] * 3,
        "page_size": [64, 64, 64],
        "evidence_file": ["p0/server.log", "p0/server.log", "d0/server.log"],
        "evidence_line": [12, 67, 13],
    })


def test_limits_in_effect_follow_node_restarts():
    src = LimitsSource(_configs(), **INCIDENT)
    before = src.at("p0", "prefill", pd.Timestamp("2026-09-01T00:00:00Z").value)
    after = src.at("p0", "prefill", pd.Timestamp("2026-09-10T00:00:00Z").value)
    assert (before.pool_tokens, before.max_req_input_len) == (681_280, 681_274)
    assert (after.pool_tokens, after.max_req_input_len) == (2_042_880, 1_048_570)
    assert before.source == "node_configs: p0/server.log:12" and src.source == "node_configs"
    unknown = src.at("p9", "prefill", 0)                # a node without start-up logs: the incident table
    assert unknown.pool_tokens == 681_280 and any("incident" in a for a in src.assumed)


def test_limits_without_node_configs_are_assumptions_said_so():
    src = LimitsSource(None, **INCIDENT)
    d = src.at("d0", "decode", 0)
    assert (d.pool_tokens, d.context_len, d.page_size) == (2_097_152, 1_048_576, 64)
    assert src.source == "incident" and any("2 x context" in a for a in src.assumed)


def _history(rows):
    cols = ["request_id", "account_id", "ts", "ts_end", "prompt_tokens", "completion_tokens", "prefill_node",
            "outcome", "http_status"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], columns=cols)


def test_build_segments_orders_skips_and_splits_at_restarts():
    t = lambda s: pd.Timestamp(f"2026-08-28T{s}Z")   # noqa: E731
    cfg = _configs()
    cfg.loc[len(cfg)] = ["d0", "decode", pd.Timestamp("2026-08-28T12:00:00Z"), 1_310_720, 1_048_576, 64, "d0/server.log", 90]
    hist = _history([
        ("b", "acct-2", t("10:00:00"), t("10:00:05"), 1000, 5, "p0", "served", 200),
        ("a", "acct-1", t("10:00:00"), t("10:00:09"), 2000, 3, "p0", "served", 200),     # same ts: id order
        ("x", "acct-3", t("10:01:00"), t("10:01:01"), None, 3, "p0", "served", 200),     # no length
        ("r", "acct-3", t("10:02:00"), t("10:02:01"), 500, 0, "p0", "rejected", 400),    # held no pages
        ("n", "acct-4", t("10:03:00"), None, 700, None, "p0", "served", 200),            # no end, no completion
        ("v", "acct-5", t("12:30:00"), t("12:31:00"), 700_000, 40, "p0", "served", 200),  # after the restart
    ])
    segs, skipped = build_segments(hist, "d0", LimitsSource(cfg, **INCIDENT), {"v"})
    assert [[r.request_id for r in s.requests] for s in segs] == [["a", "b", "n"], ["v"]]
    assert skipped == {"prompt length unknown": 1, "not served (no decode pages held)": 1,
                       "end time unknown (released at once)": 1, "completion length unknown (taken as 1)": 1}
    assert segs[1].requests[0].is_target and segs[1].start == pd.Timestamp("2026-08-28T12:00:00Z").value
    ev = segs[0].events()
    # releases (order 0) before arrivals (order 1) at one instant; a request without an end right after its arrival
    assert [(k, rid) for _, k, rid in ev] == [(1, "a"), (1, "b"), (0, "b"), (0, "a"), (1, "n"), (2, "n")]
