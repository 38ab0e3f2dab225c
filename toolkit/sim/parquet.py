"""`kvir simulate --format parquet`: the reference fleet as one row per request, day-partitioned Parquet.

For benchmarks at 10^7-10^8 requests: the same plan as the native fleet (simulate._rows), generated one
day at a time so memory stays bounded, written as requests/dt=YYYY-MM-DD/part-0.parquet with 1M-row
row groups and kvir's canonical column names (triage maps them without a [sources.columns] table).
"""
from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kvir.sim import plan as P
from kvir.sim import world as S

COLUMNS = ["request_id", "ts", "ts_end", "account_id", "model", "prompt_tokens", "completion_tokens",
           "http_status", "finish_reason", "prefill_node", "decode_node", "prefill_tokens"]


def write_parquet_fleet(sim: "S.Sim", progress: bool = False) -> dict:
    rng = np.random.default_rng(sim.seed)
    names, zipf = P.accounts(rng, sim)
    special = P.special_rows(rng, len(zipf), zipf)
    n_base = max(0, sim.requests - len(special["ts_us"]))
    days = []
    d = S.SIM_START
    while d < S.SIM_END:
        days.append(d)
        d += dt.timedelta(days=1)
    # base requests per day in proportion to the day's length (all days are whole: equal shares)
    per_day = np.full(len(days), n_base // len(days))
    per_day[: n_base - per_day.sum()] += 1
    root = sim.out / "requests"
    affected_parts, kinds, total = [], {}, 0
    from rich.progress import Progress

    from kvir.core.progress import stderr

    with Progress(console=stderr, disable=not progress, transient=True) as bar:
        task = bar.add_task("write Parquet fleet", total=len(days))
        for day, n_day in zip(days, per_day):
            lo, hi = int(day.timestamp() * 1e6), int((day + dt.timedelta(days=1)).timestamp() * 1e6)
            sel = (special["ts_us"] >= lo) & (special["ts_us"] < hi)
            sp = {k: v[sel] for k, v in special.items()}
            table = P.rows(sim, rng, int(n_day), day, day + dt.timedelta(days=1), names, zipf, sp, engine=False)
            ts_end = pc.add(table["ts"].cast(pa.int64()),
                            pc.cast(pc.round(pc.multiply(table["latency_s"], 1e6)), pa.int64()))
            out = table.append_column("ts_end", ts_end.cast(pa.timestamp("us", tz="UTC"))).select(COLUMNS)
            part = root / f"dt={day.strftime('%Y-%m-%d')}"
            part.mkdir(parents=True, exist_ok=True)
            pq.write_table(out, part / "part-0.parquet", row_group_size=1 << 20, compression="zstd")
            exposed = table.filter(table["exposed"])
            affected_parts.append(exposed.select(["request_id", "ts", "account_id", "model", "prompt_tokens",
                                                  "prefill_node", "decode_node", "kind"]))
            for k, v in zip(*np.unique(np.asarray(table["kind"].cast(pa.string())), return_counts=True)):
                kinds[str(k)] = kinds.get(str(k), 0) + int(v)
            total += table.num_rows
            bar.advance(task)
    affected = pa.concat_tables([t.cast(pa.schema([(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                                                   for f in t.schema])) for t in affected_parts])
    P.check_exposed(affected["kind"].to_pylist())
    con = duckdb.connect()
    affected = con.sql("SELECT * FROM affected ORDER BY ts, request_id").to_arrow_table()
    con.close()
    return {"affected": affected, "kinds": kinds, "total": total}
