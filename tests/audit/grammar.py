"""SGLang log lines in the exact grammar of each published build, for hand-made logs in tests.

The settings dump is each build's own (tests/fixtures/sglang/golden/<X>.server_args.log, printed by the
wheel's ServerArgs through its configure_logger) with chosen values put in; every other line is the build's
format string from its wheel (toolkit/rules/builds.toml names the file and function of each), with values
filled in here. Nothing in this module imports kvir: the expected findings are worked out from these lines.

    lines = startup("0.5.19", "2026-08-26 22:10:00", mode="prefill", context=1_048_576, pool=681_280)
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "sglang" / "golden"
REPR_BUILDS = ("0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1", "0.5.14", "0.5.15", "0.5.15.post1",
               "0.5.16", "0.5.17", "0.5.18")


def vkey(v: str) -> tuple:
    parts = v.split(".")
    return (int(parts[0]), int(parts[1]), int(parts[2]), 1 if len(parts) > 3 else 0)


def golden_message(version: str) -> str:
    """The build's server_args message (after the `[time] ` prefix)."""
    line = (GOLDEN / f"{version}.server_args.log").read_text().rstrip("\n")
    return line.split("] ", 1)[1]


def dump(version: str, **values) -> str:
    """`server_args=...` of `version` with `values` put in (each must be a field of that build)."""
    msg = golden_message(version)
    if msg.startswith("server_args={"):
        d = ast.literal_eval(msg[len("server_args="):])
        for k, v in values.items():
            if k not in d:
                raise KeyError(f"{version} has no field {k}")
            d[k] = v
        return "server_args=" + repr(d)
    for k, v in values.items():
        new, n = re.subn(r"((?:\(|, )" + re.escape(k) + r"=)(?:'[^']*'|\"[^\"]*\"|[^,()]+)(?=[,)])",
                         lambda m: m.group(1) + repr(v), msg, count=1)
        if n != 1:
            raise KeyError(f"{version} has no field {k}")
        msg = new
    return msg


def stamp(ts: str, tags: str = "") -> str:
    return f"[{ts}{' ' + tags if tags else ''}]"


def kv_alloc(version: str, tokens: int) -> str:
    """memory_pool.py: the KV allocation line (0.5.13+ name the dtype first)."""
    sizes = "K size: 40.64 GB, V size: 40.64 GB"
    if vkey(version) < vkey("0.5.13"):
        return f"KV Cache is allocated. #tokens: {tokens}, {sizes}"
    return f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, {sizes}"


def pool_line(pool: int, context: int) -> str:
    """managers/scheduler.py Scheduler.init_model_worker (identical in every build)."""
    return (f"max_total_num_tokens={pool}, chunked_prefill_size=16384, max_prefill_tokens=16384, "
            f"max_running_requests=64, context_len={context}, available_gpu_mem=8.93 GB")


def pool_warning(pool: int, context: int) -> str:
    """0.5.23 managers/tp_worker.py TpModelWorker.get_worker_info."""
    return (f"KV pool holds {pool} tokens, fewer than --context-length {context}. One full-length request cannot fit, "
            "so long requests will be refused or truncated at serving time. Lower --context-length, raise "
            "--mem-fraction-static, or free memory taken before the pool is sized.")


def startup(version: str, ts: str, *, mode: str, context: int, pool: int, tp: int = 1, canary: str = "none",
            checksum: bool | None = None, truncate_dump: int | None = None, **values) -> list[str]:
    """One node start as `version` prints it: the dump (main process), the allocation line on every rank,
    the pool line on TP rank 0, 0.5.23's warning when the pool is below the context, the ready line."""
    vals = dict(disaggregation_mode=mode, context_length=context, tp_size=tp, **values)
    if vkey(version) >= vkey("0.5.13"):
        vals["kv_canary"] = canary
    if checksum is not None:
        vals["disaggregation_enable_kv_checksum"] = checksum
    d = dump(version, **vals)
    if truncate_dump is not None:
        d = d[:truncate_dump]
    tags = [f"TP{r}" if tp > 1 else "TP0" for r in range(tp)]
    lines = [f"{stamp(ts)} {d}"]
    lines += [f"{stamp(ts, t)} {kv_alloc(version, pool)}" for t in tags]
    if version == "0.5.23" and pool < context:
        lines += [f"{stamp(ts, t)} {pool_warning(pool, context)}" for t in tags]
    lines.append(f"{stamp(ts, tags[0])} {pool_line(pool, context)}")
    lines.append(f"{stamp(ts)} The server is fired up and ready to roll!")
    return lines


def input_too_long(ts: str, n: int, limit: int, rid: str) -> str:
    """managers/utils.py validate_input_length + schedule_batch.py Req.set_finish_with_abort (TP rank 0)."""
    return (f"{stamp(ts, 'TP0')} Input length ({n} tokens) exceeds the maximum allowed length ({limit} tokens). "
            f"Use a shorter input or enable --allow-auto-truncate., self.rid='{rid}'")


def kv_budget_exceeded(ts: str, n: int, rid: str) -> str:
    """0.5.21+ managers/scheduler.py Scheduler.init_req_max_new_tokens (max_new_tokens_for_memory gave None)
    + Req.set_finish_with_abort (TP rank 0)."""
    return f"{stamp(ts, 'TP0')} Request prompt exceeds the KV memory budget: input_len={n}., self.rid='{rid}'"


def dsv4_memory_calculation(ts: str, full_token: int, tags: str = "TP0") -> str:
    """0.5.20+ model_executor/pool_configurator.py DSV4PoolConfigurator.calculate_pool_sizes (0.5.12-0.5.19: no
    unified=... fields)."""
    return (f"{stamp(ts, tags)} DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False, "
            f"bytes_per_full_token=1587.20, available_bytes=62.41 GB, c128_state_fixed=0.05 GB, c2_state_fixed=0.00 GB, "
            f"swa_fixed=2.10 GB, swa_ring_fixed=0.00 GB, c4_state_fixed=0.31 GB, full_token={full_token}")


def above_profiled(ts: str, user: int, profiled: int) -> str:
    """mem_cache/kv_cache_configurator.py _apply_token_constraints (logging.warning; earlier builds
    model_runner_kv_cache_mixin.py)."""
    return (f"{stamp(ts, 'TP0')} max_total_tokens={user} is larger than the profiled value {profiled}. "
            "Use the profiled value instead.")


def canary_stats(ts: str, step: int, protected: int, violations: int, tags: str = "TP0") -> str:
    """kv_canary/runner/stats_logger.py PeriodicCanaryStatsLogger._postprocess_on_host."""
    return (f"{stamp(ts, tags)} [canary] step={step} protected_tokens={protected} sweep_passes=0 "
            f"violations={violations} launch_tags_active=2/5")


def canary_violation(ts: str, slot: int = 4242, position: int = 17, tags: str = "TP0") -> list[str]:
    """kv_canary/runner/violation_reporter.py: one log record of several lines (log mode: logger.warning)."""
    return [f"{stamp(ts, tags)} kv_canary violation: launch_tag=DECODE_ATTN fail_reason=TOKEN_MISMATCH "
            f"slot_idx={slot} position={position} stored_token=81 expected_token=4117 "
            f"stored_chain_hash=0x00000000deadbeef expected_aux=0x0000000000c0ffee",
            f"KV cache canary violation detected (kernel_kind=DECODE_ATTN, slot_idx={slot}, position={position})",
            "canary_kind:       read",
            "  fail_reasons: TOKEN_MISMATCH",
            "  total_violations=1 ring_overflow=0 step_when_pumped=300"]


def checksum_mismatch(ts: str, rid: str, room: int, tags: str = "TP0") -> str:
    """0.5.21+ disaggregation/decode.py _verify_kv_checksums."""
    return (f"{stamp(ts, tags)} KV checksum mismatch req={rid} bootstrap_room={room} expected=0x1b2c3d4e "
            f"got=0x5e6f7a8b")


def checksum_skipped(ts: str, tags: str = "TP0") -> str:
    """0.5.23 disaggregation/decode.py _kv_checksum_comparable."""
    return (f"{stamp(ts, tags)} KV checksum skipped: prefill layout signature 0x1f2e differs from this decode's "
            "0x3a4b (TP width, PP stage, or page size); its requests are admitted unverified.")


def context_corruption(ts: str, rid: str, room: int, other: int, tags: str = "TP0") -> str:
    """disaggregation/decode.py _commit_transfer_to_req (every build)."""
    return (f"{stamp(ts, tags)} Context corruption detected: Request {rid} (bootstrap_room={room}) received metadata "
            f"from bootstrap_room={other}. Metadata buffer index: 3. This indicates metadata buffer index collision.")


def install_canary(ts: str, mode: str = "prefill", tags: str = "TP0") -> str:
    """kv_canary/api.py install_canary."""
    return (f"{stamp(ts, tags)} install_canary: disaggregation_mode=DisaggregationMode.{mode.upper()} "
            "config=CanaryConfig(mode='log') perturb_config=None launch_capacities={} n_buffer_groups=1 "
            "buffer_group_kinds=['full'] swa_window_size=0 speculative_num_steps=0")
