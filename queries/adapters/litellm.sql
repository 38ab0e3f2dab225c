-- litellm: LiteLLM proxy SpendLogs rows (CSV export, /spend/logs JSON, NDJSON) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- Example: {"request_id": "chatcmpl-153ee8f3b1c846beb7168a915c7fb778", "call_type": "acompletion", "spend": 0.1362618, "total_tokens": 681288, "prompt_tokens": 681281, "completion_tokens": 7, "startTime": "2026-09-02T10:00:02.405", "endTime": "2026-09-02T10:00:02.983", "model": "hosted_vllm/zai-org/GLM-5.3", "model_id": "glm53-pd-0", "model_group": "zai-org/GLM-5.3", "custom_llm_provider": "hosted_vllm", "api_base": "http://127.0.0.1:18011/v1/chat/completions", "user": "u_internal", "cache_hit": "None", "team_id": "team_1", "end_user": "cust_a", "status": "success", "request_duration_ms": 577, "metadata": {"user_api_key_alias": "prod", "status": "success"}}
-- Required: request_id, startTime, model_group|model
-- Optional: endTime, prompt_tokens, completion_tokens, custom_llm_provider, end_user, user, team_id, status, metadata, metadata.usage_object.prompt_tokens_details.cached_tokens
--
-- Columns of LiteLLM_SpendLogs (schema.prisma; the proxy's own spend-log payload, get_logging_payload):
-- request_id (the provider's response id on success; LiteLLM's call id on failure), startTime / endTime
-- (timestamp(3) WITHOUT time zone holding UTC: naive strings are UTC, never the host's zone), model (the
-- deployment's model, provider-prefixed: hosted_vllm/zai-org/GLM-5.3), model_group (the public model name
-- the client asked for: the name an incident's aliases use), custom_llm_provider, prompt_tokens,
-- completion_tokens, end_user (the customer id; '' when none), user, team_id, api_key (hashed), status
-- (success | failure, nullable), metadata (jsonb: error_information.error_code on failures).
-- model = model_group, else model without its `<custom_llm_provider>/` prefix; model_other = that deployment
-- model (prefix stripped) when a model group is there too, so an alias of either name finds the row. account_id = end_user, else
-- user, else team_id. Outcome: success = served; failure = rejected for a 4xx error code, failed otherwise;
-- no status = unknown. A failure row's prompt_tokens is not the engine's count (LiteLLM's own estimate of
-- the request, or 0): its length is unknown. SpendLogs has no HTTP status column: it is only set from a
-- failure's error code.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"request_id":"JSON","startTime":"VARCHAR","endTime":"VARCHAR",
                  "model":"VARCHAR","model_group":"VARCHAR","prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "end_user":"JSON","user":"JSON","team_id":"JSON","status":"VARCHAR","metadata":"VARCHAR",
                  "custom_llm_provider":"VARCHAR",
                  "cache_hit":"VARCHAR","call_type":"VARCHAR"}')) END AS j,
        s.tz_iana, s.tz_offset_min
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text((p.j.request_id ->> '$')) AS rid,
        kvir_parse_ts(p.j.startTime, p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts0,
        kvir_parse_ts(p.j.endTime, p.tz_iana, kvir_utc_off(p.tz_iana, p.tz_offset_min)) AS ts1,
        kvir_count(p.j.prompt_tokens) AS n_prompt,
        kvir_count(p.j.completion_tokens) AS n_completion,
        kvir_text(coalesce(kvir_text((p.j.end_user ->> '$')), kvir_text((p.j.user ->> '$')), kvir_text((p.j.team_id ->> '$')))) AS account,
        coalesce(kvir_text(p.j.model_group),
                 CASE WHEN starts_with(p.j.model, kvir_text(p.j.custom_llm_provider) || '/')
                      THEN kvir_text(substr(p.j.model, length(kvir_text(p.j.custom_llm_provider)) + 2)) END,
                 kvir_text(p.j.model)) AS model,
        CASE WHEN kvir_text(p.j.model_group) IS NOT NULL THEN nullif(
                 coalesce(CASE WHEN starts_with(p.j.model, kvir_text(p.j.custom_llm_provider) || '/')
                               THEN kvir_text(substr(p.j.model, length(kvir_text(p.j.custom_llm_provider)) + 2)) END,
                          kvir_text(p.j.model)), kvir_text(p.j.model_group)) END AS model_other,
        lower(kvir_text(coalesce(p.j.status, CASE WHEN json_valid(p.j.metadata) THEN p.j.metadata ->> '$.status' END))) AS status,
        TRY_CAST(CASE WHEN json_valid(p.j.metadata) THEN p.j.metadata ->> '$.error_information.error_code' END AS INTEGER) AS err_code,
        -- the provider's usage as LiteLLM kept it (spend_tracking_utils: clean_metadata["usage_object"]); a null
        -- prompt_tokens_details (vLLM without --enable-prompt-tokens-details) leaves the count unknown, never 0
        kvir_count(CASE WHEN json_valid(p.j.metadata)
                        THEN p.j.metadata ->> '$.usage_object.prompt_tokens_details.cached_tokens' END) AS n_cached
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN f.rid IS NULL THEN kvir_bad('missing field: request_id')
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0)
            THEN kvir_bad(kvir_ts_problem(f.j.startTime, f.ts0, f.tz_iana, kvir_utc_off(f.tz_iana, f.tz_offset_min)))
        WHEN f.model IS NULL THEN kvir_bad('missing field: model')
        WHEN kvir_text(f.j.prompt_tokens) IS NOT NULL AND f.n_prompt IS NULL
            THEN kvir_bad('prompt_tokens is not a non-negative integer: ' || left(f.j.prompt_tokens, 40))
    END) AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.ts0 AS ts,
    kvir_ts_extra_ns(f.j.startTime) AS ts_extra_ns,
    f.ts1 AS ts_end,
    f.account AS account_id,
    f.model,
    f.model_other,
    CASE WHEN f.status IS DISTINCT FROM 'failure' THEN f.n_prompt END AS prompt_tokens,   -- a failure's: not the engine's
    CASE WHEN f.status IS DISTINCT FROM 'failure' THEN f.n_cached END AS cached_tokens,
    f.n_completion AS completion_tokens,
    CASE WHEN f.status = 'failure' THEN f.err_code END AS http_status,
    CASE WHEN f.status = 'success' THEN 'served'
         WHEN f.status = 'failure' AND f.err_code >= 400 AND f.err_code < 500 THEN 'rejected'
         WHEN f.status = 'failure' THEN 'failed' END AS outcome,
    f.status AS finish_reason,
    'gateway' AS role
FROM fields AS f
