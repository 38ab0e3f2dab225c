"""Benchmark inputs for benchmarks/volume_bench.py, written once by DuckDB and cached under --data.

    sglang_log(path, requests, prefixed)   one SGLang JSON request log of one node: a `request.received`
        and a `request.finished` line per request (2 lines per request), naive UTC ISO timestamps
        (SGLang writes datetime.now().isoformat()), ~350 bytes a line. prefixed=True writes the shape of
        SGLang's real request logger, `[YYYY-MM-DD HH:MM:SS] ` before each JSON object (the logging
        formatter's time, to the second); prefixed=False the bare JSON line.
    gateway_pages(folder, files)           a paged Cloudflare AI Gateway export: one file per record,
        each one NDJSON line (id, created_at, model, status_code, tokens_in/out, metadata as a JSON string)

Known answer (both generators): a request is over the pool (prompt > 681,280) when r % 1000 == 7 (none
within 10 minutes of the window's end), served
("length") unless r % 7000 == 7 (an abort, 400), inside the window 2026-08-27 .. 2026-09-09 19:40 UTC for
the first ~45 % of the requests (the log spans a month). volume_bench checks kvir and the baseline agree.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

# Request r: t0 = start (UTC, naive), lat = e2e latency (s); the finished line's timestamp is t0 + lat.
_REQ = """
SELECT r,
    TIMESTAMP '2026-08-27 00:00:00' + to_microseconds(CAST(r * $step_us AS BIGINT)) AS t0,
    'req-' || lpad(CAST(r AS VARCHAR), 9, '0') || '-' || substr(md5(CAST(r AS VARCHAR)), 1, 8) AS rid,
    -- over the pool: one request in 1000, none within 10 minutes of the window's end (where its start and
    -- its finish would fall on different sides, and a baseline that reads only the finish would differ)
    CASE WHEN r % 1000 = 7 AND abs(epoch(TIMESTAMP '2026-08-27 00:00:00' + to_microseconds(CAST(r * $step_us AS BIGINT)))
                                   - epoch(TIMESTAMP '2026-09-09 19:40:00')) > 600
         THEN 681281 + CAST(hash(r) % 300000 AS BIGINT)
         ELSE 1 + CAST(hash(r * 31) % 600000 AS BIGINT) END AS prompt,
    CAST(hash(r * 7) % 2000 AS BIGINT) AS ntok,
    round((hash(r * 13) % 300000) / 1000.0, 3) AS lat,
    r % 7000 = 7 AS aborted
FROM range($n) AS q(r)
"""

_LINE = r"""
SELECT CASE WHEN $prefixed THEN '[' || strftime(ts, '%Y-%m-%d %H:%M:%S') || '] ' ELSE '' END || body AS line
FROM (
    SELECT r, k, CASE WHEN k = 0 THEN t0 ELSE t0 + to_microseconds(CAST(lat * 1e6 AS BIGINT)) END AS ts,
        '{"timestamp": "' || strftime(CASE WHEN k = 0 THEN t0 ELSE t0 + to_microseconds(CAST(lat * 1e6 AS BIGINT)) END,
                                      '%Y-%m-%dT%H:%M:%S.%f') ||
        '", "event": "request.' || CASE WHEN k = 0 THEN 'received' ELSE 'finished' END || '", "rid": "' || rid ||
        '", "obj": {"rid": "' || rid || '", "stream": true, "sampling_params": {"max_new_tokens": 8192, ' ||
        '"temperature": 0.7}, "bootstrap_host": null, "bootstrap_room": null}' ||
        CASE WHEN k = 0 THEN '}' ELSE
            ', "out": {"meta_info": {"id": "' || rid || '", "finish_reason": ' ||
            CASE WHEN aborted THEN '{"type": "abort", "message": "Input length exceeds the limit", "status_code": 400, "err_type": "BadRequestError"}'
                 ELSE '{"type": "length", "length": ' || ntok || '}' END ||
            ', "prompt_tokens": ' || prompt || ', "completion_tokens": ' || CASE WHEN aborted THEN 0 ELSE ntok END ||
            ', "cached_tokens": 0, "e2e_latency": ' || lat || '}}}' END AS body
    FROM req, range(2) AS kk(k)
) ORDER BY r, k
"""

WINDOW = ("2026-08-27 00:00:00", "2026-09-09 19:40:00")   # UTC, inclusive (the reference incident's)
MONTH_US = 30 * 86400 * 10**6


def sglang_log(path: Path, requests: int, prefixed: bool) -> Path:
    """Write (once) the log of `requests` requests; returns its path."""
    done = path.with_name(path.name + ".done")
    if done.exists() and path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("CREATE TEMP TABLE req AS " + _REQ, {"n": requests, "step_us": MONTH_US / max(requests, 1)})
    tmp = path.with_name(path.name + ".tmp")
    con.execute(f"COPY ({_LINE}) TO '{tmp}' (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')",
                {"prefixed": prefixed})
    con.close()
    tmp.rename(path)
    done.write_text(json.dumps({"requests": requests, "prefixed": prefixed}))
    return path


def sglang_expected(requests: int) -> int:
    """Affected responses in sglang_log (public rule, window, served), computed the same way in SQL."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    n = con.execute(
        "WITH req AS (" + _REQ + ") SELECT count(*) FROM req WHERE prompt > 681280 AND NOT aborted "
        "AND t0 BETWEEN CAST($lo AS TIMESTAMP) AND CAST($hi AS TIMESTAMP)",
        {"n": requests, "step_us": MONTH_US / max(requests, 1), "lo": WINDOW[0], "hi": WINDOW[1]}).fetchone()[0]
    con.close()
    return int(n)


def gateway_pages(folder: Path, files: int) -> Path:
    """Write (once) `files` one-record Cloudflare AI Gateway NDJSON files: page-000001.jsonl, ..."""
    done = folder / ".done"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    span = 13 * 86400   # inside the window
    for i in range(files):
        rec = {"id": f"01J{i:023d}", "created_at": f"2026-08-27T00:00:00Z", "model": "@cf/zai-org/glm-5.3",
               "provider": "workers-ai", "status_code": 200, "success": True,
               "tokens_in": 681281 + i if i % 100 == 7 else 1000 + i, "tokens_out": 12, "duration": 812,
               "cached": False, "metadata": json.dumps({"customer_id": f"cust-{i % 997}"})}
        secs = i * span // max(files, 1)
        rec["created_at"] = f"2026-08-{27 + secs // 86400:02d}T{secs % 86400 // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}Z" \
            if 27 + secs // 86400 <= 31 else \
            f"2026-09-{secs // 86400 - 4:02d}T{secs % 86400 // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}Z"
        (folder / f"page-{i:06d}.jsonl").write_text(json.dumps(rec) + "\n")
    done.write_text(str(files))
    return folder


def gateway_expected(files: int) -> int:
    return sum(1 for i in range(files) if i % 100 == 7)
