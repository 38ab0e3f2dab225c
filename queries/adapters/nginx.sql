-- nginx: nginx JSON access-log records (log_format ... escape=json) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"time_iso8601":"2026-09-08T12:00:00+02:00","msec":"1788861600.523","time_local":"08/Sep/2026:12:00:00 +0200","request_id":"91c4be1bbcc74281fe98aebeef4468fc","http_x_request_id":"","remote_addr":"127.0.0.1","request_method":"POST","request_uri":"/v1/chat/completions","server_protocol":"HTTP/1.1","status":"200","body_bytes_sent":"467","request_length":"334","request_time":"0.002","upstream_addr":"127.0.0.1:18015, 127.0.0.1:18013","upstream_status":"502, 200","upstream_http_x_request_id":"91c4be1bbcc74281fe98aebeef4468fc","http_x_model":"zai-org/GLM-5.3","http_x_customer_id":"cust_ng1"}
-- Required: msec|time_iso8601|time_local, status
-- Optional: request_id, http_x_request_id, upstream_http_x_request_id, request_time, request_uri, upstream_status, http_x_model, http_x_customer_id
--
-- Keys are the operator's; these are the usual variable names: msec ($msec: epoch seconds with a ms
-- fraction, the log time), time_iso8601 ($time_iso8601: *local* time with its offset), time_local
-- ('27/Aug/2026:02:00:00 +0200'), request_time (seconds), status (what the client got: 499 = the client
-- closed the connection), upstream_status (may list retries: "502, 200"), upstream_addr, the request id
-- ($upstream_http_x_request_id, else $http_x_request_id, else $request_id: the engine's id first), request_method, request_uri / uri, and headers the operator logs
-- for the model or the customer (http_x_model, http_x_customer_id, http_x_user_id, ...). nginx logs a
-- request when it ends: start = log time - request_time, to the millisecond with $msec, else to the second
-- (ts_granularity_s = 1). nginx never sees token counts: candidates. vLLM with --enable-request-id-headers
-- answers a request without X-Request-Id with a fresh uuid4 that is not the id it logs, so
-- $upstream_http_x_request_id joins by id only when nginx (or the client) sent the id
-- (`proxy_set_header X-Request-Id $request_id`: vLLM then logs chatcmpl-<id>); otherwise by time.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"msec":"VARCHAR","time_iso8601":"VARCHAR","time_local":"VARCHAR",
                  "request_time":"VARCHAR","status":"VARCHAR","upstream_status":"VARCHAR","upstream_addr":"VARCHAR",
                  "request_id":"JSON","http_x_request_id":"JSON","upstream_http_x_request_id":"JSON","request_method":"VARCHAR","request_uri":"VARCHAR",
                  "uri":"VARCHAR","request":"VARCHAR","model":"VARCHAR","http_x_model":"VARCHAR",
                  "customer_id":"JSON","user_id":"JSON","http_x_customer_id":"JSON","http_x_user_id":"JSON"}')) END AS j,
        s.served_model, s.node
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        coalesce(nullif(kvir_text(p.j.msec), '-'), nullif(kvir_text(p.j.time_iso8601), '-'), nullif(kvir_text(p.j.time_local), '-')) AS time_text,
        kvir_parse_ts(nullif(kvir_text(p.j.msec), '-'), NULL, 0) AS t_msec,
        coalesce(kvir_parse_ts(nullif(kvir_text(p.j.msec), '-'), NULL, 0),
                 CASE WHEN kvir_ts_kind(nullif(kvir_text(p.j.time_iso8601), '-')) = 'offset'
                      THEN kvir_parse_ts(nullif(kvir_text(p.j.time_iso8601), '-'), NULL, NULL) END,
                 TRY_CAST(try_strptime(nullif(kvir_text(p.j.time_local), '-'), '%d/%b/%Y:%H:%M:%S %z') AS TIMESTAMPTZ)) AS t_log,
        TRY_CAST(nullif(kvir_text(p.j.request_time), '-') AS DOUBLE) AS request_time_s,
        TRY_CAST(TRY_CAST(nullif(kvir_text(p.j.status), '-') AS DOUBLE) AS INTEGER) AS status,
        nullif(kvir_text(p.j.upstream_status), '-') AS upstream_status,
        -- the id the engine knew: the one the upstream answered with, else the client's X-Request-Id (nginx
        -- passes it on unchanged), else nginx's own $request_id
        coalesce(nullif(kvir_text(split_part((p.j.upstream_http_x_request_id ->> '$'), ', ', -1)), '-'),
                 nullif(kvir_text((p.j.http_x_request_id ->> '$')), '-'), nullif(kvir_text((p.j.request_id ->> '$')), '-')) AS rid0,
        coalesce(nullif(kvir_text(coalesce(p.j.request_uri, p.j.uri)), '-'),
                 nullif(split_part(kvir_text(p.j.request), ' ', 2), '')) AS path,
        coalesce(nullif(kvir_text(p.j.request_method), '-'), nullif(split_part(kvir_text(p.j.request), ' ', 1), '')) AS method,
        nullif(kvir_text(coalesce(p.j.model, p.j.http_x_model)), '-') AS model0,
        nullif(kvir_text(coalesce((p.j.customer_id ->> '$'), (p.j.http_x_customer_id ->> '$'), (p.j.user_id ->> '$'), (p.j.http_x_user_id ->> '$'))), '-') AS account
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN NOT coalesce(kvir_is_generation_path(f.path), true)
            THEN kvir_skip('not a generation request: ' || coalesce(f.method, '?') || ' ' || left(split_part(f.path, '?', 1), 60))
        WHEN f.time_text IS NULL THEN kvir_bad('missing field: msec / time_iso8601 / time_local')
        WHEN f.t_log IS NULL AND kvir_ts_kind(f.time_text) = 'naive'
            THEN kvir_bad('time without its offset (nginx writes $time_iso8601 with one): ' || left(f.time_text, 40))
        WHEN f.t_log IS NULL OR NOT kvir_in_range(f.t_log)
            THEN kvir_bad(coalesce(kvir_ts_problem(f.time_text, f.t_log, NULL, NULL), 'unparseable timestamp: ' || left(f.time_text, 40)))
        WHEN f.status IS NULL THEN kvir_bad('missing field: status')
        WHEN coalesce(f.model0, f.served_model) IS NULL THEN kvir_bad('missing field: model (and no --served-model)')
        WHEN nullif(kvir_text(f.j.request_time), '-') IS NOT NULL AND f.request_time_s IS NULL THEN kvir_bad('request_time is not a number: ' || left(nullif(kvir_text(f.j.request_time), '-'), 40))
        WHEN kvir_span_problem(f.request_time_s, 'request_time') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.request_time_s, 'request_time'))
    END) AS verdict,
    f.text AS raw,
    coalesce(f.rid0, 'nginx:' || f.node || ':' || f.line_no) AS request_id,
    f.t_log - coalesce(kvir_span(greatest(f.request_time_s, 0)), INTERVAL 0 SECOND) AS ts,
    -- $msec is the log time to the millisecond; $time_iso8601 and $time_local only to the second
    CASE WHEN f.t_msec IS NOT NULL THEN 0 ELSE 1 END AS ts_granularity_s,
    f.t_log AS ts_end,
    f.account AS account_id,
    coalesce(f.model0, f.served_model) AS model,
    f.status AS http_status,
    kvir_outcome_from_status(f.status) AS outcome,
    CASE WHEN f.upstream_status IS NOT NULL THEN 'upstream ' || left(f.upstream_status, 40) END AS finish_reason,
    'gateway' AS role
FROM fields AS f
