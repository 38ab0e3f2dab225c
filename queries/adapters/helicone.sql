-- helicone: Helicone request exports (@helicone/export JSON / JSONL / CSV, or query-clickhouse rows) as request records.
-- Params: none
-- Inputs: __input__ (records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- HeliconeRequest fields: request_id (Helicone's uuid), request_created_at (ISO-8601; a naive value is
-- UTC), request_user_id (the Helicone-User-Id header: the customer), model / response_model /
-- request_model, response_id (the provider's id: the engine's request id), response_status (HTTP),
-- delay_ms, prompt_tokens, completion_tokens, prompt_cache_read_tokens. The request id kept is
-- response_id when present (so the record merges with the engine's log of the same request by id),
-- else Helicone's request_id. Outcome from response_status (0 / negative = no response: aborted).
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND i.line_bytes <= s.max_line_bytes AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"request_id":"VARCHAR","request_created_at":"VARCHAR","request_user_id":"VARCHAR",
                  "model":"VARCHAR","response_model":"VARCHAR","request_model":"VARCHAR","response_id":"VARCHAR",
                  "response_status":"VARCHAR","delay_ms":"VARCHAR","prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "prompt_cache_read_tokens":"VARCHAR"}')) END AS j,
        s.tz_iana, s.tz_offset_min, s.max_line_bytes
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text(coalesce(kvir_text(p.j.response_id), kvir_text(p.j.request_id))) AS rid,
        kvir_parse_ts(p.j.request_created_at, p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts0,
        kvir_count(p.j.prompt_tokens) AS n_prompt,
        kvir_count(p.j.completion_tokens) AS n_completion,
        kvir_count(p.j.prompt_cache_read_tokens) AS n_cached,
        TRY_CAST(TRY_CAST(p.j.response_status AS DOUBLE) AS INTEGER) AS status,
        TRY_CAST(p.j.delay_ms AS DOUBLE) AS delay_ms,
        kvir_text(coalesce(kvir_text(p.j.model), kvir_text(p.j.response_model), kvir_text(p.j.request_model))) AS model,
        kvir_text(p.j.request_user_id) AS account
    FROM parsed AS p
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.problem IS NOT NULL OR f.line_bytes > f.max_line_bytes THEN 'bad'
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL OR f.rid IS NULL OR NOT kvir_in_range(f.ts0) OR f.model IS NULL THEN 'bad'
            WHEN kvir_text(f.j.prompt_tokens) IS NOT NULL AND f.n_prompt IS NULL THEN 'bad'
            WHEN kvir_text(f.j.response_status) IS NOT NULL AND f.status IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.problem IS NOT NULL THEN f.problem
            WHEN f.j IS NULL THEN kvir_json_problem(f.text, f.line_bytes, f.max_line_bytes)
            WHEN f.rid IS NULL THEN 'missing field: request_id'
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0)
                THEN kvir_ts_problem(f.j.request_created_at, f.ts0, f.tz_iana, kvir_utc_off(f.tz_iana, f.tz_offset_min))
            WHEN f.model IS NULL THEN 'missing field: model'
            WHEN kvir_text(f.j.prompt_tokens) IS NOT NULL AND f.n_prompt IS NULL
                THEN 'prompt_tokens is not a non-negative integer: ' || left(f.j.prompt_tokens, 40)
            WHEN kvir_text(f.j.response_status) IS NOT NULL AND f.status IS NULL THEN 'response_status is not an integer'
        END AS reason
    FROM fields AS f
)
SELECT
    j.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    CASE WHEN j.kind <> 'request' THEN j.reason END AS reason,
    CASE WHEN j.kind = 'request' THEN j.rid END AS request_id,
    NULL::VARCHAR AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts0 END AS ts,
    CASE WHEN j.kind = 'request' AND j.delay_ms >= 0
         THEN j.ts0 + kvir_span(j.delay_ms / 1000.0) END AS ts_end,
    0 AS ts_granularity_s,
    CASE WHEN j.kind = 'request' THEN j.account END AS account_id,
    CASE WHEN j.kind = 'request' THEN j.model END AS model,
    CASE WHEN j.kind = 'request' THEN j.n_prompt END AS prompt_tokens,
    CASE WHEN j.kind = 'request' THEN j.n_cached END AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN j.n_completion END AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN j.status END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN j.status <= 0 THEN 'aborted'
         ELSE kvir_outcome_from_status(j.status) END AS outcome,
    NULL::VARCHAR AS finish_reason,
    'gateway' AS role,
    s.node AS node,
    NULL::VARCHAR AS prefill_node,
    NULL::VARCHAR AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
