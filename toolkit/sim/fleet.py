"""`kvir simulate`: a synthetic fleet that reproduces the reference incident (README "The reference incident").

GLM-5.3 is served from 2026-08-27 by an SGLang prefill/decode deployment whose four prefill nodes have a
KV pool of 681,280 tokens under a context of 1,048,576. Until each prefill node restarts onto the fixed
config (pool 2,042,880) on 2026-09-09 before 14:52 UTC, every prompt of 681,274 tokens or more (SGLang's
own limit, kvir.rules.trigger.max_req_input_len) is swapped for a 1-token placeholder on the prefill side while
the decode side decodes over pages it never received: HTTP 200 with another user's data. Exactly 155 such
responses had more than 681,280 tokens (the public rule), among them the reporting researcher's probes on
2026-09-08 and the provider's reproduction on 2026-09-09; 7 more fell between the engine limit and the pool
(681,274-681,280 tokens): exposed too, but only the engine rule counts them (162). The model is private 14:00-19:40 on 2026-09-09 (internal tests only). Two
other models are served correctly throughout (controls); accounts have a Zipf-skewed load; prompt
lengths have a long tail up to the context length.

Outputs (DIR):
    incident.toml               the spec, with [[sources]] entries saying what each log cannot say
    inventory.toml              node -> role, deployment, engine, version, log files
    gateway/*.json              Cloudflare AI Gateway REST pages (UTC; customer ids in metadata)
    engine/<node>/server.log    SGLang stdout (host-local time): start-up lines of every (re)start,
                                text request-log lines on some nodes, runtime ERROR lines, batch lines
    engine/<node>/requests.jsonl  SGLang JSON request log on the other nodes (host-local time)
    requests/dt=YYYY-MM-DD/*.parquet  with --format parquet: one row per request, canonical columns
    ground_truth/               what really happened (kvir reads it only in tests)

Generation is vectorised (NumPy arrays, DuckDB formatting and COPY); no Python loop runs per request.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from kvir.sim.native import truth_from_table, write_engine, write_gateway
from kvir.sim.outputs import write_ground_truth, write_incident, write_inventory
from kvir.sim.plan import plan
from kvir.sim.world import Sim

__all__ = ["simulate"]


def simulate(out: str | Path, requests: int = 50_000, seed: int = 7, format: str = "native",
             accounts: int = 0, progress: bool = False) -> Path:
    """Generate the reference fleet into `out` (see the module docstring). Returns the folder."""
    if format not in ("native", "parquet"):
        raise ValueError("format must be 'native' or 'parquet'")
    if requests < 1000:
        raise ValueError("requests must be at least 1000 (the incident alone has 155 + controls)")
    sim = Sim(Path(out), requests, seed, format, accounts)
    sim.out.mkdir(parents=True, exist_ok=True)
    for sub in ("gateway", "engine", "requests", "ground_truth"):
        if (sim.out / sub).exists():
            shutil.rmtree(sim.out / sub)
    if format == "parquet":
        from kvir.sim.parquet import write_parquet_fleet

        truth = write_parquet_fleet(sim, progress=progress)
    else:
        table = plan(sim)
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.register("fleet", table)
        write_gateway(con, sim)
        write_engine(con, sim)
        truth = truth_from_table(con)
        con.close()
    write_ground_truth(sim, truth)
    write_inventory(sim)
    write_incident(sim)
    return sim.out
