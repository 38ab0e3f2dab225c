"""replay_results and replay_exposure, the replay stage's contract: one row per affected response and build
replayed, and whose data reached whom (under each response's incident build). Every mechanism's replay part
returns rows of these schemas (kvir.replay.plugin); the stage writes them (queries/replay/write_*.sql) and
exports them. Columns a mechanism's replay has no value for are NULL. `scale` is the numeric part's (a paged-KV
replay's decode attention over a sample of pages); `attribution_scale` the one whose page placement named the
foreign owners: 1 (full size) for every replay since issue 39; in a case replayed before, the column is
missing and its `scale` shrank the placement too.

Verdicts (per row):
    exposed           HTTP 200 and the response read KV other requests wrote (their ids, accounts, ranges)
    served-unwritten  HTTP 200 over slots no replayed request had written (no foreign data found)
    not-reproduced    served from its own KV (the prompt fits), or its only token came from the prefill side
    rejected          HTTP 4xx (stage and reason say where: the door, after the forward, the tokenizer)
    failed            HTTP 5xx (the build's checksum or canary stopped it)
    inconclusive      not replayed (reason)
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

VERDICTS = ("exposed", "served-unwritten", "not-reproduced", "rejected", "failed", "inconclusive")

OWNER_T = pa.list_(pa.struct([("request_id", pa.string()), ("account_id", pa.string()), ("tokens", pa.int64()),
                              ("first_token", pa.int64()), ("last_token", pa.int64()), ("attention_mass", pa.float64())]))
CAUSAL_T = pa.list_(pa.struct([("request_id", pa.string()), ("slots", pa.int64()), ("changed_tokens", pa.int64()),
                               ("first_changed", pa.int64())]))
SCHEMA = pa.schema([
    ("request_id", pa.string()), ("build", pa.string()), ("builds", pa.string()), ("build_role", pa.string()),
    ("first_fixed", pa.bool_()), ("account_id", pa.string()), ("prefill_node", pa.string()), ("decode_node", pa.string()),
    ("prompt_tokens", pa.int64()), ("verdict", pa.string()), ("http_status", pa.int32()), ("stage", pa.string()),
    ("foreign_owners", OWNER_T), ("uninitialised_mass", pa.float64()), ("leaked_tokens", pa.int64()),
    ("carried_tokens", pa.int64()), ("scale", pa.float64()), ("assumptions", pa.string()), ("device", pa.string()),
    ("seed", pa.int64()), ("reason", pa.string()), ("prefill_tokens", pa.int64()), ("transferred_pages", pa.int64()),
    ("replayed_prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("decode_steps", pa.int64()),
    ("uninitialised_tokens", pa.int64()), ("recalled_tokens", pa.int64()), ("causal", CAUSAL_T),
    ("history_requests", pa.int64()), ("limits_source", pa.string()), ("build_source", pa.string()),
    ("build_basis", pa.string()),
    ("evidence", pa.string()), ("checksum", pa.string()), ("canary", pa.string()), ("model", pa.string()),
    ("response_tokens", pa.list_(pa.int64())),
    ("cached_tokens", pa.int64()),          # a replay through a block cache: the prompt tokens it got cached
    ("attribution_scale", pa.float64()),    # the lengths the foreign owners were placed at (1: logged, full size)
])
EXPOSURE_SCHEMA = pa.schema([("source_account_id", pa.string()), ("source_request_id", pa.string()),
                             ("reader_request_id", pa.string()), ("reader_account_id", pa.string()),
                             ("build", pa.string()), ("tokens", pa.int64()), ("attention_mass", pa.float64())])


def write(case, results: pa.Table, exposure: pa.Table) -> None:
    case.con.register("kvir_replay_rows", results)
    case.con.register("kvir_replay_exposure_rows", exposure)
    try:
        case.run("replay/write_results", inputs={"rows": "kvir_replay_rows"})
        case.run("replay/write_exposure", inputs={"rows": "kvir_replay_exposure_rows"})
    finally:
        case.con.unregister("kvir_replay_rows")
        case.con.unregister("kvir_replay_exposure_rows")


def export(case) -> dict[str, Path]:
    from kvir.case.export import write_csv, write_parquet

    p = case.path
    guard = case.manifest.setdefault("csv", {})          # each CSV's guard and where its exact values are
    return {
        "replay_results.parquet": write_parquet(case.con, "SELECT * FROM replay_results", p / "replay_results.parquet"),
        "replay_results.csv": write_csv(case.con, "replay_results", p / "replay_results.csv",
                                        columns=[c for c in case.df("replay_results").columns
                                                 if c not in ("response_tokens", "assumptions")],
                                        guard=guard, exact="replay_results.parquet"),
        "replay_exposure.parquet": write_parquet(case.con, "SELECT * FROM replay_exposure", p / "replay_exposure.parquet"),
        "replay_exposure.csv": write_csv(case.con, "replay_exposure", p / "replay_exposure.csv", guard=guard,
                                         exact="replay_exposure.parquet"),
    }


__all__ = ["VERDICTS", "SCHEMA", "EXPOSURE_SCHEMA", "write", "export"]
