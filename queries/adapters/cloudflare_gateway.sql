-- cloudflare_gateway: Cloudflare AI Gateway log objects (REST API pages or NDJSON) as request records.
-- Params: none
-- Inputs: __input__ (records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- Fields (developers.cloudflare.com, AI Gateway logs API): id, created_at (RFC 3339, UTC), model,
-- provider, status_code, success, tokens_in, tokens_out, duration (ms), cached, metadata (a JSON
-- *string* from the cf-aig-metadata header; customer ids live there). A REST page keeps its records in
-- "result": the records reader (kvir.formats.readers) numbers them 1..n in page order (source_line is
-- then the record's index); a page it cannot parse is one record whose `problem` says why.
WITH lines AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, i.problem
    FROM __input__ AS i
),
parsed AS (
    SELECT l.*,
        CASE WHEN l.problem IS NULL AND l.line_bytes <= s.max_line_bytes AND json_valid(l.text) AND json_type(l.text) = 'OBJECT'
             THEN from_json(l.text, '{"id":"VARCHAR","created_at":"VARCHAR","model":"VARCHAR","provider":"VARCHAR",
                  "status_code":"VARCHAR","success":"VARCHAR","tokens_in":"VARCHAR","tokens_out":"VARCHAR",
                  "duration":"VARCHAR","cached":"VARCHAR","metadata":"JSON"}') END AS j
    FROM lines AS l JOIN __settings__ AS s ON s.source_id = l.source_id
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
        kvir_text(m.j.id) AS rid,
        kvir_parse_ts(m.j.created_at, s.tz_iana, s.tz_offset_min) AS ts0,
        kvir_text(coalesce(m.md ->> '$.customer_id', m.md ->> '$.account_id', m.md ->> '$.user_id',
                           m.md ->> '$.user', m.md ->> '$.customer')) AS account,
        kvir_count(m.j.tokens_in) AS tokens_in,
        kvir_count(m.j.tokens_out) AS tokens_out,
        TRY_CAST(m.j.status_code AS INTEGER) AS status,
        TRY_CAST(m.j.duration AS DOUBLE) AS duration_ms
    FROM meta AS m JOIN __settings__ AS s ON s.source_id = m.source_id
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.problem IS NOT NULL OR f.line_bytes > s.max_line_bytes THEN 'bad'
            WHEN f.line_bytes = 0 OR trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL THEN 'bad'
            WHEN f.rid IS NULL OR f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) OR kvir_text(f.j.model) IS NULL THEN 'bad'
            WHEN f.j.tokens_in IS NOT NULL AND f.tokens_in IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.problem IS NOT NULL THEN f.problem
            WHEN f.line_bytes > s.max_line_bytes THEN 'record longer than ' || s.max_line_bytes || ' bytes'
            WHEN f.line_bytes = 0 OR trim(f.text) = '' THEN 'blank line'
            WHEN f.j IS NULL AND json_valid(f.text) THEN 'JSON value is not an object'
            WHEN f.j IS NULL THEN 'malformed JSON'
            WHEN f.rid IS NULL THEN 'missing field: id'
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_ts_problem(f.j.created_at, f.ts0, s.tz_iana, s.tz_offset_min)
            WHEN kvir_text(f.j.model) IS NULL THEN 'missing field: model'
            WHEN f.j.tokens_in IS NOT NULL AND f.tokens_in IS NULL THEN 'tokens_in is not a non-negative integer'
        END AS reason
    FROM fields AS f JOIN __settings__ AS s ON s.source_id = f.source_id
)
SELECT
    s.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    j.reason,
    CASE WHEN j.kind = 'request' THEN j.rid END AS request_id,
    NULL::VARCHAR AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts0 END AS ts,
    CASE WHEN j.kind = 'request' AND j.duration_ms >= 0
         THEN j.ts0 + kvir_span(j.duration_ms / 1000.0) END AS ts_end,
    0 AS ts_granularity_s,
    CASE WHEN j.kind = 'request' THEN j.account END AS account_id,
    CASE WHEN j.kind = 'request' THEN kvir_text(j.j.model) END AS model,
    CASE WHEN j.kind = 'request' THEN j.tokens_in END AS prompt_tokens,
    NULL::BIGINT AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN j.tokens_out END AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN j.status END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN j.status IS NOT NULL THEN kvir_outcome_from_status(j.status)
         WHEN lower(j.j.success) = 'true' THEN 'served'
         WHEN lower(j.j.success) = 'false' THEN 'failed' END AS outcome,
    CASE WHEN j.kind = 'request' AND lower(j.j.cached) = 'true' THEN 'gateway-cache' END AS finish_reason,
    'gateway' AS role,
    s.node AS node,
    NULL::VARCHAR AS prefill_node,
    NULL::VARCHAR AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
