"""The plan of the reference fleet: every request, one row each, with what really happened to it (its fate
follows the nodes' pools over time; exactly the planned 155 + 7 responses are exposed). Vectorised: NumPy
arrays, no Python loop per request."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

from kvir.rules.trigger import max_req_input_len
from kvir.sim.world import (CONTEXT, ENGINE_LIMIT, GW_MODEL, KINDS, LAUNCH, LONG_CAP, MODEL_NAMES, MODELS, N_AFFECTED,
                            N_ENGINE_GAP, N_PROVIDER, N_RESEARCHER, POOL_BUG, POOL_FIXED, PRIVATE_FROM, PROVIDER_QA,
                            PUBLIC_AGAIN, RESEARCHER, SIM_END, SIM_START, WINDOW_END, Sim, t)

def _ulids(rng: np.random.Generator, ts_ms: np.ndarray) -> pa.Array:
    """ULID-like ids (26 Crockford base32 chars: 48-bit ms time + 80 random bits), vectorised."""
    alphabet = np.frombuffer(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", np.uint8)
    n = len(ts_ms)
    chars = np.empty((n, 26), np.uint8)
    tms = ts_ms.astype(np.uint64)
    for k in range(10):                                   # 10 chars of time (50 bits, top 2 zero)
        chars[:, 9 - k] = alphabet[((tms >> np.uint64(5 * k)) & np.uint64(31)).astype(np.int64)]
    chars[:, 10:] = alphabet[rng.integers(0, 32, size=(n, 16))]
    return pa.array(chars.view("S26").ravel()).cast(pa.string())


def _hex_ids(rng: np.random.Generator, n: int) -> pa.Array:
    hexd = np.frombuffer(b"0123456789abcdef", np.uint8)
    return pa.array(hexd[rng.integers(0, 16, size=(n, 32))].view("S32").ravel()).cast(pa.string())


def _account_names(rng: np.random.Generator, n: int) -> np.ndarray:
    raw = rng.choice(2**32, size=n * 2, replace=False)[:n]
    return np.array([f"acct-{x:08x}" for x in raw])   # n accounts, not n requests


def _diurnal_times(rng: np.random.Generator, n: int, start: dt.datetime, end: dt.datetime) -> np.ndarray:
    """n UTC epoch-microsecond times in [start, end) with a day/night cycle (peak ~15:00 UTC)."""
    s, e = int(start.timestamp() * 1e6), int(end.timestamp() * 1e6)
    out = np.empty(0, np.int64)
    while len(out) < n:
        cand = rng.integers(s, e, size=int((n - len(out)) * 1.8) + 16)
        hour = (cand // 3_600_000_000) % 24
        w = 0.55 + 0.45 * np.cos((hour - 15) / 24 * 2 * np.pi)
        out = np.concatenate([out, cand[rng.random(len(cand)) < w]])
    return np.sort(out[:n])


def _prompt_lengths(rng: np.random.Generator, n: int, cap: np.ndarray) -> np.ndarray:
    """Lognormal (median ~4k tokens) with a long tail, redrawn above each row's cap."""
    x = np.exp(rng.normal(8.3, 1.9, size=n)).astype(np.int64) + 16
    bad = x > cap
    while bad.any():
        x[bad] = np.exp(rng.normal(8.3, 1.9, size=int(bad.sum()))).astype(np.int64) + 16
        bad = x > cap
    return x


def accounts(rng: np.random.Generator, sim: Sim) -> tuple[np.ndarray, np.ndarray]:
    """Account names (the customers, then the researcher and the provider's test account) and the
    customers' Zipf-skewed share of the load."""
    n_acc = sim.accounts or max(50, min(5000, sim.requests // 40))
    names = np.append(_account_names(rng, n_acc), [RESEARCHER, PROVIDER_QA])
    zipf = 1.0 / np.arange(1, n_acc + 1) ** 1.1
    return names, zipf / zipf.sum()


def plan(sim: Sim) -> pa.Table:
    """Every request of the fleet, one row each, with what really happened to it."""
    rng = np.random.default_rng(sim.seed)
    names, zipf = accounts(rng, sim)
    special = special_rows(rng, len(zipf), zipf)
    n_base = max(0, sim.requests - len(special["ts_us"]))
    table = rows(sim, rng, n_base, SIM_START, SIM_END, names, zipf, special)
    _check_plan(table)
    return table


def rows(sim: Sim, rng: np.random.Generator, n_base: int, start: dt.datetime, end: dt.datetime,
          names: np.ndarray, zipf: np.ndarray, special: dict[str, np.ndarray], engine: bool = True) -> pa.Table:
    """n_base ordinary requests in [start, end) plus the given special rows, with their fate."""
    ts_dt = _diurnal_times(rng, n_base, start, end)    # epoch us
    launch_us, private_us, public_us = (int(x.timestamp() * 1e6) for x in (LAUNCH, PRIVATE_FROM, PUBLIC_AGAIN))
    window_end_us = int(WINDOW_END.timestamp() * 1e6)

    model_idx = rng.choice(3, size=n_base, p=[0.45, 0.30, 0.25])   # glm-5.3, air, qwen
    before_launch = ts_dt < launch_us
    model_idx[(model_idx == 0) & before_launch] = 2                 # no GLM-5.3 before launch
    private = (ts_dt >= private_us) & (ts_dt < public_us)
    model_idx[(model_idx == 0) & private] = 1                        # GLM-5.3 private: customers go elsewhere
    contexts = np.array([MODELS[m][1] for m in MODEL_NAMES])
    # Long-context models stop short of SGLang's own limit for a fixed pool (max_req_input_len): from
    # there on it refuses even a fixed pool, which this fleet does not model.
    cap = np.where(contexts[model_idx] == CONTEXT, LONG_CAP, contexts[model_idx] - 1)
    # GLM-5.3 inside the window: every prompt >= 681,274 was exposed, and exactly the 155 + 7 special rows
    # are; base traffic there stays below SGLang's limit.
    glm_in_window = (model_idx == 0) & (ts_dt <= window_end_us)
    cap = np.where(glm_in_window, ENGINE_LIMIT - 1, cap)
    prompt = _prompt_lengths(rng, n_base, cap)
    acct = rng.choice(len(zipf), size=n_base, p=zipf)

    cols = {
        "ts_us": np.concatenate([ts_dt, special["ts_us"]]),
        "model": np.concatenate([model_idx, special["model"]]),
        "account": np.concatenate([acct, special["account"]]),
        "prompt_tokens": np.concatenate([prompt, special["prompt_tokens"]]),
        "kind": np.concatenate([np.zeros(n_base, np.int64), special["kind"]]),
    }
    order = np.argsort(cols["ts_us"], kind="stable")
    cols = {k: v[order] for k, v in cols.items()}
    n = len(cols["ts_us"])
    kind, ts_us, model = cols["kind"], cols["ts_us"], cols["model"]

    completion = np.minimum(rng.geometric(1 / 400, size=n), 8192).astype(np.int64)
    status = np.full(n, 200, np.int64)
    status[kind == KINDS.index("reject-context")] = 400
    status[kind == KINDS.index("timeout-no-usage")] = 504
    completion[status != 200] = 0
    finish = np.where(completion >= 8192, 1, 0)            # 0 stop, 1 length, 2 abort
    finish[status != 200] = 2
    latency = 0.05 + cols["prompt_tokens"] / 25_000 + completion / 60.0
    latency[status == 504] = 300.0

    # PD nodes for GLM-5.3 requests that reached the engine; the qwen node for qwen requests.
    is_glm, is_qwen = model == 0, model == 2
    reaches = (status == 200) & (is_glm | is_qwen)
    node_names = np.array([f"glm53-prefill-{i}" for i in range(4)] + [f"glm53-decode-{i}" for i in range(3)]
                          + ["qwen3-coder-1m-0"])
    prefill = np.where(is_glm, rng.integers(0, 4, n), 7)
    decode = np.where(is_glm, 4 + rng.choice(3, n, p=[0.35, 0.35, 0.30]), 7)
    # exposure: GLM-5.3 on a prefill node whose pool at that time makes SGLang swap the prompt
    pool_now = np.full(n, POOL_FIXED)
    for i, node in enumerate(sim.nodes[:4]):
        fix_us = int(node.starts[-1][0].timestamp() * 1e6)
        pool_now[(prefill == i) & (ts_us < fix_us)] = POOL_BUG
    limit_now = max_req_input_len(CONTEXT, pool_now)
    exposed = is_glm & reaches & (cols["prompt_tokens"] >= limit_now)
    prefill_tokens = np.where(exposed, 1, cols["prompt_tokens"])

    def dictionary(idx: np.ndarray, values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        mask = None if valid is None else ~valid
        return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=mask), pa.array(values))

    table = pa.table({
        "request_id": _ulids(rng, ts_us // 1000),
        "ts": pa.array(ts_us, pa.timestamp("us", tz="UTC")),
        "latency_s": latency,
        "account_id": dictionary(cols["account"], names),
        "model": dictionary(model, MODEL_NAMES),
        "prompt_tokens": cols["prompt_tokens"].astype(np.int64),
        "completion_tokens": completion,
        "http_status": status,
        "finish_reason": dictionary(finish, np.array(["stop", "length", "abort"])),
        "prefill_node": dictionary(prefill, node_names, reaches),
        "decode_node": dictionary(decode, node_names, reaches),
        "prefill_tokens": pa.array(prefill_tokens, pa.int64(), mask=~reaches),
        "reaches_engine": reaches,
        "exposed": exposed,
        "kind": dictionary(kind, np.array(KINDS)),
    })
    if engine:
        table = table.append_column("prefill_rid", _hex_ids(rng, n)).append_column(
            "bootstrap_room", pa.array(rng.integers(1, 2**63 - 1, size=n, dtype=np.int64)).cast(pa.string()))
    return table


def special_rows(rng: np.random.Generator, n_customers: int, zipf: np.ndarray) -> dict[str, np.ndarray]:
    """The 155 exposed responses and the controls around them, placed by hand-written rules.
    Accounts are indices into accounts()'s names (the researcher and the provider come last)."""
    researcher, provider = n_customers, n_customers + 1
    rows: dict[str, list] = {"ts_us": [], "model": [], "account": [], "prompt_tokens": [], "kind": []}

    def add(n: int, start: dt.datetime, end: dt.datetime, model: str, account, lo: int, hi: int, kind: str):
        rows["ts_us"] += list(rng.integers(int(start.timestamp() * 1e6), int(end.timestamp() * 1e6), size=n))
        rows["model"] += [MODEL_NAMES.tolist().index(model)] * n
        rows["account"] += list(rng.choice(n_customers, size=n, p=zipf)) if account is None else [account] * n
        rows["prompt_tokens"] += list(rng.integers(lo, hi + 1, size=n))
        rows["kind"] += [KINDS.index(kind)] * n

    customers = N_AFFECTED - N_RESEARCHER - N_PROVIDER
    # customers' long prompts, 2026-08-27 .. 2026-09-09 13:00 (before the model went private)
    add(customers, LAUNCH + dt.timedelta(hours=1), t("2026-09-09T13:00:00"), GW_MODEL, None,
        POOL_BUG + 1, LONG_CAP, "affected")
    add(N_RESEARCHER, t("2026-09-08T09:00:00"), t("2026-09-08T15:30:00"), GW_MODEL, researcher,
        POOL_BUG + 1, LONG_CAP, "affected")
    add(N_PROVIDER, t("2026-09-09T13:30:00"), t("2026-09-09T14:30:00"), GW_MODEL, provider,
        700_000, 900_000, "affected")
    # between the engine limit and the pool: exposed, but counted only by the engine rule
    add(N_ENGINE_GAP, LAUNCH + dt.timedelta(hours=4), t("2026-09-09T13:00:00"), GW_MODEL, None,
        ENGINE_LIMIT, POOL_BUG, "engine-gap")
    # the researcher's short probes (control: same account, not affected)
    add(8, t("2026-09-08T09:00:00"), t("2026-09-08T15:30:00"), GW_MODEL, researcher, 1_000, 600_000, "probe-short")
    # internal tests while the model was private (short prompts)
    add(30, PRIVATE_FROM + dt.timedelta(minutes=1), PUBLIC_AGAIN - dt.timedelta(minutes=1), GW_MODEL, provider,
        500, 200_000, "internal")
    # prompts at or above the context: refused by the tokenizer with HTTP 400 (correct behaviour)
    add(12, LAUNCH + dt.timedelta(hours=2), t("2026-09-09T13:00:00"), GW_MODEL, None,
        CONTEXT, CONTEXT + 400_000, "reject-context")
    # gateway timeouts with no usage recorded (HTTP 504): length unknown, nothing served: triage counts them failed
    add(7, LAUNCH + dt.timedelta(hours=3), t("2026-09-09T13:00:00"), GW_MODEL, None, 1_000, LONG_CAP, "timeout-no-usage")
    # after the window: long prompts served correctly by the fixed prefill pool (not affected)
    add(20, PUBLIC_AGAIN + dt.timedelta(minutes=5), SIM_END - dt.timedelta(hours=1), GW_MODEL, None,
        ENGINE_LIMIT, LONG_CAP, "after-window-long")
    # another model with long prompts, served correctly throughout (control)
    add(40, SIM_START, SIM_END - dt.timedelta(hours=1), "@cf/qwen/qwen3-coder-1m", None,
        POOL_BUG + 1, LONG_CAP, "control-long")
    return {k: np.array(v, dtype=np.int64) for k, v in rows.items()}


def _check_plan(table: pa.Table) -> None:
    """The invariants every reference fleet must satisfy (a failed one is a bug in the simulator)."""
    exposed = table["exposed"]
    check_exposed(table.filter(exposed)["kind"].cast(pa.string()).to_pylist())


def check_exposed(kinds: list[str]) -> None:
    """Exactly the planned exposed responses: 155 over the pool, 7 between the engine limit and the pool."""
    got = {k: kinds.count(k) for k in set(kinds)}
    assert got == {"affected": N_AFFECTED, "engine-gap": N_ENGINE_GAP}, f"simulator exposed {got}"
