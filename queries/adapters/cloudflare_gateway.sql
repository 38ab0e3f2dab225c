-- cloudflare_gateway: Cloudflare AI Gateway log objects (REST API pages or NDJSON) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"id": "01GW1", "cached": false, "created_at": "2026-09-09T19:39:59.999000Z", "duration": 5000, "model": "@cf/zai-org/glm-5.3", "path": "workers-ai/v1/chat/completions", "provider": "workers-ai", "success": true, "tokens_in": 681281, "tokens_out": 10, "cost": 0.06, "custom_cost": null, "metadata": "{\"customer_id\": \"cust_gw1\"}", "model_type": "text-generation", "request_content_type": null, "request_type": "chat", "response_content_type": null, "status_code": 200, "step": null}
-- Required: id, created_at, model
-- Optional: duration, tokens_in, tokens_out, status_code, success, cached, metadata
--
-- Fields (developers.cloudflare.com, AI Gateway logs API): id, created_at (RFC 3339, UTC), model,
-- provider, status_code, success, tokens_in, tokens_out, duration (ms), cached, metadata (a JSON
-- *string* from the cf-aig-metadata header; customer ids live there). A REST page keeps its records in
-- "result": the records reader (kvir.formats.readers) numbers them 1..n in page order (source_line is
-- then the record's index); a page it cannot parse is one record whose `problem` says why.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND json_valid(i.line) AND json_type(i.line) = 'OBJECT'
             THEN from_json(i.line, '{"id":"JSON","created_at":"VARCHAR","model":"VARCHAR","provider":"VARCHAR",
                  "status_code":"VARCHAR","success":"VARCHAR","tokens_in":"VARCHAR","tokens_out":"VARCHAR",
                  "duration":"VARCHAR","cached":"VARCHAR","metadata":"JSON"}') END AS j
    FROM __input__ AS i
),
meta AS (
    SELECT p.*,
        -- metadata is documented as a JSON-encoded string; tolerate an object too
        CASE WHEN p.j.metadata IS NULL THEN NULL
             WHEN json_type(p.j.metadata) = 'VARCHAR' AND json_valid(p.j.metadata ->> '$') THEN (p.j.metadata ->> '$')::JSON
             WHEN json_type(p.j.metadata) = 'OBJECT' THEN p.j.metadata END AS md
    FROM parsed AS p
),
fields AS (
    SELECT m.*,
        kvir_text((m.j.id ->> '$')) AS rid,
        kvir_parse_ts(m.j.created_at, s.tz_iana, s.tz_offset_min) AS ts0,
        kvir_text(coalesce(m.md ->> '$.customer_id', m.md ->> '$.account_id', m.md ->> '$.user_id',
                           m.md ->> '$.user', m.md ->> '$.customer')) AS account,
        kvir_count(m.j.tokens_in) AS tokens_in,
        kvir_count(m.j.tokens_out) AS tokens_out,
        TRY_CAST(m.j.status_code AS INTEGER) AS status,
        TRY_CAST(m.j.duration AS DOUBLE) AS duration_ms,
        s.tz_iana, s.tz_offset_min
    FROM meta AS m JOIN __settings__ AS s ON s.source_id = m.source_id
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN f.rid IS NULL THEN kvir_bad('missing field: id')
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0)
            THEN kvir_bad(kvir_ts_problem(f.j.created_at, f.ts0, f.tz_iana, f.tz_offset_min))
        WHEN kvir_text(f.j.model) IS NULL THEN kvir_bad('missing field: model')
        WHEN f.j.tokens_in IS NOT NULL AND f.tokens_in IS NULL THEN kvir_bad('tokens_in is not a non-negative integer')
        WHEN kvir_text(f.j.duration) IS NOT NULL AND f.duration_ms IS NULL THEN kvir_bad('duration is not a number: ' || left(kvir_text(f.j.duration), 40))
        WHEN kvir_span_problem(f.duration_ms / 1000.0, 'duration') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.duration_ms / 1000.0, 'duration'))
    END) AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.ts0 AS ts,
    kvir_ts_extra_ns(f.j.created_at) AS ts_extra_ns,
    CASE WHEN f.duration_ms >= 0 THEN f.ts0 + kvir_span(f.duration_ms / 1000.0) END AS ts_end,
    f.account AS account_id,
    kvir_text(f.j.model) AS model,
    f.tokens_in AS prompt_tokens,
    f.tokens_out AS completion_tokens,
    f.status AS http_status,
    CASE WHEN f.status IS NOT NULL THEN kvir_outcome_from_status(f.status)
         WHEN lower(f.j.success) = 'true' THEN 'served'
         WHEN lower(f.j.success) = 'false' THEN 'failed' END AS outcome,
    CASE WHEN lower(f.j.cached) = 'true' THEN 'gateway-cache' END AS finish_reason,
    'gateway' AS role
FROM fields AS f
