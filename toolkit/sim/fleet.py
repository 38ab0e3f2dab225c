"""`kvir simulate`: a synthetic fleet that reproduces the reference incident (DESIGN.md §1).

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

import datetime as dt
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kvir.rules.trigger import max_req_input_len

UTC = dt.timezone.utc
HOST_TZ = "America/Chicago"     # every engine host logs in this zone (naive local time)
CONTEXT = 1_048_576
POOL_BUG = 681_280
POOL_FIXED = 2_042_880          # ~2 x context, a multiple of the 64-token page (GLM-5.2's config)
PAGE = 64
ENGINE_LIMIT = max_req_input_len(CONTEXT, POOL_BUG)       # 681,274
LONG_CAP = max_req_input_len(CONTEXT, POOL_FIXED) - 1      # 1,048,569: longest prompt any fixed node serves
N_AFFECTED = 155                # exposed responses the public rule (> pool) counts
N_ENGINE_GAP = 7                # exposed responses between the engine limit and the pool: the engine rule only
N_RESEARCHER = 6                # of the 155: the reporting researcher's probes on 2026-09-08
N_PROVIDER = 4                  # of the 155: the provider's reproduction on 2026-09-09
GW_MODEL = "@cf/zai-org/glm-5.3"
ENGINE_MODEL = "zai-org/GLM-5.3"
RESEARCHER = "acct-5e1c0b7f"
PROVIDER_QA = "acct-provider-qa"


def t(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s).replace(tzinfo=UTC)


SIM_START = t("2026-08-20T00:00:00")
SIM_END = t("2026-09-16T00:00:00")
LAUNCH = t("2026-08-27T00:00:00")          # GLM-5.3 goes live
WINDOW_START = LAUNCH
WINDOW_END = t("2026-09-09T19:40:00")
DECLARED = t("2026-09-09T13:22:00")
PRIVATE_FROM = t("2026-09-09T14:00:00")
PUBLIC_AGAIN = t("2026-09-09T19:40:00")
REPORT_RECEIVED = t("2026-09-08T16:05:00")


@dataclass(frozen=True)
class Node:
    name: str
    role: str                   # prefill | decode | mixed
    deployment: str
    pool: int
    context: int
    served_model: str
    model_path: str
    request_log: str            # json | text
    starts: tuple[tuple[dt.datetime, int], ...]   # (start time UTC, pool) for every (re)start
    version: str = "0.5.19"
    tp: int = 8

    def pool_at(self, ts: dt.datetime) -> int:
        pool = self.starts[0][1]
        for start, p in self.starts:
            if start <= ts:
                pool = p
        return pool


def fleet() -> list[Node]:
    boot = t("2026-08-26T22:10:00")
    fixes = [t("2026-09-09T14:38:00"), t("2026-09-09T14:43:00"), t("2026-09-09T14:47:00"), t("2026-09-09T14:52:00")]
    nodes = []
    for i, fix in enumerate(fixes):
        nodes.append(Node(f"glm53-prefill-{i}", "prefill", "glm53-pd", POOL_BUG, CONTEXT, ENGINE_MODEL,
                          "zai-org/GLM-5.3-FP8", "json" if i < 2 else "text",
                          ((boot + dt.timedelta(minutes=i), POOL_BUG), (fix, POOL_FIXED))))
    decode_pools = [1_310_720, 1_310_720, 2_097_152]   # decode-2 has the larger pool
    for i, pool in enumerate(decode_pools):
        nodes.append(Node(f"glm53-decode-{i}", "decode", "glm53-pd", pool, CONTEXT, ENGINE_MODEL,
                          "zai-org/GLM-5.3-FP8", "json" if i == 0 else "text",
                          ((boot + dt.timedelta(minutes=5 + i), pool),)))
    nodes.append(Node("qwen3-coder-1m-0", "mixed", "qwen-1m", 2_359_296, CONTEXT, "Qwen/Qwen3-Coder-1M",
                      "Qwen/Qwen3-Coder-1M", "text", ((t("2026-08-19T08:00:00"), 2_359_296),), version="0.5.19"))
    return nodes


# Gateway names -> engine deployments. glm-5.3-air is a different model (served by another provider
# backend: gateway logs only).
MODELS = {
    GW_MODEL: ("glm53-pd", CONTEXT),
    "@cf/zai-org/glm-5.3-air": (None, 131_072),
    "@cf/qwen/qwen3-coder-1m": ("qwen-1m", CONTEXT),
}
MODEL_NAMES = np.array(list(MODELS))
KINDS = ["base", "affected", "probe-short", "internal", "reject-context", "undecidable", "after-window-long",
         "control-long", "engine-gap"]


@dataclass
class Sim:
    out: Path
    requests: int
    seed: int
    fmt: str = "native"
    accounts: int = 0
    nodes: list[Node] = field(default_factory=fleet)


# ----------------------------------------------------------------------------------------------- plan

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


def _accounts(rng: np.random.Generator, sim: Sim) -> tuple[np.ndarray, np.ndarray]:
    """Account names (the customers, then the researcher and the provider's test account) and the
    customers' Zipf-skewed share of the load."""
    n_acc = sim.accounts or max(50, min(5000, sim.requests // 40))
    names = np.append(_account_names(rng, n_acc), [RESEARCHER, PROVIDER_QA])
    zipf = 1.0 / np.arange(1, n_acc + 1) ** 1.1
    return names, zipf / zipf.sum()


def plan(sim: Sim) -> pa.Table:
    """Every request of the fleet, one row each, with what really happened to it."""
    rng = np.random.default_rng(sim.seed)
    names, zipf = _accounts(rng, sim)
    special = _special_rows(rng, len(zipf), zipf)
    n_base = max(0, sim.requests - len(special["ts_us"]))
    table = _rows(sim, rng, n_base, SIM_START, SIM_END, names, zipf, special)
    _check_plan(table)
    return table


def _rows(sim: Sim, rng: np.random.Generator, n_base: int, start: dt.datetime, end: dt.datetime,
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
    status[kind == KINDS.index("undecidable")] = 504
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


def _special_rows(rng: np.random.Generator, n_customers: int, zipf: np.ndarray) -> dict[str, np.ndarray]:
    """The 155 exposed responses and the controls around them, placed by hand-written rules.
    Accounts are indices into _accounts()'s names (the researcher and the provider come last)."""
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
    # gateway timeouts with no usage recorded: undecidable
    add(7, LAUNCH + dt.timedelta(hours=3), t("2026-09-09T13:00:00"), GW_MODEL, None, 1_000, LONG_CAP, "undecidable")
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


# --------------------------------------------------------------------------------------------- writers

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
        _write_gateway(con, sim)
        _write_engine(con, sim)
        truth = _truth_from_table(con)
        con.close()
    _write_ground_truth(sim, truth)
    _write_inventory(sim)
    _write_incident(sim)
    return sim.out


def _write_gateway(con: duckdb.DuckDBPyConnection, sim: Sim, per_page: int = 1000) -> None:
    """Cloudflare AI Gateway REST pages: {"result": [...], "result_info": {...}, "success": true}."""
    gw = sim.out / "gateway"
    gw.mkdir(parents=True)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE gw AS
        SELECT row_number() OVER (ORDER BY ts, request_id) - 1 AS i, strftime(ts, '%Y-%m-%d') AS day,
            json_object(
                'id', request_id,
                'created_at', strftime(ts, '%Y-%m-%dT%H:%M:%S.') || lpad(CAST(millisecond(ts) % 1000 AS VARCHAR), 3, '0') || 'Z',
                'provider', 'workers-ai',
                'model', model,
                'model_type', 'Text Generation',
                'path', 'workers-ai/v1/chat/completions',
                'success', http_status = 200,
                'status_code', http_status,
                'cached', false,
                'tokens_in', CASE WHEN kind = 'undecidable' THEN NULL ELSE prompt_tokens END,
                'tokens_out', completion_tokens,
                'cost', round(prompt_tokens * 1e-7 + completion_tokens * 4e-7, 6),
                'duration', CAST(round(latency_s * 1000) AS BIGINT),
                'metadata', json_object('customer_id', account_id)::VARCHAR,
                'request_type', 'universal'
            )::VARCHAR AS rec
        FROM fleet""")
    pages = con.execute("SELECT day, min(i), max(i) FROM gw GROUP BY day ORDER BY day").fetchall()
    for day, lo, hi in pages:            # one file per page: a loop over pages, not rows
        for k, start in enumerate(range(lo, hi + 1, per_page), 1):
            end = min(start + per_page - 1, hi)
            path = gw / f"logs-{day}-p{k:03d}.json"
            con.execute("""
                COPY (SELECT '{"result":[' || string_agg(rec, ',' ORDER BY i) || '],"result_info":{"count":'
                             || count(*) || ',"page":' || $page || ',"per_page":' || $per_page
                             || ',"total_count":' || $total || '},"success":true,"errors":[],"messages":[]}'
                      FROM gw WHERE i BETWEEN $lo AND $hi)
                TO $path (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x1f')""",
                        {"page": k, "per_page": per_page, "total": hi - lo + 1, "lo": start, "hi": end,
                         "path": str(path)})


def _local(expr: str) -> str:
    return f"timezone('{HOST_TZ}', {expr})"


def _write_engine(con: duckdb.DuckDBPyConnection, sim: Sim) -> None:
    """Per node: server.log (start-up, text request lines, ERROR lines) and, on JSON nodes, requests.jsonl."""
    eng = sim.out / "engine"
    # One row per engine-side record: each GLM-5.3 request has a prefill and a decode record (their own
    # rids, one bootstrap_room); the qwen node is one mixed record. The decode rid is the gateway id
    # (the provider's edge passes it on), the prefill rid its own uuid4 hex.
    con.execute("""
        CREATE OR REPLACE TEMP TABLE engine_records AS
        WITH base AS (
            SELECT *, ts + to_microseconds(50000) AS arrive,
                   ts + to_microseconds(CAST(round(latency_s * 1e6) AS BIGINT)) AS finish
            FROM fleet WHERE reaches_engine
        )
        SELECT prefill_node AS node, 'prefill' AS side, prefill_rid AS rid, bootstrap_room AS room,
               arrive AS recv, arrive + to_microseconds(CAST(round((0.02 + prompt_tokens / 25000.0) * 1e6) AS BIGINT)) AS fin,
               prefill_tokens AS prompt_tokens, CASE WHEN exposed THEN 0 ELSE 1 END AS completion_tokens,
               'length' AS ftype, CASE WHEN exposed THEN 0 ELSE 1 END AS flen, exposed, prompt_tokens AS orig_tokens
        FROM base WHERE prefill_node <> decode_node
        UNION ALL
        SELECT decode_node, CASE WHEN prefill_node = decode_node THEN 'mixed' ELSE 'decode' END, request_id,
               CASE WHEN prefill_node = decode_node THEN NULL ELSE bootstrap_room END,
               arrive, finish, prompt_tokens, completion_tokens, finish_reason,
               completion_tokens, exposed, prompt_tokens
        FROM base""")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE engine_lines AS
        SELECT node, recv AS ts, 1 AS seq,
            printf('{{"timestamp": "%s", "event": "request.received", "rid": "%s", "obj": {{"rid": "%s", "stream": true%s}}}}',
                   {_iso_local('recv')}, rid, rid, {_room_json('room')}) AS json_line,
            printf('[%s] Receive: obj=GenerateReqInput(rid=''%s'', stream=True, return_logprob=False%s)',
                   strftime({_local('recv')}, '%Y-%m-%d %H:%M:%S'), rid, {_room_repr('room')}) AS text_line
        FROM engine_records
        UNION ALL
        SELECT node, fin, 2,
            printf('{{"timestamp": "%s", "event": "request.finished", "rid": "%s", "obj": {{"rid": "%s", "stream": true%s}}, "out": {{"meta_info": {{"id": "%s", "finish_reason": {{"type": "%s", "%s": %d}}, "prompt_tokens": %d, "weight_version": "default", "completion_tokens": %d, "cached_tokens": 0, "e2e_latency": %s}}}}}}',
                   {_iso_local('fin')}, rid, rid, {_room_json('room')}, rid, ftype,
                   CASE WHEN ftype = 'stop' THEN 'matched' ELSE 'length' END, CASE WHEN ftype = 'stop' THEN 154820 ELSE flen END,
                   prompt_tokens, completion_tokens, {_latency('recv', 'fin')}),
            printf('[%s] Finish: obj=GenerateReqInput(rid=''%s'', stream=True, return_logprob=False%s), out={{''meta_info'': {{''id'': ''%s'', ''finish_reason'': {{''type'': ''%s'', ''%s'': %d}}, ''prompt_tokens'': %d, ''weight_version'': ''default'', ''completion_tokens'': %d, ''cached_tokens'': 0, ''e2e_latency'': %s}}}}',
                   strftime({_local('fin')}, '%Y-%m-%d %H:%M:%S'), rid, {_room_repr('room')}, rid, ftype,
                   CASE WHEN ftype = 'stop' THEN 'matched' ELSE 'length' END, CASE WHEN ftype = 'stop' THEN 154820 ELSE flen END,
                   prompt_tokens, completion_tokens, {_latency('recv', 'fin')})
        FROM engine_records
        UNION ALL
        -- the scheduler's ERROR when a prompt does not fit (Req.set_finish_with_abort logs it on TP0)
        SELECT node, recv + to_microseconds(3000), 0, NULL,
            printf('[%s TP0] Input length (%d tokens) exceeds the maximum allowed length (%d tokens). Use a shorter input or enable --allow-auto-truncate., self.rid=''%s''',
                   strftime({_local('recv + to_microseconds(3000)')}, '%Y-%m-%d %H:%M:%S'), orig_tokens, {ENGINE_LIMIT}, rid)
        FROM engine_records WHERE side = 'prefill' AND exposed""")
    for node in sim.nodes:
        d = eng / node.name
        d.mkdir(parents=True)
        starts = [s for s, _ in node.starts]
        # server.log: start-up blocks placed at their times, then text request lines (text nodes) and
        # ERROR lines in time order.
        con.execute("""
            CREATE OR REPLACE TEMP TABLE server AS
            SELECT ts, seq, line FROM (
                SELECT ts, seq, text_line AS line FROM engine_lines
                WHERE node = $node AND (text_line IS NOT NULL) AND ($text OR seq = 0)
            )""", {"node": node.name, "text": node.request_log == "text"})
        _write_server_log(con, d / "server.log", node, starts)
        if node.request_log == "json":
            con.execute(
                "COPY (SELECT json_line FROM engine_lines WHERE node = $node AND json_line IS NOT NULL ORDER BY ts, seq) "
                "TO $path (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x1f')",
                {"node": node.name, "path": str(d / "requests.jsonl")})


def _write_server_log(con: duckdb.DuckDBPyConnection, path: Path, node: Node, starts: list[dt.datetime]) -> None:
    from kvir.sim.logs import startup_block

    # start-up lines of the i-th start sort just after that start's time
    rows = []
    for i, st in enumerate(starts):
        for k, line in enumerate(startup_block(node, i).split("\n")):
            rows.append((st, k, line))
    con.execute("CREATE OR REPLACE TEMP TABLE boot (ts TIMESTAMPTZ, seq INTEGER, line VARCHAR)")
    con.executemany("INSERT INTO boot VALUES (?, ?, ?)", rows)   # a few dozen lines per node
    con.execute("""COPY (SELECT line FROM (SELECT ts, -1000 + seq AS seq, line FROM boot
                                          UNION ALL SELECT ts, seq, line FROM server) ORDER BY ts, seq)
                   TO $path (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x1f')""", {"path": str(path)})


def _iso_local(col: str) -> str:
    """Python's datetime.isoformat() of host-local time: microseconds only when non-zero."""
    loc = _local(col)
    return (f"CASE WHEN microsecond({loc}) % 1000000 = 0 THEN strftime({loc}, '%Y-%m-%dT%H:%M:%S') "
            f"ELSE strftime({loc}, '%Y-%m-%dT%H:%M:%S.%f') END")


def _room_json(col: str) -> str:
    return f"CASE WHEN {col} IS NULL THEN '' ELSE ', \"bootstrap_host\": \"10.20.0.11\", \"bootstrap_port\": 8998, \"bootstrap_room\": ' || {col} END"


def _room_repr(col: str) -> str:
    return f"CASE WHEN {col} IS NULL THEN '' ELSE ', bootstrap_host=''10.20.0.11'', bootstrap_port=8998, bootstrap_room=' || {col} END"


def _latency(a: str, b: str) -> str:
    return f"CAST(round(epoch({b}) - epoch({a}), 6) AS VARCHAR)"


# ------------------------------------------------------------------------------------------ truth, spec

def _truth_from_table(con: duckdb.DuckDBPyConnection) -> dict:
    """The simulator's own record of what happened (from its plan, not from any kvir query)."""
    affected = con.sql("""
        SELECT request_id, ts, account_id::VARCHAR AS account_id, model::VARCHAR AS model, prompt_tokens,
               prefill_node::VARCHAR AS prefill_node, decode_node::VARCHAR AS decode_node, kind::VARCHAR AS kind
        FROM fleet WHERE exposed ORDER BY ts, request_id""").to_arrow_table()   # public and engine-only
    kinds = dict(con.execute("SELECT kind::VARCHAR, count(*) FROM fleet GROUP BY 1").fetchall())
    return {"affected": affected, "kinds": kinds,
            "total": con.execute("SELECT count(*) FROM fleet").fetchone()[0]}


def _write_ground_truth(sim: Sim, truth: dict) -> None:
    gt = sim.out / "ground_truth"
    gt.mkdir(parents=True, exist_ok=True)
    exposed = truth["affected"].to_pandas()
    over_pool = exposed["prompt_tokens"] > POOL_BUG
    # affected.parquet: what the public rule must find; engine_only.parquet: what only the engine rule adds
    pq.write_table(truth["affected"].filter(pa.array(over_pool.to_numpy())), gt / "affected.parquet")
    pq.write_table(truth["affected"].filter(pa.array((~over_pool).to_numpy())), gt / "engine_only.parquet")
    aff = exposed[over_pool]
    per_account = aff.groupby("account_id").size().sort_values(ascending=False)
    per_account.rename("affected").to_csv(gt / "accounts.csv")
    per_account_engine = exposed.groupby("account_id").size().sort_values(ascending=False)
    summary = {
        "requests": int(truth["total"]),
        "affected": int(len(aff)),
        "affected_engine_rule": int(len(exposed)),
        "engine_only": int((~over_pool).sum()),
        "affected_accounts": int(aff["account_id"].nunique()),
        "per_account": {k: int(v) for k, v in per_account.items()},
        "per_account_engine_rule": {k: int(v) for k, v in per_account_engine.items()},
        "researcher_account": RESEARCHER, "researcher_affected": int((aff["account_id"] == RESEARCHER).sum()),
        "provider_account": PROVIDER_QA, "provider_affected": int((aff["account_id"] == PROVIDER_QA).sum()),
        "rejected_context": int(truth["kinds"].get("reject-context", 0)),
        "undecidable": int(truth["kinds"].get("undecidable", 0)),
        "after_window_long": int(truth["kinds"].get("after-window-long", 0)),
        "control_long": int(truth["kinds"].get("control-long", 0)),
        "first_affected": aff["ts"].min().isoformat(), "last_affected": aff["ts"].max().isoformat(),
        "first_exposed": exposed["ts"].min().isoformat(), "last_exposed": exposed["ts"].max().isoformat(),
        "prefill_fixed_at": {n.name: n.starts[-1][0].isoformat() for n in sim.nodes if n.role == "prefill"},
        "engine_limit": ENGINE_LIMIT, "format": sim.fmt, "seed": sim.seed,
        "note": "Written by kvir simulate from its own plan; kvir never reads this folder except in tests.",
    }
    (gt / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _write_inventory(sim: Sim) -> None:
    lines = ["# inventory.toml: which node each log file belongs to, and what the logs cannot say.", ""]
    for n in sim.nodes:
        logs = [f"engine/{n.name}/server.log"] + ([f"engine/{n.name}/requests.jsonl"] if n.request_log == "json" else [])
        lines += ["[[node]]", f'name = "{n.name}"', f'role = "{n.role}"', f'deployment = "{n.deployment}"',
                  'engine = "sglang"', f'version = "{n.version}"', f'source_tz = "{HOST_TZ}"',
                  "logs = [" + ", ".join(f'"{x}"' for x in logs) + "]", ""]
    (sim.out / "inventory.toml").write_text("\n".join(lines))


def _write_incident(sim: Sim) -> None:
    if sim.fmt == "parquet":
        sources = '''[[sources]]
path = "requests"
format = "generic-parquet"
'''
    else:
        sources = f'''[[sources]]
path = "gateway/*.json"
format = "cloudflare-gateway"

[[sources]]                       # JSON request logs hold no server_args= line: say what they serve
path = "engine/glm53-*/requests.jsonl"
format = "sglang-json"
source_tz = "{HOST_TZ}"
served_model = "{ENGINE_MODEL}"

[[sources]]
path = "engine/*/server.log"
format = "sglang-text"
source_tz = "{HOST_TZ}"
'''
    text = f'''# incident.toml for the simulated reference fleet (kvir simulate; see DESIGN.md §1).
[incident]
id = "KVIR-2026-0001"
title = "Cross-tenant KV cache exposure on GLM-5.3"
models = ["{GW_MODEL}", "{ENGINE_MODEL}"]
window_start = {WINDOW_START.strftime("%Y-%m-%dT%H:%M:%SZ")}
window_end = {WINDOW_END.strftime("%Y-%m-%dT%H:%M:%SZ")}
awareness_time = {DECLARED.strftime("%Y-%m-%dT%H:%M:%SZ")}

[trigger]
pool_tokens = {POOL_BUG}
context_tokens = {CONTEXT}
rule = "public"

[disclosure]
provider = "Example Inference Co. (simulated)"
provider_namespace = "https://inference.example.com"
contact = "security@inference.example.com"
dpo_contact = "dpo@inference.example.com"
reporter = "A. Researcher (simulated)"
reporter_channel = "a bug-bounty platform"
reported_at = {REPORT_RECEIVED.strftime("%Y-%m-%dT%H:%M:%SZ")}
lead_supervisory_authority = "the lead supervisory authority (simulated)"
cna_org_id = "00000000-0000-4000-8000-000000000000"
fixed_version = "0.5.22"
fixed_release_date = "2026-10-19"
csaf_base_url = "https://inference.example.com/.well-known/csaf/amber/"
cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"

[[accounts]]
id = "{RESEARCHER}"
label = "reporting researcher"
reason = "bug-bounty reproduction reported 2026-09-08"

[[accounts]]
id = "{PROVIDER_QA}"
label = "provider tests"
reason = "the provider's own reproduction and verification traffic"

[[events]]
ts = {REPORT_RECEIVED.strftime("%Y-%m-%dT%H:%M:%SZ")}
title = "Report received from a security researcher via the bug-bounty platform"
actor = "researcher"
category = "detection"

[[events]]
ts = 2026-09-09T13:22:00Z
title = "Incident declared"
actor = "provider"
category = "escalation"

[[events]]
ts = 2026-09-09T14:00:00Z
title = "Model made private"
actor = "provider"
category = "mitigation"

[[events]]
ts = 2026-09-09T14:35:00Z
title = "Root cause found"
actor = "provider"
category = "confirmation"

[[events]]
ts = 2026-09-09T14:52:00Z
title = "All prefill nodes on the fixed configuration"
actor = "provider"
category = "mitigation"

[[events]]
ts = 2026-09-09T19:40:00Z
title = "Model public again"
actor = "provider"
category = "mitigation"

{sources}'''
    (sim.out / "incident.toml").write_text(text)
