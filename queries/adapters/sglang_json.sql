-- sglang_json: SGLang request-log lines in JSON (--log-requests-format json) as request records.
-- Params: none
-- Inputs: __input__ (numbered text lines: source_id, line_no, line, line_bytes), __settings__ (one row per source_id: its settings)
--
-- One JSON object per line: {"timestamp": <host-local naive ISO>, "event": "request.received" |
-- "request.finished", "rid": ..., "obj": {...}, "out": {"meta_info": {...}}}. Only request.finished is
-- a request; its timestamp is the finish time, so the start is timestamp - e2e_latency (seconds).
-- The model is the server's served model (settings.served_model); PD copies share obj.bootstrap_room.
-- An abort carries its HTTP status in finish_reason.status_code (400 = rejected, none = client abort).
--
-- Written for speed (it is the 10^8-line format): each line is parsed once (TRY(from_json): a malformed
-- line gives NULL), the common case is decided by the first WHEN, and reasons are only worked out for
-- the rows that are not requests.
WITH parsed AS (    -- no settings needed to parse: the reader hands over an over-long line empty
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text,
        CASE WHEN starts_with(i.line, '{') OR starts_with(ltrim(i.line), '{') THEN TRY(from_json(i.line,
                '{"timestamp":"VARCHAR","event":"VARCHAR","rid":"VARCHAR",
                  "obj":{"rid":"VARCHAR","bootstrap_room":"VARCHAR"},
                  "out":{"meta_info":{"id":"VARCHAR","prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                      "cached_tokens":"VARCHAR","e2e_latency":"VARCHAR",
                      "finish_reason":{"type":"VARCHAR","status_code":"VARCHAR"}}}}'))
        END AS j
    FROM __input__ AS i
),
fields AS (
    SELECT p.source_id, p.line_no, p.line_bytes, p.text, p.j,
        p.j.event = 'request.finished' AS finished,
        kvir_text(coalesce(p.j.rid, p.j.obj.rid, p.j.out.meta_info.id)) AS rid,
        kvir_text(p.j.obj.bootstrap_room) AS room,
        kvir_count(p.j.out.meta_info.prompt_tokens) AS prompt_tokens,
        kvir_count(p.j.out.meta_info.completion_tokens) AS completion_tokens,
        kvir_count(p.j.out.meta_info.cached_tokens) AS cached_tokens,
        TRY_CAST(p.j.out.meta_info.e2e_latency AS DOUBLE) AS latency_s,
        p.j.out.meta_info.finish_reason.type AS ftype,
        TRY_CAST(p.j.out.meta_info.finish_reason.status_code AS INTEGER) AS fstatus,
        kvir_naive_ts(p.j.timestamp) AS t_naive
    FROM parsed AS p
),
timed AS (    -- a time is converted only for finished events: elsewhere the join key is NULL (nothing joined)
    SELECT f.*, z.tz_iana, z.tz_offset_min,
        kvir_local_ts_to_utc(f.j.timestamp, f.t_naive, z.tz_iana, z.tz_offset_min, z.tz_spans) AS ts_fin
    FROM fields AS f
    LEFT JOIN __settings__ AS z ON z.source_id = CASE WHEN f.finished THEN f.source_id END
),
classified AS (
    SELECT f.*,
        CASE
            WHEN f.finished AND f.rid IS NOT NULL AND f.prompt_tokens IS NOT NULL
                 AND kvir_in_range(f.ts_fin) AND f.latency_s >= 0 AND kvir_span(f.latency_s) IS NOT NULL THEN 'request'
            WHEN f.line_bytes > 0 AND f.text = '' THEN 'bad'      -- over-long: the reader dropped its content
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            WHEN f.j.event = 'request.received' THEN 'skip'
            ELSE 'bad' END AS kind
    FROM timed AS f
),
reasoned AS (
    SELECT c.*,
        CASE WHEN c.kind = 'request' THEN NULL ELSE CASE
            WHEN c.line_bytes > 0 AND c.text = '' THEN 'line longer than ' || s.max_line_bytes || ' bytes'
            WHEN c.j IS NULL AND trim(c.text) = '' THEN 'blank line'
            WHEN c.j IS NULL AND json_valid(c.text) THEN 'JSON value is not an object'
            WHEN c.j IS NULL THEN 'malformed JSON'
            WHEN c.j.event = 'request.received' THEN 'request.received event (not a request)'
            WHEN c.j.event IS NULL THEN 'missing field: event'
            WHEN c.j.event <> 'request.finished' THEN 'unknown event: ' || left(c.j.event, 40)
            WHEN c.rid IS NULL THEN 'missing field: rid'
            WHEN c.j.out.meta_info.prompt_tokens IS NULL THEN 'missing field: out.meta_info.prompt_tokens'
            WHEN c.prompt_tokens IS NULL THEN 'prompt_tokens is not a non-negative integer'
            WHEN c.ts_fin IS NULL OR NOT kvir_in_range(c.ts_fin)
                THEN kvir_ts_problem(c.j.timestamp, c.ts_fin, c.tz_iana, c.tz_offset_min)
            WHEN c.latency_s IS NULL THEN 'missing or non-numeric field: out.meta_info.e2e_latency'
            WHEN c.latency_s < 0 THEN 'negative e2e_latency'
            WHEN kvir_span(c.latency_s) IS NULL THEN 'implausible e2e_latency (over 10^7 s)'
            ELSE 'unreadable record' END END AS reason,
        s.served_model AS s_served_model, s.role AS s_role, s.node AS s_node, s.keep_raw AS s_keep_raw
    FROM classified AS c JOIN __settings__ AS s ON s.source_id = c.source_id
)
SELECT
    r.source_id::INTEGER AS source_id,
    r.line_no AS source_line,
    r.kind,
    r.reason,
    CASE WHEN r.kind = 'request' THEN r.rid END AS request_id,
    CASE WHEN r.kind = 'request' THEN r.room END AS bootstrap_room,
    CASE WHEN r.kind = 'request' THEN r.ts_fin - kvir_span(r.latency_s) END AS ts,
    CASE WHEN r.kind = 'request' THEN r.ts_fin END AS ts_end,
    0 AS ts_granularity_s,
    NULL::VARCHAR AS account_id,
    CASE WHEN r.kind = 'request' THEN r.s_served_model END AS model,
    CASE WHEN r.kind = 'request' THEN r.prompt_tokens END AS prompt_tokens,
    CASE WHEN r.kind = 'request' THEN r.cached_tokens END AS cached_tokens,
    CASE WHEN r.kind = 'request' THEN r.completion_tokens END AS completion_tokens,
    CASE WHEN r.kind = 'request' THEN kvir_sglang_status(r.ftype, r.fstatus) END AS http_status,
    CASE WHEN r.kind = 'request' THEN kvir_sglang_outcome(r.ftype, r.fstatus) END AS outcome,
    CASE WHEN r.kind = 'request' THEN r.ftype END AS finish_reason,
    r.s_role AS role,
    r.s_node AS node,
    CASE WHEN r.s_role = 'prefill' OR r.s_role = 'mixed' THEN r.s_node END AS prefill_node,
    CASE WHEN r.s_role = 'decode' OR r.s_role = 'mixed' THEN r.s_node END AS decode_node,
    CASE WHEN r.kind = 'request' AND r.s_role = 'prefill' THEN r.prompt_tokens END AS prefill_tokens,
    CASE WHEN r.kind = 'bad' AND r.s_keep_raw THEN r.text END AS raw
FROM reasoned AS r
