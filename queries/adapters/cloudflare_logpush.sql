-- cloudflare_logpush: Cloudflare Logpush ai_gateway_events records (NDJSON) as candidate request records.
-- Params: none
-- Inputs: __input__ (records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
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
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND i.line_bytes <= s.max_line_bytes AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"Timestamp":"VARCHAR","Model":"VARCHAR","RequestedModel":"VARCHAR",
                  "Provider":"VARCHAR","Gateway":"VARCHAR","Endpoint":"VARCHAR","StatusCode":"VARCHAR",
                  "Cached":"VARCHAR","RateLimited":"VARCHAR","Metadata":"JSON","Metrics":"JSON"}')) END AS j,
        s.max_line_bytes
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
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.problem IS NOT NULL OR f.line_bytes > f.max_line_bytes THEN 'bad'
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL OR NOT kvir_in_range(f.ts0) OR f.model IS NULL THEN 'bad'
            WHEN f.j.StatusCode IS NOT NULL AND f.status IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.problem IS NOT NULL THEN f.problem
            WHEN f.j IS NULL THEN kvir_json_problem(f.text, f.line_bytes, f.max_line_bytes)
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_ts_problem(f.j.Timestamp, f.ts0, NULL, 0)
            WHEN f.model IS NULL THEN 'missing field: Model'
            WHEN f.j.StatusCode IS NOT NULL AND f.status IS NULL THEN 'StatusCode is not an integer'
        END AS reason
    FROM fields AS f
)
SELECT
    j.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    CASE WHEN j.kind <> 'request' THEN j.reason END AS reason,
    CASE WHEN j.kind = 'request' THEN 'logpush:' || s.node || ':' || j.line_no END AS request_id,
    NULL::VARCHAR AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts0 END AS ts,
    CASE WHEN j.kind = 'request' AND j.duration_ms >= 0
         THEN j.ts0 + kvir_span(j.duration_ms / 1000.0) END AS ts_end,
    0 AS ts_granularity_s,
    CASE WHEN j.kind = 'request' THEN j.account END AS account_id,
    CASE WHEN j.kind = 'request' THEN j.model END AS model,
    NULL::BIGINT AS prompt_tokens,
    NULL::BIGINT AS cached_tokens,
    NULL::BIGINT AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN coalesce(j.status, CASE WHEN lower(j.j.RateLimited) = 'true' THEN 429 END) END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN lower(j.j.RateLimited) = 'true' THEN 'rejected'
         ELSE kvir_outcome_from_status(j.status) END AS outcome,
    CASE WHEN j.kind = 'request' AND lower(j.j.Cached) = 'true' THEN 'gateway-cache' END AS finish_reason,
    'gateway' AS role,
    s.node AS node,
    NULL::VARCHAR AS prefill_node,
    NULL::VARCHAR AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
