-- sglang_metrics: SGLang request-metrics export files (--export-metrics-to-file) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- FileRequestMetricsExporter writes one JSON object per finished request (health checks excluded) to
-- sglang-request-metrics-YYYYMMDD_HH.log, the hour being the host's *local* datetime.now() when the
-- record was written (the finish). A record is {"request_parameters": "<JSON string of the non-None
-- GenerateReqInput fields: rid, bootstrap_room, ...>", **out.meta_info} = id, finish_reason,
-- prompt_tokens, completion_tokens, cached_tokens, e2e_latency, ... and holds no time of its own.
-- So the finish lies in [H, H + 1 h) (H = the file's hour in UTC) and the start in
-- [H - e2e_latency, H + 1 h - e2e_latency): ts is that lower bound and ts_granularity_s = 3600.
-- A file hour that is ambiguous or does not exist (DST fold / gap) is refused for every record.
-- prompt_tokens and e2e_latency are optional (the tokenizer manager's abort of a request in flight logs
-- neither: unknown length; without e2e_latency the finish hour bounds the start); a request rejected for
-- length logs the 1-token stub as prompt_tokens and the real length in finish_reason.message.
-- Example: {"request_parameters": "{\"rid\": \"dA\", \"sampling_params\": {\"max_new_tokens\": 1024}, \"stream\": false, \"bootstrap_host\": \"10.0.0.7\", \"bootstrap_port\": 8998, \"bootstrap_room\": 7001}", "id": "dA", "finish_reason": {"type": "length", "length": 812}, "prompt_tokens": 681281, "weight_version": "default", "completion_tokens": 812, "cached_tokens": 0, "e2e_latency": 140.25}
-- Required: id|request_parameters, (the hour in the file name sglang-request-metrics-YYYYMMDD_HH.log)
-- Optional: request_parameters.bootstrap_room, prompt_tokens, completion_tokens, cached_tokens, e2e_latency, finish_reason
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN starts_with(i.line, '{') OR starts_with(ltrim(i.line), '{') THEN TRY(from_json(i.line,
                '{"request_parameters":"VARCHAR","id":"JSON","prompt_tokens":"VARCHAR",
                  "completion_tokens":"VARCHAR","cached_tokens":"VARCHAR","e2e_latency":"VARCHAR",
                  "finish_reason":{"type":"VARCHAR","status_code":"VARCHAR","message":"VARCHAR"}}'))
        END AS j,
        try_strptime(regexp_extract(s.file_name, 'sglang-request-metrics-(\d{8}_\d{2})\.log', 1), '%Y%m%d_%H') AS hour_local,
        s.tz_iana, s.tz_offset_min, s.file_name
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text(coalesce((p.j.id ->> '$'), CASE WHEN json_valid(p.j.request_parameters)
                                        THEN json_extract_string(p.j.request_parameters, '$.rid') END)) AS rid,
        kvir_text(CASE WHEN json_valid(p.j.request_parameters)
                       THEN json_extract_string(p.j.request_parameters, '$.bootstrap_room') END) AS room,
        kvir_count(p.j.prompt_tokens) AS logged_prompt,
        CASE WHEN p.j.finish_reason.type = 'abort' THEN kvir_sglang_rejected_len(p.j.finish_reason.message) END AS rejected_len,
        kvir_count(p.j.completion_tokens) AS completion_tokens,
        kvir_count(p.j.cached_tokens) AS cached_tokens,
        TRY_CAST(p.j.e2e_latency AS DOUBLE) AS latency_s,
        p.j.finish_reason.type AS ftype,
        TRY_CAST(p.j.finish_reason.status_code AS INTEGER) AS fstatus,
        kvir_local_to_utc(p.hour_local, p.tz_iana, p.tz_offset_min) AS hour_utc
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    CASE
        WHEN f.j IS NOT NULL AND f.rid IS NOT NULL AND kvir_in_range(f.hour_utc)
             AND (f.logged_prompt IS NOT NULL OR f.j.prompt_tokens IS NULL)
             AND (f.latency_s >= 0 AND kvir_span(f.latency_s) IS NOT NULL OR f.j.e2e_latency IS NULL) THEN NULL
        WHEN f.problem IS NOT NULL THEN kvir_bad(f.problem)
        WHEN f.j IS NULL THEN kvir_unparsed(f.text)
        WHEN f.hour_local IS NULL
            THEN kvir_bad('the file name carries no hour (expected sglang-request-metrics-YYYYMMDD_HH.log): '
                          || left(coalesce(f.file_name, ''), 60))
        WHEN f.hour_utc IS NULL OR NOT kvir_in_range(f.hour_utc)
            THEN kvir_bad(coalesce(kvir_local_problem(f.hour_local, f.tz_iana, f.tz_offset_min), 'hour outside 1990-2100')
                          || ' (file hour ' || strftime(f.hour_local, '%Y-%m-%d %H:00') || ')')
        WHEN f.rid IS NULL THEN kvir_bad('missing field: id')
        WHEN f.logged_prompt IS NULL AND f.j.prompt_tokens IS NOT NULL THEN kvir_bad('prompt_tokens is not a non-negative integer')
        WHEN f.latency_s IS NULL THEN kvir_bad('non-numeric field: e2e_latency')
        WHEN kvir_span_problem(f.latency_s, 'e2e_latency') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.latency_s, 'e2e_latency'))
        ELSE kvir_bad('unreadable record') END AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.room AS bootstrap_room,
    f.hour_utc - coalesce(kvir_span(f.latency_s), INTERVAL 0 SECOND) AS ts,
    f.hour_utc AS ts_end,
    3600 AS ts_granularity_s,
    coalesce(f.rejected_len, f.logged_prompt) AS prompt_tokens,
    f.cached_tokens,
    f.completion_tokens,
    kvir_sglang_status(f.ftype, f.fstatus) AS http_status,
    kvir_sglang_outcome(f.ftype, f.fstatus) AS outcome,
    f.ftype AS finish_reason,
    CASE WHEN f.rejected_len IS NOT NULL THEN f.logged_prompt END AS prefill_tokens
FROM fields AS f
