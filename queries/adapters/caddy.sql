-- caddy: Caddy's structured access log (log { format json }) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"level":"info","ts":1796423885.5918329,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","remote_port":"55094","proto":"HTTP/1.1","method":"POST","host":"127.0.0.1:36677","uri":"/v1/chat/completions","headers":{"X-Customer-Id":["cust_a"],"Content-Type":["application/json"]}},"user_id":"","duration":0.016817316,"size":715,"status":200,"resp_headers":{"Content-Type":["application/json"],"X-Request-Id":["f536fa58-0e2c-4e5b-b7a8-f04c2eff5f34"]}}
-- Required: ts, logger http.log.access*, request.method, request.uri, status
-- Optional: duration, request.headers.X-Request-Id, resp_headers.X-Request-Id, request.headers.X-Customer-Id, request.headers.X-User-Id, user_id
--
-- What Caddy 2.6 (Debian's) writes for every request it handled (logger http.log.access.<name>, msg "handled
-- request"): ts (epoch seconds with a fraction, when the response was done: the request's end), duration
-- (seconds), status (0: the client went away first), request {method, uri, headers (canonical names, each a
-- list; Authorization and Cookie redacted)}, resp_headers (the upstream's answer: vLLM with
-- --enable-request-id-headers echoes the X-Request-Id it got, which Caddy sends with `header_up X-Request-Id
-- {http.request.uuid}`: vLLM then logs chatcmpl-<it>, an id join; without it vLLM's header is a fresh uuid that
-- joins nothing, and the record joins by time), user_id (an authenticated user). The customer from the request
-- header the operator uses (X-Customer-Id, X-User-Id, X-Tenant-Id) or user_id. start = ts - duration. No
-- model (--served-model unless an X-Model header names one), no token counts: candidates
-- (queries/case/evidence_join.sql). Caddy's other log lines are counted, not requests.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{') AND json_valid(i.line) THEN i.line::JSON END AS j,
        s.served_model, s.node
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        p.j ->> '$.logger' AS logger,
        p.j ->> '$.ts' AS ts_text,
        kvir_parse_ts(p.j ->> '$.ts', NULL, 0) AS t_log,
        TRY_CAST(p.j ->> '$.duration' AS DOUBLE) AS duration_s,
        TRY_CAST(p.j ->> '$.status' AS INTEGER) AS status,
        p.j ->> '$.request.method' AS method,
        p.j ->> '$.request.uri' AS path,
        kvir_text(coalesce(p.j -> '$.resp_headers."X-Request-Id"[0]', p.j -> '$.request.headers."X-Request-Id"[0]') ->> '$') AS rid0,
        kvir_text(coalesce(p.j -> '$.request.headers."X-Customer-Id"[0]', p.j -> '$.request.headers."X-User-Id"[0]',
                           p.j -> '$.request.headers."X-Tenant-Id"[0]', nullif(p.j -> '$.user_id', '""'::JSON)) ->> '$') AS account,
        kvir_text(p.j ->> '$.request.headers."X-Model"[0]') AS model0
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN NOT starts_with(coalesce(f.logger, ''), 'http.log.access') THEN kvir_skip('other Caddy log line (not an access record)')
        WHEN NOT coalesce(kvir_is_generation_path(f.path), true)
            THEN kvir_skip('not a generation request: ' || coalesce(f.method, '?') || ' ' || left(split_part(f.path, '?', 1), 60))
        WHEN f.ts_text IS NULL THEN kvir_bad('missing field: ts')
        WHEN f.t_log IS NULL OR NOT kvir_in_range(f.t_log) THEN kvir_bad(kvir_ts_problem(f.ts_text, f.t_log, NULL, 0))
        WHEN f.status IS NULL THEN kvir_bad('missing field: status')
        WHEN f.j ->> '$.duration' IS NOT NULL AND f.duration_s IS NULL
            THEN kvir_bad('duration is not a number: ' || left(f.j ->> '$.duration', 40))
        WHEN kvir_span_problem(f.duration_s, 'duration') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.duration_s, 'duration'))
        WHEN coalesce(f.model0, f.served_model) IS NULL THEN kvir_bad('missing field: model (and no --served-model)')
    END) AS verdict,
    f.text AS raw,
    coalesce(f.rid0, 'caddy:' || f.node || ':' || f.line_no) AS request_id,
    f.t_log - coalesce(kvir_span(f.duration_s), INTERVAL 0 SECOND) AS ts,
    f.t_log AS ts_end,
    f.account AS account_id,
    coalesce(f.model0, f.served_model) AS model,
    f.status AS http_status,
    kvir_outcome_from_status(f.status) AS outcome,
    'gateway' AS role
FROM fields AS f
