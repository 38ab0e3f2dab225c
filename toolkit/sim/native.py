"""The fleet's logs as the real software writes them ("native" format): Cloudflare AI Gateway REST pages, and
per engine node the SGLang server output (start-up lines of every (re)start, text request-log lines, the
scheduler's rejection lines) and, on JSON nodes, the request log (`[YYYY-MM-DD HH:MM:SS] {...}`). Written
by DuckDB from the plan (formatting and COPY), a loop over pages and nodes only."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from kvir.sim.world import ENGINE_LIMIT, HOST_TZ, Node, Sim

def write_gateway(con: duckdb.DuckDBPyConnection, sim: Sim, per_page: int = 1000) -> None:
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
                'tokens_in', CASE WHEN kind = 'timeout-no-usage' THEN NULL ELSE prompt_tokens END,
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


def write_engine(con: duckdb.DuckDBPyConnection, sim: Sim) -> None:
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
            -- the request log's handler writes `[YYYY-MM-DD HH:MM:SS] ` before each record (0.5.12+)
            printf('[%s] {{"timestamp": "%s", "event": "request.received", "rid": "%s", "obj": {{"rid": "%s", "stream": true%s}}}}',
                   strftime({_local('recv')}, '%Y-%m-%d %H:%M:%S'), {_iso_local('recv')}, rid, rid, {_room_json('room')}) AS json_line,
            printf('[%s] Receive: obj=GenerateReqInput(rid=''%s'', stream=True, return_logprob=False%s)',
                   strftime({_local('recv')}, '%Y-%m-%d %H:%M:%S'), rid, {_room_repr('room')}) AS text_line
        FROM engine_records
        UNION ALL
        SELECT node, fin, 2,
            printf('[%s] {{"timestamp": "%s", "event": "request.finished", "rid": "%s", "obj": {{"rid": "%s", "stream": true%s}}, "out": {{"meta_info": {{"id": "%s", "finish_reason": {{"type": "%s", "%s": %d}}, "prompt_tokens": %d, "weight_version": "default", "completion_tokens": %d, "cached_tokens": 0, "e2e_latency": %s}}}}}}',
                   strftime({_local('fin')}, '%Y-%m-%d %H:%M:%S'), {_iso_local('fin')}, rid, rid, {_room_json('room')}, rid, ftype,
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



def truth_from_table(con: duckdb.DuckDBPyConnection) -> dict:
    """The simulator's own record of what happened (from its plan, not from any kvir query)."""
    affected = con.sql("""
        SELECT request_id, ts, account_id::VARCHAR AS account_id, model::VARCHAR AS model, prompt_tokens,
               prefill_node::VARCHAR AS prefill_node, decode_node::VARCHAR AS decode_node, kind::VARCHAR AS kind
        FROM fleet WHERE exposed ORDER BY ts, request_id""").to_arrow_table()   # public and engine-only
    kinds = dict(con.execute("SELECT kind::VARCHAR, count(*) FROM fleet GROUP BY 1").fetchall())
    return {"affected": affected, "kinds": kinds,
            "total": con.execute("SELECT count(*) FROM fleet").fetchone()[0]}
