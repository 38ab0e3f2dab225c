-- langfuse: Langfuse observation exports (blob-storage JSON / JSONL / CSV, snake_case; or the public API,
-- camelCase) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"id": "obs-g1", "traceId": "tr-1", "startTime": "2026-09-04T10:00:00Z", "endTime": "2026-09-04T10:00:30Z", "projectId": "p1", "type": "GENERATION", "name": "chat", "level": "DEFAULT", "environment": "production", "userId": "cust_lf1", "model": "zai-org/GLM-5.3", "usageDetails": {"input": 681281, "output": 5, "total": 681286}}
-- Required: id, startTime|start_time, model|providedModelName|provided_model_name
-- Optional: type, endTime, userId, level, statusMessage, usageDetails
--
-- GENERATION observations are requests; SPAN, EVENT and the other types are counted. Times: start_time /
-- end_time 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC without a zone (the API's startTime is ISO with Z): naive
-- means UTC here, never the host's zone. Prompt length: usage_details.input plus the cached input keys
-- (input_cached_tokens, cache_read_input_tokens, input_cache_read): Langfuse reports cache reads apart
-- from input; older exports have usage.input / usage.promptTokens. Customer: user_id (enriched
-- observations) or userId. Model: provided_model_name (as the SDK sent it), else model. level ERROR =
-- failed (rejected when its status_message names a 4xx / BadRequest). request_id = the observation id.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"id":"JSON","type":"VARCHAR","trace_id":"VARCHAR","traceId":"VARCHAR",
                  "start_time":"VARCHAR","startTime":"VARCHAR","end_time":"VARCHAR","endTime":"VARCHAR",
                  "provided_model_name":"VARCHAR","providedModelName":"VARCHAR","model":"VARCHAR",
                  "usage_details":"VARCHAR","usageDetails":"VARCHAR","usage":"VARCHAR",
                  "user_id":"JSON","userId":"JSON","level":"VARCHAR","status_message":"VARCHAR",
                  "statusMessage":"VARCHAR"}')) END AS j,
        s.tz_iana, s.tz_offset_min
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text((p.j.id ->> '$')) AS rid,
        upper(kvir_text(p.j.type)) AS otype,
        coalesce(kvir_text(p.j.start_time), kvir_text(p.j.startTime)) AS start_text,
        kvir_parse_ts(coalesce(kvir_text(p.j.start_time), kvir_text(p.j.startTime)), p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts0,
        kvir_parse_ts(coalesce(kvir_text(p.j.end_time), kvir_text(p.j.endTime)), p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts1,
        CASE WHEN json_valid(coalesce(p.j.usage_details, p.j.usageDetails, p.j.usage))
             THEN coalesce(p.j.usage_details, p.j.usageDetails, p.j.usage)::JSON END AS u,
        kvir_text(coalesce(kvir_text(p.j.provided_model_name), kvir_text(p.j.providedModelName), kvir_text(p.j.model))) AS model,
        kvir_text(coalesce(kvir_text((p.j.user_id ->> '$')), kvir_text((p.j.userId ->> '$')))) AS account,
        upper(kvir_text(p.j.level)) AS level,
        coalesce(p.j.status_message, p.j.statusMessage) AS status_message
    FROM parsed AS p
),
counted AS (
    SELECT f.*,
        coalesce(f.u ->> '$.input', f.u ->> '$.promptTokens', f.u ->> '$.prompt_tokens') AS input_text,
        kvir_count(coalesce(f.u ->> '$.input', f.u ->> '$.promptTokens', f.u ->> '$.prompt_tokens')) AS n_input,
        kvir_count(coalesce(f.u ->> '$.input_cached_tokens', f.u ->> '$.cache_read_input_tokens',
                            f.u ->> '$.input_cache_read')) AS n_cached,
        kvir_count(coalesce(f.u ->> '$.output', f.u ->> '$.completionTokens', f.u ->> '$.completion_tokens')) AS n_output
    FROM fields AS f
)
SELECT
    c.source_id,
    c.line_no AS source_line,
    coalesce(kvir_reader_verdict(c.problem, c.text, c.j), CASE
        WHEN c.otype IS NOT NULL AND c.otype <> 'GENERATION'
            THEN kvir_skip('observation of type ' || left(c.otype, 20) || ' (not a generation)')
        WHEN c.rid IS NULL THEN kvir_bad('missing field: id')
        WHEN c.ts0 IS NULL OR NOT kvir_in_range(c.ts0)
            THEN kvir_bad(kvir_ts_problem(c.start_text, c.ts0, c.tz_iana, kvir_utc_off(c.tz_iana, c.tz_offset_min)))
        WHEN c.model IS NULL THEN kvir_bad('missing field: model')
        WHEN c.input_text IS NOT NULL AND c.n_input IS NULL THEN kvir_bad('usage input is not a non-negative integer')
    END) AS verdict,
    c.text AS raw,
    c.rid AS request_id,
    c.ts0 AS ts,
    kvir_ts_extra_ns(c.start_text) AS ts_extra_ns,
    c.ts1 AS ts_end,
    c.account AS account_id,
    c.model,
    c.n_input + coalesce(c.n_cached, 0) AS prompt_tokens,
    c.n_cached AS cached_tokens,
    c.n_output AS completion_tokens,
    CASE WHEN c.level = 'ERROR' AND regexp_matches(coalesce(c.status_message, ''), '\b4[0-9][0-9]\b|BadRequest|context length')
             THEN 'rejected'
         WHEN c.level = 'ERROR' THEN 'failed'
         ELSE 'served' END AS outcome,
    CASE WHEN c.level = 'ERROR' THEN 'error' END AS finish_reason,
    'gateway' AS role
FROM counted AS c
