-- litellm: LiteLLM proxy SpendLogs rows (CSV export, /spend/logs JSON, NDJSON) as request records.
-- Params: none
-- Inputs: __input__ (records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- Columns of LiteLLM_SpendLogs (schema.prisma): request_id (often the provider's response id),
-- startTime / endTime (timestamp(3) WITHOUT time zone holding UTC: naive strings are UTC, never the
-- host's zone), model (the deployment's model), model_group (the public alias), prompt_tokens,
-- completion_tokens, end_user (the customer id), user, team_id, api_key (hashed), status
-- (success | failure, nullable), metadata (jsonb: error_information.error_code on failures).
-- account_id = end_user, else user, else team_id. Outcome: success = served; failure = rejected for a
-- 4xx error code, failed otherwise; no status = unknown. SpendLogs has no HTTP status column: it is
-- only set from a failure's error code.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND i.line_bytes <= s.max_line_bytes AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"request_id":"VARCHAR","startTime":"VARCHAR","endTime":"VARCHAR",
                  "model":"VARCHAR","model_group":"VARCHAR","prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "end_user":"VARCHAR","user":"VARCHAR","team_id":"VARCHAR","status":"VARCHAR","metadata":"VARCHAR",
                  "cache_hit":"VARCHAR","call_type":"VARCHAR"}')) END AS j,
        s.tz_iana, s.tz_offset_min, s.max_line_bytes
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text(p.j.request_id) AS rid,
        kvir_parse_ts(p.j.startTime, p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts0,
        kvir_parse_ts(p.j.endTime, p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts1,
        kvir_count(p.j.prompt_tokens) AS n_prompt,
        kvir_count(p.j.completion_tokens) AS n_completion,
        kvir_text(coalesce(kvir_text(p.j.end_user), kvir_text(p.j.user), kvir_text(p.j.team_id))) AS account,
        kvir_text(coalesce(kvir_text(p.j.model), kvir_text(p.j.model_group))) AS model,
        lower(kvir_text(coalesce(p.j.status, CASE WHEN json_valid(p.j.metadata) THEN p.j.metadata ->> '$.status' END))) AS status,
        TRY_CAST(CASE WHEN json_valid(p.j.metadata) THEN p.j.metadata ->> '$.error_information.error_code' END AS INTEGER) AS err_code
    FROM parsed AS p
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.problem IS NOT NULL OR f.line_bytes > f.max_line_bytes THEN 'bad'
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL OR f.rid IS NULL OR NOT kvir_in_range(f.ts0) OR f.model IS NULL THEN 'bad'
            WHEN kvir_text(f.j.prompt_tokens) IS NOT NULL AND f.n_prompt IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.problem IS NOT NULL THEN f.problem
            WHEN f.j IS NULL THEN kvir_json_problem(f.text, f.line_bytes, f.max_line_bytes)
            WHEN f.rid IS NULL THEN 'missing field: request_id'
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0)
                THEN kvir_ts_problem(f.j.startTime, f.ts0, f.tz_iana, kvir_utc_off(f.tz_iana, f.tz_offset_min))
            WHEN f.model IS NULL THEN 'missing field: model'
            WHEN kvir_text(f.j.prompt_tokens) IS NOT NULL AND f.n_prompt IS NULL
                THEN 'prompt_tokens is not a non-negative integer: ' || left(f.j.prompt_tokens, 40)
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
    CASE WHEN j.kind = 'request' THEN j.ts1 END AS ts_end,
    0 AS ts_granularity_s,
    CASE WHEN j.kind = 'request' THEN j.account END AS account_id,
    CASE WHEN j.kind = 'request' THEN j.model END AS model,
    CASE WHEN j.kind = 'request' THEN j.n_prompt END AS prompt_tokens,
    NULL::BIGINT AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN j.n_completion END AS completion_tokens,
    CASE WHEN j.kind = 'request' AND j.status = 'failure' THEN j.err_code END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN j.status = 'success' THEN 'served'
         WHEN j.status = 'failure' AND j.err_code >= 400 AND j.err_code < 500 THEN 'rejected'
         WHEN j.status = 'failure' THEN 'failed' END AS outcome,
    CASE WHEN j.kind = 'request' THEN j.status END AS finish_reason,
    'gateway' AS role,
    s.node AS node,
    NULL::VARCHAR AS prefill_node,
    NULL::VARCHAR AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
