-- envoy: Envoy / Istio / Envoy AI Gateway JSON access-log records as request records (candidates without token keys).
-- Params: none
-- Inputs: __input__ (records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- json_format keys are the operator's; these are Envoy's / Istio's usual names: start_time (%START_TIME%:
-- RFC 3339, UTC by default; an epoch number is read by magnitude), method, path, response_code,
-- response_flags (DC = downstream disconnect: the client went away; UF/UC/UT/URX/NR = upstream failures),
-- duration (ms), request_id (x-request-id), upstream_host. Envoy AI Gateway adds the request's model and
-- token counts from its dynamic metadata: gen_ai.request.model / gen_ai.response.model /
-- gen_ai.usage.input_tokens / gen_ai.usage.output_tokens (its documented access-log keys), or the raw
-- metadata names llm_input_token / llm_output_token / model_name_override / x-ai-eg-model. Without a token
-- key a record is a candidate. Customer: user_id, customer_id, x-user-id or x-customer-id (a header the
-- operator logs). "-" and null mean missing. Non-generation paths (/health, /metrics) are counted only.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND i.line_bytes <= s.max_line_bytes AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"start_time":"VARCHAR","method":"VARCHAR","path":"VARCHAR",
                  "response_code":"VARCHAR","response_flags":"VARCHAR","duration":"VARCHAR","request_id":"VARCHAR",
                  "x_request_id":"VARCHAR","x-request-id":"VARCHAR","upstream_host":"VARCHAR",
                  "gen_ai.request.model":"VARCHAR","gen_ai.response.model":"VARCHAR",
                  "gen_ai.usage.input_tokens":"VARCHAR","gen_ai.usage.output_tokens":"VARCHAR",
                  "llm_input_token":"VARCHAR","llm_output_token":"VARCHAR","model_name_override":"VARCHAR",
                  "x-ai-eg-model":"VARCHAR","model":"VARCHAR",
                  "user_id":"VARCHAR","customer_id":"VARCHAR","x-user-id":"VARCHAR","x-customer-id":"VARCHAR"}')) END AS j,
        s.max_line_bytes, s.served_model
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        nullif(kvir_text(p.j.start_time), '-') AS start_text,
        kvir_parse_ts(nullif(kvir_text(p.j.start_time), '-'), NULL, 0) AS ts0,
        nullif(kvir_text(coalesce(p.j.request_id, p.j.x_request_id, p.j."x-request-id")), '-') AS rid0,
        TRY_CAST(TRY_CAST(nullif(kvir_text(p.j.response_code), '-') AS DOUBLE) AS INTEGER) AS status,
        nullif(kvir_text(p.j.response_flags), '-') AS flags,
        TRY_CAST(nullif(kvir_text(p.j.duration), '-') AS DOUBLE) AS duration_ms,
        nullif(kvir_text(coalesce(p.j."gen_ai.usage.input_tokens", p.j.llm_input_token)), '-') AS input_text,
        kvir_count(nullif(kvir_text(coalesce(p.j."gen_ai.usage.input_tokens", p.j.llm_input_token)), '-')) AS n_input,
        kvir_count(nullif(kvir_text(coalesce(p.j."gen_ai.usage.output_tokens", p.j.llm_output_token)), '-')) AS n_output,
        nullif(kvir_text(coalesce(p.j."gen_ai.response.model", p.j.model_name_override, p.j."gen_ai.request.model",
                                  p.j."x-ai-eg-model", p.j.model)), '-') AS model0,
        nullif(kvir_text(coalesce(p.j.customer_id, p.j."x-customer-id", p.j.user_id, p.j."x-user-id")), '-') AS account,
        nullif(kvir_text(p.j.path), '-') AS path
    FROM parsed AS p
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.problem IS NOT NULL OR f.line_bytes > f.max_line_bytes THEN 'bad'
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL THEN 'bad'
            WHEN NOT coalesce(kvir_is_generation_path(f.path), true) THEN 'skip'
            WHEN NOT kvir_in_range(f.ts0) OR coalesce(f.model0, f.served_model) IS NULL THEN 'bad'
            WHEN f.input_text IS NOT NULL AND f.n_input IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.problem IS NOT NULL THEN f.problem
            WHEN f.j IS NULL THEN kvir_json_problem(f.text, f.line_bytes, f.max_line_bytes)
            WHEN NOT coalesce(kvir_is_generation_path(f.path), true)
                THEN 'not a generation request: ' || coalesce(f.j.method, '?') || ' ' || left(split_part(f.path, '?', 1), 60)
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_ts_problem(f.start_text, f.ts0, NULL, 0)
            WHEN coalesce(f.model0, f.served_model) IS NULL THEN 'missing field: model (and no --served-model)'
            WHEN f.input_text IS NOT NULL AND f.n_input IS NULL THEN 'input token count is not a non-negative integer'
        END AS reason
    FROM fields AS f
)
SELECT
    j.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    CASE WHEN j.kind <> 'request' THEN j.reason END AS reason,
    CASE WHEN j.kind = 'request' THEN coalesce(j.rid0, 'envoy:' || s.node || ':' || j.line_no) END AS request_id,
    NULL::VARCHAR AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts0 END AS ts,
    CASE WHEN j.kind = 'request' AND j.duration_ms >= 0
         THEN j.ts0 + kvir_span(j.duration_ms / 1000.0) END AS ts_end,
    0 AS ts_granularity_s,
    CASE WHEN j.kind = 'request' THEN j.account END AS account_id,
    CASE WHEN j.kind = 'request' THEN coalesce(j.model0, s.served_model) END AS model,
    CASE WHEN j.kind = 'request' THEN j.n_input END AS prompt_tokens,
    NULL::BIGINT AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN j.n_output END AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN j.status END AS http_status,
    CASE WHEN j.kind = 'request' THEN kvir_proxy_outcome(j.status, j.flags) END AS outcome,
    CASE WHEN j.kind = 'request' THEN j.flags END AS finish_reason,
    'gateway' AS role,
    s.node AS node,
    NULL::VARCHAR AS prefill_node,
    NULL::VARCHAR AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
