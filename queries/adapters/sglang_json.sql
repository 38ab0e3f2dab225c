-- sglang_json: SGLang request-log lines in JSON (--log-requests-format json) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
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
WITH parsed AS (    -- no settings needed to parse: the reader hands over an over-long line empty, with a problem
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
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
    SELECT p.source_id, p.line_no, p.problem, p.text, p.j,
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
)
SELECT
    t.source_id,
    t.line_no AS source_line,
    CASE
        WHEN t.finished AND t.rid IS NOT NULL AND t.prompt_tokens IS NOT NULL       -- the common case first
             AND kvir_in_range(t.ts_fin) AND t.latency_s >= 0 AND kvir_span(t.latency_s) IS NOT NULL THEN NULL
        WHEN t.problem IS NOT NULL THEN kvir_bad(t.problem)
        WHEN t.j IS NULL THEN kvir_unparsed(t.text)
        WHEN t.j.event = 'request.received' THEN kvir_skip('request.received event (not a request)')
        WHEN t.j.event IS NULL THEN kvir_bad('missing field: event')
        WHEN t.j.event <> 'request.finished' THEN kvir_bad('unknown event: ' || left(t.j.event, 40))
        WHEN t.rid IS NULL THEN kvir_bad('missing field: rid')
        WHEN t.j.out.meta_info.prompt_tokens IS NULL THEN kvir_bad('missing field: out.meta_info.prompt_tokens')
        WHEN t.prompt_tokens IS NULL THEN kvir_bad('prompt_tokens is not a non-negative integer')
        WHEN t.ts_fin IS NULL OR NOT kvir_in_range(t.ts_fin)
            THEN kvir_bad(kvir_ts_problem(t.j.timestamp, t.ts_fin, t.tz_iana, t.tz_offset_min))
        WHEN t.latency_s IS NULL THEN kvir_bad('missing or non-numeric field: out.meta_info.e2e_latency')
        WHEN t.latency_s < 0 THEN kvir_bad('negative e2e_latency')
        WHEN kvir_span(t.latency_s) IS NULL THEN kvir_bad('implausible e2e_latency (over 10^7 s)')
        ELSE kvir_bad('unreadable record') END AS verdict,
    t.text AS raw,
    t.rid AS request_id,
    t.room AS bootstrap_room,
    t.ts_fin - kvir_span(t.latency_s) AS ts,
    t.ts_fin AS ts_end,
    t.prompt_tokens,
    t.cached_tokens,
    t.completion_tokens,
    kvir_sglang_status(t.ftype, t.fstatus) AS http_status,
    kvir_sglang_outcome(t.ftype, t.fstatus) AS outcome,
    t.ftype AS finish_reason
FROM timed AS t
