-- sglang_router: the SGLang router / model gateway (sgl-router, smg) access log as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: 2026-08-30 10:00:05  INFO http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1 request_id="chatcmpl-Nze1CSENFb7YR2OqCbYP3B6f" status_code=200 latency="5.000000000s"}: sglang_router_rs::response: src/middleware.rs:257: finished processing request
-- Required: timestamp, finished processing request (or request failed with ...), request_id, status_code, latency
-- Optional: method, uri (a non-generation path is counted, not a request)
--
-- Rust tracing, timer ChronoUtc("%Y-%m-%d %H:%M:%S"): UTC, second resolution, no zone marker.
-- Text:  2026-08-27 00:02:31  INFO http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1
--        request_id="chatcmpl-..." status_code=200 latency="151.123456789s"}: sglang_router_rs::response:
--        src/middleware.rs:257: finished processing request
--        (WARN "request failed with client error", ERROR "... server error"; ANSI colours stripped)
-- JSON:  {"timestamp":"2026-08-27 00:02:31","level":"INFO","message":"finished processing request",
--         "target":"sglang_router_rs::response","span":{"method":..,"uri":..,"request_id":..,
--         "status_code":200,"latency":"151.12s","name":"http_request"},...}
-- The end line is the request: end = the stamp, start = end - latency. No model (the router fronts the
-- served model: settings.served_model), no tokens, no customer: a candidate. The router's request_id is
-- not the workers' rid, so it joins engine logs by time (queries/case/evidence_join.sql). Start lines,
-- non-generation paths (/health, /metrics) and the router's other lines are counted, not requests.
WITH lines AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS raw_text,
        CASE WHEN position(chr(27) IN i.line) > 0 THEN regexp_replace(i.line, '\x1b\[[0-9;]*m', '', 'g')
             ELSE i.line END AS text
    FROM __input__ AS i
),
parsed AS (
    SELECT l.*,
        CASE WHEN starts_with(ltrim(l.text), '{') THEN TRY(from_json(l.text,
            '{"timestamp":"VARCHAR","level":"VARCHAR","message":"VARCHAR","target":"VARCHAR",
              "fields":{"message":"VARCHAR","method":"VARCHAR","uri":"VARCHAR","request_id":"JSON",
                        "status_code":"VARCHAR","latency":"VARCHAR"},
              "span":{"name":"VARCHAR","method":"VARCHAR","uri":"VARCHAR","request_id":"JSON",
                      "status_code":"VARCHAR","latency":"VARCHAR"}}')) END AS j,
        regexp_extract(l.text, '^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?)\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+(.*)$',
                       ['stamp', 'level', 'rest']) AS t
    FROM lines AS l
),
fields AS (
    SELECT p.source_id, p.line_no, p.problem, p.raw_text, p.j IS NOT NULL AS is_json,
        p.j IS NULL AND starts_with(ltrim(p.text), '{') AS bad_json,
        CASE WHEN p.j IS NOT NULL THEN p.j.timestamp ELSE nullif(p.t.stamp, '') END AS stamp,
        CASE WHEN p.j IS NOT NULL THEN coalesce(p.j.message, p.j.fields.message) ELSE p.t.rest END AS msg,
        CASE WHEN p.j IS NOT NULL THEN coalesce(p.j.span.method, p.j.fields.method)
             ELSE nullif(regexp_extract(p.t.rest, '\bhttp_request\{[^}]*\bmethod=([A-Z]+)', 1), '') END AS method,
        CASE WHEN p.j IS NOT NULL THEN coalesce(p.j.span.uri, p.j.fields.uri)
             ELSE nullif(regexp_extract(p.t.rest, '\bhttp_request\{[^}]*\buri=(\S+?)[ }]', 1), '') END AS uri,
        kvir_text(CASE WHEN p.j IS NOT NULL THEN coalesce((p.j.span.request_id ->> '$'), (p.j.fields.request_id ->> '$'))
             ELSE nullif(regexp_extract(p.t.rest, '\bhttp_request\{[^}]*\brequest_id="?([^" }]+)', 1), '') END) AS rid,
        TRY_CAST(CASE WHEN p.j IS NOT NULL THEN coalesce(p.j.span.status_code, p.j.fields.status_code)
             ELSE nullif(regexp_extract(p.t.rest, '\bhttp_request\{[^}]*\bstatus_code=(\d+)', 1), '') END AS INTEGER) AS status,
        kvir_duration_s(CASE WHEN p.j IS NOT NULL THEN coalesce(p.j.span.latency, p.j.fields.latency)
             ELSE nullif(regexp_extract(p.t.rest, '\bhttp_request\{[^}]*\blatency="?([0-9.]+(?:ns|µs|us|ms|s))', 1), '') END) AS latency_s,
        p.text
    FROM parsed AS p
),
timed AS (
    SELECT f.*,
        CASE WHEN f.msg LIKE '%finished processing request%' OR f.msg LIKE '%request failed with%' THEN 'end'
             WHEN f.msg LIKE '%started processing request%' THEN 'start' END AS event,
        kvir_parse_ts(f.stamp, s.tz_iana, kvir_utc_off(s.tz_iana, s.tz_offset_min)) AS ts_end0,
        s.tz_iana, s.tz_offset_min
    FROM fields AS f JOIN __settings__ AS s ON s.source_id = f.source_id
)
SELECT
    t.source_id,
    t.line_no AS source_line,
    CASE
        WHEN t.problem IS NOT NULL THEN kvir_bad(t.problem)
        WHEN trim(t.text) = '' THEN kvir_skip('blank line')
        WHEN t.bad_json THEN kvir_unparsed(t.text)
        WHEN t.event = 'start' THEN kvir_skip('router start line (the end line is the request)')
        WHEN t.event IS NULL AND t.stamp IS NULL AND NOT t.is_json THEN kvir_skip('other log line (no timestamp prefix)')
        WHEN t.event IS NULL THEN kvir_skip('other router line')
        WHEN NOT coalesce(kvir_is_generation_path(t.uri), true)
            THEN kvir_skip('not a generation request: ' || coalesce(t.method, '?') || ' ' || left(split_part(t.uri, '?', 1), 60))
        WHEN t.rid IS NULL THEN kvir_bad('missing field: request_id')
        WHEN t.status IS NULL THEN kvir_bad('missing field: status_code')
        WHEN t.latency_s IS NULL THEN kvir_bad('missing or unreadable field: latency')
        WHEN kvir_span_problem(t.latency_s, 'latency') IS NOT NULL THEN kvir_bad(kvir_span_problem(t.latency_s, 'latency'))
        WHEN t.ts_end0 IS NULL OR NOT kvir_in_range(t.ts_end0)
            THEN kvir_bad(kvir_ts_problem(t.stamp, t.ts_end0, t.tz_iana, kvir_utc_off(t.tz_iana, t.tz_offset_min)))
    END AS verdict,
    t.raw_text AS raw,
    t.rid AS request_id,
    t.ts_end0 - kvir_span(t.latency_s) AS ts,
    t.ts_end0 AS ts_end,
    t.status AS http_status,
    kvir_outcome_from_status(t.status) AS outcome,
    'gateway' AS role
FROM timed AS t
