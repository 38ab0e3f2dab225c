-- nginx_combined: nginx text access-log lines in the combined format (+ $request_time) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: 127.0.0.1 - - [03/Dec/2026:04:29:07 -0600] "POST /v1/chat/completions HTTP/1.1" 200 695 "-" "OpenAI/Python 3.57.0" 0.145
-- Required: $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
-- Optional: "$http_referer" "$http_user_agent", then $request_time (a bare number with three decimals, or rt=N), $request_id (32 hex)
--
-- The line operators get from `log_format combined` with $request_time appended (or the `rt=$request_time
-- uct=... urt=...` form of nginx's own examples). $time_local is the *end* of the request, with its offset,
-- to the second: start = time - request_time, known to one second (ts_granularity_s = 1). Without
-- $request_time the start is not known: the log time is taken (`kvir formats nginx-combined` says so).
-- status 499: the client closed the connection. No model (--served-model), no customer, no token counts:
-- candidates, joined to engine requests by time (queries/case/evidence_join.sql).
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        regexp_extract(i.line, '^(\S+) \S+ (\S+) \[([^\]]+)\] "((?:[^"\\]|\\.)*)" (\d{3}) (\d+|-)(?: "(?:[^"\\]|\\.)*" "(?:[^"\\]|\\.)*")?(.*)$',
                       ['addr', 'user', 'time_local', 'request', 'status', 'bytes', 'rest']) AS m,
        s.served_model
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        nullif(p.m.time_local, '') AS time_text,
        TRY_CAST(try_strptime(nullif(p.m.time_local, ''), '%d/%b/%Y:%H:%M:%S %z') AS TIMESTAMPTZ) AS t_log,
        TRY_CAST(coalesce(nullif(regexp_extract(p.m.rest, '(?:^|\s)rt=([0-9]+\.[0-9]+)', 1), ''),
                          nullif(regexp_extract(p.m.rest, '^\s+"?([0-9]+\.[0-9]{3})"?(?:\s|$)', 1), '')) AS DOUBLE) AS request_time_s,
        nullif(regexp_extract(p.m.rest, '(?:^|\s)"?([0-9a-f]{32})"?(?:\s|$)', 1), '') AS rid0,
        TRY_CAST(nullif(p.m.status, '') AS INTEGER) AS status,
        nullif(split_part(p.m.request, ' ', 1), '') AS method,
        nullif(split_part(p.m.request, ' ', 2), '') AS path
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    CASE
        WHEN f.problem IS NOT NULL THEN kvir_bad(f.problem)
        WHEN trim(f.text) = '' THEN kvir_skip('blank line')
        WHEN f.time_text IS NULL THEN kvir_bad('not a combined-format access line')
        WHEN NOT coalesce(kvir_is_generation_path(f.path), false)
            THEN kvir_skip('not a generation request: ' || coalesce(f.method, '?') || ' ' || left(split_part(coalesce(f.path, '-'), '?', 1), 60))
        WHEN f.t_log IS NULL OR NOT kvir_in_range(f.t_log)
            THEN kvir_bad('unparseable [$time_local]: ' || left(f.time_text, 40))
        WHEN f.served_model IS NULL THEN kvir_bad('missing field: model (the combined format names none: --served-model)')
    END AS verdict,
    f.text AS raw,
    coalesce(f.rid0, 'nginx:' || f.source_id || ':' || f.line_no) AS request_id,
    f.t_log - coalesce(kvir_span(greatest(f.request_time_s, 0)), INTERVAL 0 SECOND) AS ts,
    1 AS ts_granularity_s,
    f.t_log AS ts_end,
    f.served_model AS model,
    f.status AS http_status,
    kvir_outcome_from_status(f.status) AS outcome,
    'gateway' AS role
FROM fields AS f
