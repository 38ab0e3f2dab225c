-- sglang_json: SGLang request-log lines in JSON (--log-requests-format json) as request records.
-- Params: none
-- Inputs: __input__ (numbered lines: source_id, line_no, line, line_bytes), __settings__ (one row per source_id: its settings)
--
-- One JSON object per line: {"timestamp": <host-local naive ISO>, "event": "request.received" |
-- "request.finished", "rid": ..., "obj": {...}, "out": {"meta_info": {...}}}. Only request.finished is
-- a request; its timestamp is the finish time, so the start is timestamp - e2e_latency (seconds).
-- The model is the server's served model (settings.served_model); PD copies share obj.bootstrap_room.
WITH lines AS (
    SELECT i.source_id, i.line_no, i.line_bytes, rtrim(decode(i.line), chr(13) || chr(10)) AS text
    FROM __input__ AS i
),
parsed AS (
    SELECT l.source_id, l.line_no, l.line_bytes, l.text,
           CASE WHEN l.line_bytes <= s.max_line_bytes AND json_valid(l.text) AND json_type(l.text) = 'OBJECT'
                THEN from_json(l.text, '{"timestamp":"VARCHAR","event":"VARCHAR","rid":"VARCHAR",
                    "obj":{"rid":"VARCHAR","bootstrap_room":"VARCHAR"},
                    "out":{"meta_info":{"id":"VARCHAR","prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                        "cached_tokens":"VARCHAR","e2e_latency":"VARCHAR",
                        "finish_reason":{"type":"VARCHAR","status_code":"VARCHAR"}}}}')
           END AS j
    FROM lines AS l JOIN __settings__ AS s ON s.source_id = l.source_id
),
fields AS (
    SELECT p.source_id, p.line_no, p.line_bytes, p.text, p.j,
           kvir_text(coalesce(p.j.rid, p.j.obj.rid, p.j.out.meta_info.id)) AS rid,
           kvir_text(p.j.obj.bootstrap_room) AS room,
           kvir_count(p.j.out.meta_info.prompt_tokens) AS prompt_tokens,
           kvir_count(p.j.out.meta_info.completion_tokens) AS completion_tokens,
           kvir_count(p.j.out.meta_info.cached_tokens) AS cached_tokens,
           TRY_CAST(p.j.out.meta_info.e2e_latency AS DOUBLE) AS latency_s,
           p.j.out.meta_info.finish_reason.type AS ftype,
           TRY_CAST(p.j.out.meta_info.finish_reason.status_code AS INTEGER) AS fstatus,
           kvir_parse_ts(p.j.timestamp, s.tz_iana, s.tz_offset_min) AS ts_fin
    FROM parsed AS p JOIN __settings__ AS s ON s.source_id = p.source_id
),
classified AS (
    SELECT f.*,
        CASE
            WHEN f.line_bytes > s.max_line_bytes THEN 'bad'
            WHEN f.line_bytes = 0 OR trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL THEN 'bad'
            WHEN f.j.event = 'request.received' THEN 'skip'
            WHEN f.j.event IS DISTINCT FROM 'request.finished' THEN 'bad'
            WHEN f.rid IS NULL OR f.prompt_tokens IS NULL OR f.ts_fin IS NULL OR NOT kvir_in_range(f.ts_fin)
                 OR f.latency_s IS NULL OR f.latency_s < 0 THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.line_bytes > s.max_line_bytes THEN 'line longer than ' || s.max_line_bytes || ' bytes'
            WHEN f.line_bytes = 0 OR trim(f.text) = '' THEN 'blank line'
            WHEN f.j IS NULL AND json_valid(f.text) THEN 'JSON value is not an object'
            WHEN f.j IS NULL THEN 'malformed JSON'
            WHEN f.j.event = 'request.received' THEN 'request.received event (not a request)'
            WHEN f.j.event IS NULL THEN 'missing field: event'
            WHEN f.j.event <> 'request.finished' THEN 'unknown event: ' || left(f.j.event, 40)
            WHEN f.rid IS NULL THEN 'missing field: rid'
            WHEN f.j.out.meta_info.prompt_tokens IS NULL THEN 'missing field: out.meta_info.prompt_tokens'
            WHEN f.prompt_tokens IS NULL THEN 'prompt_tokens is not a non-negative integer'
            WHEN f.ts_fin IS NULL OR NOT kvir_in_range(f.ts_fin)
                THEN kvir_ts_problem(f.j.timestamp, f.ts_fin, s.tz_iana, s.tz_offset_min)
            WHEN f.latency_s IS NULL THEN 'missing or non-numeric field: out.meta_info.e2e_latency'
            WHEN f.latency_s < 0 THEN 'negative e2e_latency'
            END AS reason
    FROM fields AS f JOIN __settings__ AS s ON s.source_id = f.source_id
)
SELECT
    s.source_id::INTEGER AS source_id,
    c.line_no AS source_line,
    c.kind,
    c.reason,
    CASE WHEN c.kind = 'request' THEN c.rid END AS request_id,
    CASE WHEN c.kind = 'request' THEN c.room END AS bootstrap_room,
    CASE WHEN c.kind = 'request' THEN c.ts_fin - to_microseconds(CAST(round(c.latency_s * 1e6) AS BIGINT)) END AS ts,
    CASE WHEN c.kind = 'request' THEN c.ts_fin END AS ts_end,
    0 AS ts_granularity_s,
    NULL::VARCHAR AS account_id,
    CASE WHEN c.kind = 'request' THEN s.served_model END AS model,
    CASE WHEN c.kind = 'request' THEN c.prompt_tokens END AS prompt_tokens,
    CASE WHEN c.kind = 'request' THEN c.cached_tokens END AS cached_tokens,
    CASE WHEN c.kind = 'request' THEN c.completion_tokens END AS completion_tokens,
    CASE WHEN c.kind = 'request' THEN kvir_sglang_status(c.ftype, c.fstatus) END AS http_status,
    CASE WHEN c.kind = 'request' THEN kvir_sglang_outcome(c.ftype, c.fstatus) END AS outcome,
    CASE WHEN c.kind = 'request' THEN c.ftype END AS finish_reason,
    s.role AS role,
    s.node AS node,
    CASE WHEN s.role = 'prefill' OR s.role = 'mixed' THEN s.node END AS prefill_node,
    CASE WHEN s.role = 'decode' OR s.role = 'mixed' THEN s.node END AS decode_node,
    CASE WHEN c.kind = 'request' AND s.role = 'prefill' THEN c.prompt_tokens END AS prefill_tokens,
    CASE WHEN c.kind = 'bad' AND s.keep_raw THEN c.text END AS raw
FROM classified AS c JOIN __settings__ AS s ON s.source_id = c.source_id
