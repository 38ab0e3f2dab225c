-- sglang_metrics: SGLang request-metrics export files (--export-metrics-to-file) as request records.
-- Params: none
-- Inputs: __input__ (numbered text lines: source_id, line_no, line, line_bytes), __settings__ (one row per source_id: its settings)
--
-- FileRequestMetricsExporter writes one JSON object per finished request (health checks excluded) to
-- sglang-request-metrics-YYYYMMDD_HH.log, the hour being the host's *local* datetime.now() when the
-- record was written (the finish). A record is {"request_parameters": "<JSON string of the non-None
-- GenerateReqInput fields: rid, bootstrap_room, ...>", **out.meta_info} = id, finish_reason,
-- prompt_tokens, completion_tokens, cached_tokens, e2e_latency, ... and holds no time of its own.
-- So the finish lies in [H, H + 1 h) (H = the file's hour in UTC) and the start in
-- [H - e2e_latency, H + 1 h - e2e_latency): ts is that lower bound and ts_granularity_s = 3600.
-- A file hour that is ambiguous or does not exist (DST fold / gap) is refused for every record.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text,
        CASE WHEN i.line_bytes > s.max_line_bytes THEN NULL
             WHEN starts_with(i.line, '{') OR starts_with(ltrim(i.line), '{') THEN TRY(from_json(i.line,
                '{"request_parameters":"VARCHAR","id":"VARCHAR","prompt_tokens":"VARCHAR",
                  "completion_tokens":"VARCHAR","cached_tokens":"VARCHAR","e2e_latency":"VARCHAR",
                  "finish_reason":{"type":"VARCHAR","status_code":"VARCHAR"}}'))
        END AS j,
        try_strptime(regexp_extract(s.file_name, 'sglang-request-metrics-(\d{8}_\d{2})\.log', 1), '%Y%m%d_%H') AS hour_local,
        s.tz_iana, s.tz_offset_min, s.max_line_bytes, s.file_name
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text(coalesce(p.j.id, CASE WHEN json_valid(p.j.request_parameters)
                                        THEN json_extract_string(p.j.request_parameters, '$.rid') END)) AS rid,
        kvir_text(CASE WHEN json_valid(p.j.request_parameters)
                       THEN json_extract_string(p.j.request_parameters, '$.bootstrap_room') END) AS room,
        kvir_count(p.j.prompt_tokens) AS prompt_tokens,
        kvir_count(p.j.completion_tokens) AS completion_tokens,
        kvir_count(p.j.cached_tokens) AS cached_tokens,
        TRY_CAST(p.j.e2e_latency AS DOUBLE) AS latency_s,
        p.j.finish_reason.type AS ftype,
        TRY_CAST(p.j.finish_reason.status_code AS INTEGER) AS fstatus,
        kvir_local_to_utc(p.hour_local, p.tz_iana, p.tz_offset_min) AS hour_utc
    FROM parsed AS p
),
classified AS (
    SELECT f.*,
        CASE
            WHEN f.j IS NOT NULL AND f.rid IS NOT NULL AND f.prompt_tokens IS NOT NULL AND kvir_in_range(f.hour_utc)
                 AND f.latency_s >= 0 AND kvir_span(f.latency_s) IS NOT NULL THEN 'request'
            WHEN f.line_bytes > f.max_line_bytes THEN 'bad'
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            ELSE 'bad' END AS kind
    FROM fields AS f
),
reasoned AS (
    SELECT c.*,
        CASE WHEN c.kind = 'request' THEN NULL ELSE CASE
            WHEN c.line_bytes > c.max_line_bytes THEN 'line longer than ' || c.max_line_bytes || ' bytes'
            WHEN c.j IS NULL AND trim(c.text) = '' THEN 'blank line'
            WHEN c.j IS NULL AND json_valid(c.text) THEN 'JSON value is not an object'
            WHEN c.j IS NULL THEN 'malformed JSON'
            WHEN c.hour_local IS NULL
                THEN 'the file name carries no hour (expected sglang-request-metrics-YYYYMMDD_HH.log): ' || left(coalesce(c.file_name, ''), 60)
            WHEN c.hour_utc IS NULL OR NOT kvir_in_range(c.hour_utc)
                THEN coalesce(kvir_local_problem(c.hour_local, c.tz_iana, c.tz_offset_min), 'hour outside 1990-2100')
                     || ' (file hour ' || strftime(c.hour_local, '%Y-%m-%d %H:00') || ')'
            WHEN c.rid IS NULL THEN 'missing field: id'
            WHEN c.j.prompt_tokens IS NULL THEN 'missing field: prompt_tokens'
            WHEN c.prompt_tokens IS NULL THEN 'prompt_tokens is not a non-negative integer'
            WHEN c.latency_s IS NULL THEN 'missing or non-numeric field: e2e_latency'
            WHEN c.latency_s < 0 THEN 'negative e2e_latency'
            WHEN kvir_span(c.latency_s) IS NULL THEN 'implausible e2e_latency (over 10^7 s)'
            ELSE 'unreadable record' END END AS reason
    FROM classified AS c
)
SELECT
    r.source_id::INTEGER AS source_id,
    r.line_no AS source_line,
    r.kind,
    r.reason,
    CASE WHEN r.kind = 'request' THEN r.rid END AS request_id,
    CASE WHEN r.kind = 'request' THEN r.room END AS bootstrap_room,
    CASE WHEN r.kind = 'request' THEN r.hour_utc - kvir_span(r.latency_s) END AS ts,
    CASE WHEN r.kind = 'request' THEN r.hour_utc END AS ts_end,
    3600 AS ts_granularity_s,
    NULL::VARCHAR AS account_id,
    CASE WHEN r.kind = 'request' THEN s.served_model END AS model,
    CASE WHEN r.kind = 'request' THEN r.prompt_tokens END AS prompt_tokens,
    CASE WHEN r.kind = 'request' THEN r.cached_tokens END AS cached_tokens,
    CASE WHEN r.kind = 'request' THEN r.completion_tokens END AS completion_tokens,
    CASE WHEN r.kind = 'request' THEN kvir_sglang_status(r.ftype, r.fstatus) END AS http_status,
    CASE WHEN r.kind = 'request' THEN kvir_sglang_outcome(r.ftype, r.fstatus) END AS outcome,
    CASE WHEN r.kind = 'request' THEN r.ftype END AS finish_reason,
    s.role AS role,
    s.node AS node,
    CASE WHEN s.role = 'prefill' OR s.role = 'mixed' THEN s.node END AS prefill_node,
    CASE WHEN s.role = 'decode' OR s.role = 'mixed' THEN s.node END AS decode_node,
    CASE WHEN r.kind = 'request' AND s.role = 'prefill' THEN r.prompt_tokens END AS prefill_tokens,
    CASE WHEN r.kind = 'bad' AND s.keep_raw THEN r.text END AS raw
FROM reasoned AS r JOIN __settings__ AS s ON s.source_id = r.source_id
