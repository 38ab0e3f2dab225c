"""SGLang start-up lines for the simulated fleet, in the shapes the build it claims prints (the settings dump:
ServerArgs(...) up to 0.5.18, {...} from 0.5.19; the fields that build has; tests/fixtures/sglang/golden holds each build's real line).

A start writes the server_args dump, the weight-load line, the KV-pool allocation (on every TP rank, as
older builds do: kvir must deduplicate by value, never sum), the memory-pool and scheduler limit lines,
the PD checksum line and the ready line, each behind `[YYYY-MM-DD HH:MM:SS <rank tags>]` in host-local
time. A few lines per node start: built in Python.
"""
from __future__ import annotations

import datetime as dt
import zoneinfo

from kvir.sim import world as sim


def _stamp(ts: dt.datetime, tags: str = "") -> str:
    local = ts.astimezone(zoneinfo.ZoneInfo(sim.HOST_TZ)).strftime("%Y-%m-%d %H:%M:%S")
    return f"[{local}{' ' + tags if tags else ''}]"


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:3] if x.isdigit())


def server_args_dump(version: str, args: dict) -> str:
    """What engine.py logs for this build: `server_args=ServerArgs(k=v, ...)` (the dataclass repr) up to 0.5.18,
    `server_args={'k': v, ...}` (ServerArgs.resolved_dict()) from 0.5.19 (FACTS: the settings dump)."""
    if _version(version) >= (0, 5, 19):
        return f"server_args={args!r}"
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def startup_block(node: "sim.Node", i: int) -> str:
    """The start-up lines of the i-th (re)start of `node`."""
    start, pool = node.starts[i]
    fixed = pool != node.starts[0][1] or node.role != "prefill"
    mem_frac = 0.88 if fixed and node.role == "prefill" else (0.72 if node.role == "prefill" else 0.85)
    mode = {"prefill": "prefill", "decode": "decode", "mixed": "null"}[node.role]
    pd = node.role in ("prefill", "decode")
    args = {
        "model_path": node.model_path, "tokenizer_path": node.model_path, "tokenizer_mode": "auto",
        "skip_tokenizer_init": False, "load_format": "auto", "trust_remote_code": True, "dtype": "auto",
        "kv_cache_dtype": "fp8_e4m3", "quantization": "fp8", "context_length": node.context, "device": "cuda",
        "served_model_name": node.served_model, "is_embedding": False, "host": "0.0.0.0", "port": 30000,
        "mem_fraction_static": mem_frac, "max_running_requests": 64, "max_total_tokens": None,
        "chunked_prefill_size": 16384, "max_prefill_tokens": 16384, "schedule_policy": "fcfs",
        "page_size": sim.PAGE, "tp_size": node.tp, "dp_size": 1, "pp_size": 1, "random_seed": 1234,
        "log_level": "info", "log_requests": True, "log_requests_level": 0,
        "log_requests_format": node.request_log, "enable_metrics": True, "allow_auto_truncate": False,
        "disaggregation_mode": mode, "disaggregation_transfer_backend": "mooncake",
        "disaggregation_bootstrap_port": 8998, "disaggregation_ib_device": None,
        "num_reserved_decode_tokens": 512, "kv_canary": "none",
    }
    if _version(node.version) >= (0, 5, 21):      # the flag exists from 0.5.21 (FACTS: fields by build)
        args["disaggregation_enable_kv_checksum"] = False
    k_gb = pool * 61 * 8 * 128 * 1 / 8 / 2**30        # illustrative per-rank K size (fp8, 8 KV heads / 8 ranks)
    # what the entrypoint script prints before the engine starts: the build and the PD environment
    lines = [f"{_stamp(start)} SGLang version: {node.version}"]
    if pd:
        lines += [f"{_stamp(start)} export SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=0",
                  f"{_stamp(start)} export SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES=0"]
    lines.append(f"{_stamp(start)} {server_args_dump(node.version, args)}")
    if node.role == "decode":
        lines.append("KV cache is forced as chunk cache for decode server")
    t = start + dt.timedelta(seconds=71)
    lines.append(f"{_stamp(t, 'TP0')} Load weight end. type=Glm5MoeForCausalLM, dtype=torch.bfloat16, "
                 f"avail mem=71.26 GB, mem usage=64.87 GB.")
    t += dt.timedelta(seconds=2)
    for r in range(node.tp):
        lines.append(f"{_stamp(t, f'TP{r}')} KV Cache is allocated. #tokens: {pool}, K size: {k_gb:.2f} GB, V size: {k_gb:.2f} GB")
    lines.append(f"{_stamp(t, 'TP0')} Memory pool end. avail mem=8.93 GB")
    t += dt.timedelta(seconds=3)
    lines.append(f"{_stamp(t, 'TP0')} max_total_num_tokens={pool}, chunked_prefill_size=16384, max_prefill_tokens=16384, "
                 f"max_running_requests=64, context_len={node.context}, available_gpu_mem=8.93 GB")
    if pd:
        lines.append(f"{_stamp(t)} PD KV checksum disabled: --disaggregation-enable-kv-checksum is not set")
    t += dt.timedelta(seconds=9)
    if pd:
        lines.append(f"{_stamp(t)} End of disaggregation warmup")
    lines.append(f"{_stamp(t)} The server is fired up and ready to roll!")
    return "\n".join(lines)
