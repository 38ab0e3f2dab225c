-- helicone: Helicone request exports (@helicone/export JSON / JSONL / CSV, or query-clickhouse rows) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"request_id":"5b2a1c9e-0001-4c1a-9f1e-000000000001","request_created_at":"2026-09-05T10:00:00.000Z","request_path":"/v1/chat/completions","request_user_id":"cust_hc1","request_model":"glm-5.3","model":"zai-org/GLM-5.3","response_id":"chatcmpl-h1","response_status":200,"delay_ms":5000,"prompt_tokens":681281,"completion_tokens":9,"total_tokens":681290,"prompt_cache_read_tokens":null,"provider":"OPENAI"}
-- Required: request_id|response_id, request_created_at, model|request_model
-- Optional: request_user_id, response_status, delay_ms, prompt_tokens, completion_tokens, prompt_cache_read_tokens
--
-- HeliconeRequest fields: request_id (Helicone's uuid), request_created_at (ISO-8601; a naive value is
-- UTC), request_user_id (the Helicone-User-Id header: the customer), model / response_model /
-- request_model, response_id (the provider's id: the engine's request id), response_status (HTTP),
-- delay_ms, prompt_tokens, completion_tokens, prompt_cache_read_tokens. The request id kept is
-- response_id when present (so the record merges with the engine's log of the same request by id),
-- else Helicone's request_id. Outcome from response_status (0 / negative = no response: aborted).
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"request_id":"JSON","request_created_at":"VARCHAR","request_user_id":"JSON",
                  "model":"VARCHAR","response_model":"VARCHAR","request_model":"VARCHAR","response_id":"JSON",
                  "response_status":"VARCHAR","delay_ms":"VARCHAR","prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "prompt_cache_read_tokens":"VARCHAR"}')) END AS j,
        s.tz_iana, s.tz_offset_min
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text(coalesce(kvir_text((p.j.response_id ->> '$')), kvir_text((p.j.request_id ->> '$')))) AS rid,
        kvir_parse_ts(p.j.request_created_at, p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts0,
        kvir_count(p.j.prompt_tokens) AS n_prompt,
        kvir_count(p.j.completion_tokens) AS n_completion,
        kvir_count(p.j.prompt_cache_read_tokens) AS n_cached,
        TRY_CAST(TRY_CAST(p.j.response_status AS DOUBLE) AS INTEGER) AS status,
        TRY_CAST(p.j.delay_ms AS DOUBLE) AS delay_ms,
        kvir_text(coalesce(kvir_text(p.j.model), kvir_text(p.j.response_model), kvir_text(p.j.request_model))) AS model,
        kvir_text((p.j.request_user_id ->> '$')) AS account
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN f.rid IS NULL THEN kvir_bad('missing field: request_id')
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0)
            THEN kvir_bad(kvir_ts_problem(f.j.request_created_at, f.ts0, f.tz_iana, kvir_utc_off(f.tz_iana, f.tz_offset_min)))
        WHEN f.model IS NULL THEN kvir_bad('missing field: model')
        WHEN kvir_text(f.j.prompt_tokens) IS NOT NULL AND f.n_prompt IS NULL
            THEN kvir_bad('prompt_tokens is not a non-negative integer: ' || left(f.j.prompt_tokens, 40))
        WHEN kvir_text(f.j.response_status) IS NOT NULL AND f.status IS NULL THEN kvir_bad('response_status is not an integer')
        WHEN kvir_text(f.j.delay_ms) IS NOT NULL AND f.delay_ms IS NULL THEN kvir_bad('delay_ms is not a number: ' || left(kvir_text(f.j.delay_ms), 40))
        WHEN kvir_span_problem(f.delay_ms / 1000.0, 'delay_ms') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.delay_ms / 1000.0, 'delay_ms'))
    END) AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.ts0 AS ts,
    kvir_ts_extra_ns(f.j.request_created_at) AS ts_extra_ns,
    CASE WHEN f.delay_ms >= 0 THEN f.ts0 + kvir_span(f.delay_ms / 1000.0) END AS ts_end,
    f.account AS account_id,
    f.model,
    nullif(kvir_text(f.j.request_model), f.model) AS model_other,   -- the name the client asked for, when it differs
    f.n_prompt AS prompt_tokens,
    f.n_cached AS cached_tokens,
    f.n_completion AS completion_tokens,
    f.status AS http_status,
    CASE WHEN f.status <= 0 THEN 'aborted' ELSE kvir_outcome_from_status(f.status) END AS outcome,
    'gateway' AS role
FROM fields AS f
