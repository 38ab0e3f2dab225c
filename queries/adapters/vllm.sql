-- vllm: the vLLM API-server log (RequestLogger lines and uvicorn access lines) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered text lines: source_id, line_no, line, line_bytes), __settings__ (one row per source_id: its settings)
--
-- Prefix `[(APIServer pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:NN] message` (older: `file.py:NN] message`):
-- host-local time, second resolution and NO YEAR: the year is --year / [[sources]] year, else the one that
-- puts the stamp in or nearest the incident window (kvir_yearless_ts); ambiguous or invalid dates are
-- quarantined. Messages read:
--   Received request <id>: params: SamplingParams(...) ...        a request (arrival time; no length)
--   Generated response <id>[ (streaming complete)]: ..., finish_reason: stop    its finish (served)
--   Aborted request <id>.                                          the client went away
--   Request <id> was rejected ...                                  rejected (full waiting queue)
-- `Generated response <id> (streaming delta)` lines, DEBUG prompt previews (truncated by --max-log-len:
-- never a length) and every other line are counted, not requests. uvicorn access lines
-- (`INFO:     ip:port - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request`) carry no time and no
-- request id: counted per method, path and status in the reason (how many 400s a node returned).
-- No prompt length at INFO: these are candidates, joined to a source with counts by id or time.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?(INFO|WARNING|DEBUG|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)? (?:\[[^\]]*\]|\S+\]) ?(.*)$',
                       ['level', 'stamp', 'msg']) AS p,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?INFO:\s+\S+ - "([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3})',
                       ['method', 'path', 'status']) AS acc
    FROM __input__ AS i
),
events AS (
    SELECT p.*,
        CASE WHEN p.p.msg ~ '^Received request \S+' THEN 'received'
             WHEN p.p.msg ~ '^Generated response \S+ \(streaming delta\)' THEN 'delta'
             WHEN p.p.msg ~ '^Generated response \S+' THEN 'generated'
             WHEN p.p.msg ~ '^Aborted request \S+' THEN 'aborted'
             WHEN p.p.msg ~ '^Request \S+ was rejected' THEN 'rejected'
             WHEN p.p.msg ~ '^Request \S+ details:' THEN 'preview' END AS event,
        nullif(regexp_extract(p.p.msg, '^(?:Received request|Generated response|Aborted request|Request) ([^\s:]+?)[:.]?(?:\s|$)', 1), '') AS rid,
        nullif(regexp_extract(p.p.msg, 'finish_reason: ([A-Za-z_]+)', 1), '') AS freason
    FROM parsed AS p
),
timed AS (
    SELECT e.*,
        kvir_yearless_ts(nullif(e.p.stamp, ''), s.year, s.window_start, s.window_end) AS local_ts,
        s.tz_iana, s.tz_offset_min, s.year, s.window_start, s.window_end, s.max_line_bytes
    FROM events AS e JOIN __settings__ AS s ON s.source_id = e.source_id
),
converted AS (
    SELECT t.*, kvir_local_to_utc(t.local_ts, t.tz_iana, t.tz_offset_min) AS ts0
    FROM timed AS t
),
judged AS (
    SELECT c.*,
        CASE
            WHEN c.line_bytes > c.max_line_bytes THEN 'bad'
            WHEN trim(c.text) = '' THEN 'skip'
            WHEN c.event IS NULL OR c.event IN ('delta', 'preview') THEN 'skip'
            WHEN c.rid IS NULL OR c.ts0 IS NULL OR NOT kvir_in_range(c.ts0) THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN c.line_bytes > c.max_line_bytes THEN 'line longer than ' || c.max_line_bytes || ' bytes'
            WHEN trim(c.text) = '' THEN 'blank line'
            WHEN c.acc.status <> '' THEN 'access line without time or request id: ' || c.acc.method || ' '
                 || left(split_part(c.acc.path, '?', 1), 60) || ' ' || c.acc.status
            WHEN c.event = 'delta' THEN 'streaming delta (not a request)'
            WHEN c.event = 'preview' THEN 'prompt preview (truncated by --max-log-len: not a length)'
            WHEN c.event IS NULL AND c.p.stamp = '' THEN 'other log line (no vLLM prefix)'
            WHEN c.event IS NULL THEN 'other log line'
            WHEN c.rid IS NULL THEN 'request line without a request id'
            WHEN c.local_ts IS NULL THEN kvir_yearless_problem(c.p.stamp, c.year, c.window_start, c.window_end)
            WHEN c.ts0 IS NULL THEN kvir_local_problem(c.local_ts, c.tz_iana, c.tz_offset_min)
            WHEN NOT kvir_in_range(c.ts0) THEN 'timestamp outside 1990-2100: ' || c.p.stamp
        END AS reason
    FROM converted AS c
)
SELECT
    j.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    CASE WHEN j.kind <> 'request' THEN j.reason END AS reason,
    CASE WHEN j.kind = 'request' THEN j.rid END AS request_id,
    NULL::VARCHAR AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts0 END AS ts,
    CASE WHEN j.kind = 'request' AND j.event <> 'received' THEN j.ts0 END AS ts_end,
    0 AS ts_granularity_s,
    NULL::VARCHAR AS account_id,
    CASE WHEN j.kind = 'request' THEN s.served_model END AS model,
    NULL::BIGINT AS prompt_tokens,
    NULL::BIGINT AS cached_tokens,
    NULL::BIGINT AS completion_tokens,
    CASE WHEN j.kind = 'request' AND j.event = 'generated' AND j.freason IN ('stop', 'length') THEN 200 END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN j.event = 'generated' THEN coalesce(kvir_sglang_outcome(lower(j.freason), NULL), 'served')
         WHEN j.event = 'aborted' THEN 'aborted'
         WHEN j.event = 'rejected' THEN 'rejected' END AS outcome,
    CASE WHEN j.kind = 'request' AND j.event = 'generated' THEN j.freason
         WHEN j.kind = 'request' AND j.event IN ('aborted', 'rejected') THEN j.event END AS finish_reason,
    coalesce(s.role, 'mixed') AS role,
    s.node AS node,
    CASE WHEN coalesce(s.role, 'mixed') IN ('prefill', 'mixed') THEN s.node END AS prefill_node,
    CASE WHEN coalesce(s.role, 'mixed') IN ('decode', 'mixed') THEN s.node END AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
