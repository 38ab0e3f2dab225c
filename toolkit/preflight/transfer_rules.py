"""The shared preflight rule table: KV-transfer rules that belong to no registered mechanism yet (they are the
mechanism of pages freed or reused while a transfer still writes them, and of transfers that fail quietly,
which issue 31 builds). Ready to move: the rules (`RULES`), their facts (transfer.toml), their annotation of
node_configs (`annotate`) and their SQL (queries/preflight/transfer_findings.sql) go into that mechanism's audit
part unchanged, ids included, and this module is deleted.

    KVT001  vLLM with a KV connector recomputes (or ignores) blocks it failed to load, so transfer failures go
            unseen, instead of failing the request (kv_load_failure_policy, default `fail` from 0.17.0)

Also the runtime signals of transfers and aborts (`SIGNALS`), which kvir detect turns into rules.
"""
from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from kvir.audit.rules import Rule
from kvir.audit.signals import Correlation, CounterAlert, LogSignal, Signals
from kvir.core.sql import QueryLog, run
from kvir.rules.builds import version_key

PATH = Path(__file__).with_name("transfer.toml")
TABLE_NAME = "the shared preflight rule table (transfer and abort rules, kvir.preflight.transfer_rules)"
COLUMNS = ("kv_load_policy", "kv_load_policy_basis")

RULES: tuple[Rule, ...] = (
    Rule("KVT001", "kv-load-failure-not-failing", "KV connector failures are recomputed or ignored, not failed",
         "medium",
         "Set \"kv_load_failure_policy\": \"fail\" in --kv-transfer-config (the default from vLLM 0.17.0) so a "
         "request whose KV did not load ends with an error that clients and metrics see.",
         "vLLM's scheduler is told by the KV connector which blocks failed to load. With the policy `recompute` "
         "(the default in 0.13.0-0.16.0, the only behaviour of 0.12.0) it recomputes them and the request goes on, "
         "so a P/D deployment can fail every transfer without anyone noticing (vLLM RFC #32200, which changed the "
         "default); 0.11.0 has no such handling at all. Read from the wheels (toolkit/preflight/transfer.toml). "
         "Applies to vLLM starts with a --kv-transfer-config connector; the policy comes from the start's "
         "kv_transfer_config, else the release's default; unknown when neither is in the evidence.",
         ""),
)


@lru_cache(maxsize=1)
def facts() -> dict[str, Any]:
    return tomllib.loads(PATH.read_text())


def _row(version: str | None) -> dict[str, Any] | None:
    k = version_key(version) if version else None
    if k is None:
        return None
    for r in facts()["load_failure_policy"]:
        if version_key(r["first"]) <= k and (r.get("last") is None or k[:3] <= version_key(r["last"])[:3]):
            return r
    return None


def load_policy(version: str | None, explicit: str | None) -> tuple[str | None, str]:
    """(policy, basis) of a vLLM start with a KV connector: none | recompute | fail, or None (unknown)."""
    row = _row(version)
    where = f" ({row['file']}: {row['function']})" if row else ""
    if explicit and row is not None and not row["configurable"]:
        return row["default"], (f"vLLM {version} has no kv_load_failure_policy (it is ignored): "
                                f"{row['default']}{where}")
    if explicit:
        return explicit, "set in kv_transfer_config"
    if row is None:
        return None, (f"unknown: no kv_load_failure_policy in the evidence and vLLM {version} is not among the "
                      "releases read" if version else "unknown: no kv_load_failure_policy and no vLLM version in the evidence")
    return row["default"], f"the default of vLLM {version}{where}"


def annotate(con, log: QueryLog) -> None:
    """Add COLUMNS to node_configs: each vLLM start with a KV connector, its effective failure policy."""
    rows = con.execute("SELECT config_id, version, load_failure_policy FROM node_configs "
                       "WHERE engine = 'vllm' AND pc_connector IS NOT NULL").fetchall()
    answers = [(cid, *load_policy(v, p)) for cid, v, p in rows]
    table = pa.table({"config_id": pa.array([a[0] for a in answers], pa.int64()),
                      "kv_load_policy": pa.array([a[1] for a in answers], pa.string()),
                      "kv_load_policy_basis": pa.array([a[2] for a in answers], pa.string())})
    con.register("preflight_transfer_rows", table)
    try:
        run(con, "preflight/node_transfer", inputs={"rows": "preflight_transfer_rows"}, log=log)
    finally:
        con.unregister("preflight_transfer_rows")


def findings(con, log: QueryLog) -> None:
    run(con, "preflight/transfer_findings", log=log)


# ------------------------------------------------------------------------------------------------ signals
_PD = "read in the wheels' own statements, run on fakes (tests/fixtures/real/sglang-pd-lines)"
ABORTED = LogSignal(
    "vllm-request-aborted", "vLLM aborted a request (client gone, timeout, proxy abort)", "vllm", "informational",
    ("Aborted request(s) ",), "vllm/v1/engine/async_llm.py AsyncLLM.abort (logger.info)",
    "the engine freed a request's blocks before it finished; with a KV connector a transfer may still write them",
    alert=False, fields=("node",))
ADDED = LogSignal(
    "vllm-request-added", "vLLM admitted a request", "vllm", "informational", ("Added request ",),
    "vllm/v1/engine/async_llm.py AsyncLLM.add_request (logger.info)", "a request got blocks on this engine",
    alert=False, fields=("node",))

SIGNALS = Signals(
    lines=(
        LogSignal("sglang-decode-transfer-failed", "SGLang decode KV transfer failed", "sglang", "medium",
                  ("Decode transfer failed for request",),
                  f"sglang/srt/disaggregation/decode.py DecodeTransferQueue.pop_transferred (0.5.12+; {_PD})",
                  "the request's KV did not arrive (an abort mid-transfer, a timeout, a lost prefill): its pages "
                  "are freed, and without deferred release a late write can land on pages already reused"),
        LogSignal("sglang-prefill-transfer-failed", "SGLang prefill KV transfer failed", "sglang", "medium",
                  ("Prefill transfer failed for request",),
                  "sglang/srt/disaggregation/prefill.py SchedulerDisaggregationPrefillMixin."
                  f"handle_inflight_transfer_failure (error from 0.5.16; 0.5.13-0.5.15 log it at debug; {_PD})",
                  "prefill stopped sending a request's KV (decode aborted it, or the transfer failed)"),
        LogSignal("sglang-deferred-release-timed-out", "SGLang released KV before prefill acknowledged the drain",
                  "sglang", "high", ("Deferred KV release for room", "releasing anyway"),
                  f"sglang/srt/disaggregation/decode.py DecodeTransferQueue.resolve_deferred_releases (0.5.19+; {_PD})",
                  "decode gave up waiting for prefill's drain acknowledgement and freed the pages: a write still in "
                  "flight can land on pages handed to another request"),
        LogSignal("vllm-nixl-transfer-failure", "vLLM NIXL KV transfer failed", "vllm", "medium",
                  ("NIXL transfer failure:", "Context:"),
                  "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py (logger, structured from PR 32031; "
                  "tests/fixtures/real/vllm-connector-lines)",
                  "a NIXL transfer failed; its blocks are marked invalid (what happens next is kv_load_failure_policy)"),
        LogSignal("vllm-kv-load-recomputed", "vLLM recomputed KV that failed to load", "vllm", "medium",
                  ("Recovered from KV load failure:", "rescheduled"),
                  "vllm/v1/core/sched/scheduler.py Scheduler._handle_invalid_blocks (kv_load_failure_policy "
                  "recompute; tests/fixtures/real/vllm-connector-lines)",
                  "a KV connector failed to load a request's blocks and vLLM recomputed them: the transfer failure "
                  "is invisible to the client (KVT001 is its configuration)"),
        LogSignal("vllm-nixl-kv-expired", "vLLM released KV blocks no decode worker retrieved", "vllm", "medium",
                  ("Releasing expired KV blocks for request",),
                  "vllm/distributed/kv_transfer/kv_connector/v1/nixl (the worker's get_finished / expiry path; "
                  "tests/fixtures/real/vllm-connector-lines)",
                  "prefill freed blocks whose transfer lease expired: a decode worker that still reads them reads "
                  "pages that may be reused"),
        ABORTED, ADDED),
    correlations=(
        Correlation("vllm-abort-then-allocation", "vLLM aborted a request and admitted another within five minutes",
                    "low", (ABORTED.signal_id, ADDED.signal_id), ("node",), "5m",
                    "candidates for pages freed while written: on a node with a KV connector, the requests admitted "
                    "right after an abort are the ones a late write can reach (a hunt: on a node without one, an "
                    "abort frees nothing anyone still writes)"),),
    counters=(
        CounterAlert("KvirSglangKvTransferFailed", "high",
                     "increase(sglang:num_transfer_failed_reqs_total[5m]) > 0",
                     "SGLang requests whose KV transfer failed (checksum mismatches included from 0.5.21)",
                     "sglang/srt/observability/metrics_collector.py num_transfer_failed_reqs (0.5.12+); incremented "
                     "in disaggregation/decode.py _record_transfer_failure and after a KV checksum mismatch",
                     metrics=("sglang:num_transfer_failed_reqs_total",)),
        CounterAlert("KvirVllmNixlTransferFailed", "high",
                     "increase(vllm:nixl_num_failed_transfers_total[5m]) > 0",
                     "vLLM NIXL transfers that failed",
                     "vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py counter vllm:nixl_num_failed_transfers "
                     "(prometheus_client exposes it with _total)",
                     metrics=("vllm:nixl_num_failed_transfers_total",)),
        CounterAlert("KvirVllmNixlKvExpired", "medium",
                     "increase(vllm:nixl_num_kv_expired_reqs_total[15m]) > 0",
                     "vLLM released KV that no decode worker retrieved in time",
                     "vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py counter vllm:nixl_num_kv_expired_reqs",
                     metrics=("vllm:nixl_num_kv_expired_reqs_total",)),
    ),
    notes=("These signals are the transfer and abort mechanism's (issue 31); they live in the shared preflight "
           "rule table until it is registered.",))
