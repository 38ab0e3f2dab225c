-- envoy: Envoy / Istio / Envoy AI Gateway JSON access-log records as request records (candidates without token keys).
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"start_time":"2026-09-07T10:00:00.000Z","method":"POST","path":"/v1/chat/completions","protocol":"HTTP/1.1","response_code":200,"response_flags":"-","bytes_received":2900000,"bytes_sent":1500,"duration":5000,"upstream_host":"10.1.2.3:8000","request_id":"9a1f6c1e-0001","gen_ai.request.model":"zai-org/GLM-5.3","gen_ai.response.model":"zai-org/GLM-5.3","gen_ai.usage.input_tokens":681281,"gen_ai.usage.output_tokens":9,"x-user-id":"cust_ev1"}
-- Required: start_time
-- Optional: gen_ai.request.model, gen_ai.response.model (else the source's served model), request_id, path, response_code, response_flags, duration, gen_ai.usage.input_tokens, gen_ai.usage.output_tokens, x-user-id
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
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"start_time":"VARCHAR","method":"VARCHAR","path":"VARCHAR",
                  "response_code":"VARCHAR","response_flags":"VARCHAR","duration":"VARCHAR","request_id":"JSON",
                  "x_request_id":"JSON","x-request-id":"JSON","upstream_host":"VARCHAR",
                  "gen_ai.request.model":"VARCHAR","gen_ai.response.model":"VARCHAR",
                  "gen_ai.usage.input_tokens":"VARCHAR","gen_ai.usage.output_tokens":"VARCHAR",
                  "llm_input_token":"VARCHAR","llm_output_token":"VARCHAR","model_name_override":"VARCHAR",
                  "x-ai-eg-model":"VARCHAR","model":"VARCHAR",
                  "user_id":"JSON","customer_id":"JSON","x-user-id":"JSON","x-customer-id":"JSON"}')) END AS j,
        s.served_model, s.node
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        nullif(kvir_text(p.j.start_time), '-') AS start_text,
        kvir_parse_ts(nullif(kvir_text(p.j.start_time), '-'), NULL, 0) AS ts0,
        nullif(kvir_text(coalesce((p.j.request_id ->> '$'), (p.j.x_request_id ->> '$'), (p.j."x-request-id" ->> '$'))), '-') AS rid0,
        TRY_CAST(TRY_CAST(nullif(kvir_text(p.j.response_code), '-') AS DOUBLE) AS INTEGER) AS status,
        nullif(kvir_text(p.j.response_flags), '-') AS flags,
        TRY_CAST(nullif(kvir_text(p.j.duration), '-') AS DOUBLE) AS duration_ms,
        nullif(kvir_text(coalesce(p.j."gen_ai.usage.input_tokens", p.j.llm_input_token)), '-') AS input_text,
        kvir_count(nullif(kvir_text(coalesce(p.j."gen_ai.usage.input_tokens", p.j.llm_input_token)), '-')) AS n_input,
        kvir_count(nullif(kvir_text(coalesce(p.j."gen_ai.usage.output_tokens", p.j.llm_output_token)), '-')) AS n_output,
        nullif(kvir_text(coalesce(p.j."gen_ai.response.model", p.j.model_name_override, p.j."gen_ai.request.model",
                                  p.j."x-ai-eg-model", p.j.model)), '-') AS model0,
        nullif(kvir_text(coalesce((p.j.customer_id ->> '$'), (p.j."x-customer-id" ->> '$'), (p.j.user_id ->> '$'), (p.j."x-user-id" ->> '$'))), '-') AS account,
        nullif(kvir_text(p.j.path), '-') AS path
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN NOT coalesce(kvir_is_generation_path(f.path), true)
            THEN kvir_skip('not a generation request: ' || coalesce(f.j.method, '?') || ' ' || left(split_part(f.path, '?', 1), 60))
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_bad(kvir_ts_problem(f.start_text, f.ts0, NULL, 0))
        WHEN coalesce(f.model0, f.served_model) IS NULL THEN kvir_bad('missing field: model (and no --served-model)')
        WHEN f.input_text IS NOT NULL AND f.n_input IS NULL THEN kvir_bad('input token count is not a non-negative integer')
        WHEN nullif(kvir_text(f.j.duration), '-') IS NOT NULL AND f.duration_ms IS NULL THEN kvir_bad('duration is not a number: ' || left(nullif(kvir_text(f.j.duration), '-'), 40))
        WHEN kvir_span_problem(f.duration_ms / 1000.0, 'duration') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.duration_ms / 1000.0, 'duration'))
    END) AS verdict,
    f.text AS raw,
    coalesce(f.rid0, 'envoy:' || f.node || ':' || f.line_no) AS request_id,
    f.ts0 AS ts,
    CASE WHEN f.duration_ms >= 0 THEN f.ts0 + kvir_span(f.duration_ms / 1000.0) END AS ts_end,
    f.account AS account_id,
    coalesce(f.model0, f.served_model) AS model,
    f.n_input AS prompt_tokens,
    f.n_output AS completion_tokens,
    f.status AS http_status,
    kvir_proxy_outcome(f.status, f.flags) AS outcome,
    f.flags AS finish_reason,
    'gateway' AS role
FROM fields AS f
