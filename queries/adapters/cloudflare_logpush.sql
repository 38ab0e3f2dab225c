-- cloudflare_logpush: Cloudflare Logpush ai_gateway_events records (NDJSON) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"Cached":false,"Endpoint":"workers-ai/v1/chat/completions","Gateway":"prod","Metadata":{"customer_id":"cust_lp1"},"Metrics":{"cost":0.0042,"durationMs":5000},"Model":"@cf/zai-org/glm-5.3","Provider":"workers-ai","RateLimited":false,"RequestedModel":"@cf/zai-org/glm-5.3","RoutingDecisionID":"","RoutingReason":"","StatusCode":200,"Timestamp":1788256800000000000}
-- Required: Timestamp, Model|RequestedModel
-- Optional: StatusCode, RateLimited, Cached, Metadata, Metrics
--
-- Documented fields (developers.cloudflare.com, Logpush dataset ai_gateway_events): Cached, Endpoint,
-- Gateway, Metadata (object: the cf-aig-metadata header; customer ids), Metrics (object, e.g.
-- {"cost":..,"durationMs":..}), Model (served), Provider, RateLimited, RequestBody/ResponseBody
-- (encrypted), RequestedModel, RoutingDecisionID, RoutingReason, StatusCode, Timestamp. Timestamp
-- follows the job's output_options.timestamp_format: unixnano (default, integer ns), unix (integer s) or
-- rfc3339 (string): the unit is found by magnitude (kvir_parse_ts). No token count and no request id
-- are documented: each record is a candidate (id logpush:<file>:<line>) joined to engine logs by time,
-- and it brings its customer id to the request it matches.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"Timestamp":"VARCHAR","Model":"VARCHAR","RequestedModel":"VARCHAR",
                  "Provider":"VARCHAR","Gateway":"VARCHAR","Endpoint":"VARCHAR","StatusCode":"VARCHAR",
                  "Cached":"VARCHAR","RateLimited":"VARCHAR","Metadata":"JSON","Metrics":"JSON"}')) END AS j,
        s.node
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
meta AS (
    SELECT p.*,
        CASE WHEN p.j.Metadata IS NULL THEN NULL
             WHEN json_type(p.j.Metadata) = 'OBJECT' THEN p.j.Metadata
             WHEN json_type(p.j.Metadata) = 'VARCHAR' AND json_valid(p.j.Metadata ->> '$') THEN (p.j.Metadata ->> '$')::JSON
        END AS md
    FROM parsed AS p
),
fields AS (
    SELECT m.*,
        kvir_parse_ts(m.j.Timestamp, NULL, 0) AS ts0,
        kvir_text(coalesce(m.md ->> '$.customer_id', m.md ->> '$.account_id', m.md ->> '$.user_id',
                           m.md ->> '$.user', m.md ->> '$.customer')) AS account,
        TRY_CAST(m.j.StatusCode AS INTEGER) AS status,
        TRY_CAST(m.j.Metrics ->> '$.durationMs' AS DOUBLE) AS duration_ms,
        kvir_text(coalesce(m.j.Model, m.j.RequestedModel)) AS model
    FROM meta AS m
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_bad(kvir_ts_problem(f.j.Timestamp, f.ts0, NULL, 0))
        WHEN f.model IS NULL THEN kvir_bad('missing field: Model')
        WHEN f.j.StatusCode IS NOT NULL AND f.status IS NULL THEN kvir_bad('StatusCode is not an integer')
        WHEN kvir_text(f.j.Metrics ->> '$.durationMs') IS NOT NULL AND f.duration_ms IS NULL THEN kvir_bad('Metrics.durationMs is not a number: ' || left(kvir_text(f.j.Metrics ->> '$.durationMs'), 40))
        WHEN kvir_span_problem(f.duration_ms / 1000.0, 'Metrics.durationMs') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.duration_ms / 1000.0, 'Metrics.durationMs'))
    END) AS verdict,
    f.text AS raw,
    'logpush:' || f.node || ':' || f.line_no AS request_id,
    f.ts0 AS ts,
    kvir_ts_extra_ns(f.j.Timestamp) AS ts_extra_ns,
    CASE WHEN f.duration_ms >= 0 THEN f.ts0 + kvir_span(f.duration_ms / 1000.0) END AS ts_end,
    f.account AS account_id,
    f.model,
    coalesce(f.status, CASE WHEN lower(f.j.RateLimited) = 'true' THEN 429 END) AS http_status,
    CASE WHEN lower(f.j.RateLimited) = 'true' THEN 'rejected'
         ELSE kvir_outcome_from_status(f.status) END AS outcome,
    CASE WHEN lower(f.j.Cached) = 'true' THEN 'gateway-cache' END AS finish_reason,
    'gateway' AS role
FROM fields AS f
