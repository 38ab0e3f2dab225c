"""Audit without a zone (issue 21 point 6): a node's starts are ordered by the log's own sequence (one file,
one clock), so a restart onto a pool that holds the context ends its exposure even where the absolute time
is unknown; nothing is called "still exposed" that the same log shows restarted."""
from __future__ import annotations

import pandas as pd

from kvir.audit import audit

DUMP = ("server_args=ServerArgs(model_path='m', served_model_name='m', context_length=131072, "
        "disaggregation_mode='prefill', page_size=64)")


def _pool(stamp: str, pool: int) -> str:
    return (f"[{stamp} TP0] max_total_num_tokens={pool}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB")


def test_restart_onto_a_large_pool_ends_the_exposure_without_a_zone(tmp_path):
    p = tmp_path / "prefill-7.log"
    p.write_text("\n".join([
        f"[2026-03-01 10:00:00] {DUMP}", _pool("2026-03-01 10:01:00", 100_000),      # pool < context: exposed
        f"[2026-03-02 09:00:00] {DUMP}", _pool("2026-03-02 09:01:00", 300_000),      # restart: holds the context
    ]) + "\n")
    r = audit([p])                                          # no --source-tz: times are unknown in UTC
    starts = r.node_configs.sort_values("start_index")
    assert starts["ts"].isna().all()                        # no zone, no UTC time ...
    assert starts["pool_tokens"].tolist() == [100_000, 300_000]   # ... but the log's own order
    ne = r.node_exposure
    exposed = ne[ne["state"] == "exposed"].iloc[0]
    assert bool(exposed["ended"]) and pd.isna(exposed["exposed_until"])
    assert exposed["ended_by"] == "restart with pool 300,000 >= context 131,072"


def test_without_a_restart_it_is_still_exposed(tmp_path):
    p = tmp_path / "prefill-8.log"
    p.write_text(f"[2026-03-01 10:00:00] {DUMP}\n" + _pool("2026-03-01 10:01:00", 100_000) + "\n")
    ne = audit([p]).node_exposure
    assert ne["state"].tolist() == ["exposed"] and not bool(ne["ended"].iloc[0])
