-- haproxy_http: HAProxy's default HTTP log format (option httplog) lines as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: 127.0.0.1:58380 [04/Dec/2026:16:38:00.634] fe_api vllm/vllm0 0/0/0/18/18 200 874 - - ---- 1/1/0/0/0 0/0 {cust_a} "POST /v1/chat/completions HTTP/1.1"
-- Required: client_ip:port [request_date] frontend backend/server TR/Tw/Tc/Tr/Ta status bytes cookies termination_state conns queues "request"
-- Optional: a syslog header (<pri>, date, host, haproxy[pid]:), {captured request headers} {captured response headers}
--
-- The format `option httplog` declares (HAProxy's configuration manual, "HTTP log format"):
-- "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r",
-- as HAProxy writes it to stdout (`log stdout format raw`) or after a syslog header (rfc3164, or a syslog
-- daemon's file). [%tr] is the request's start (its first byte), host-local time to the millisecond without an
-- offset: the source's zone is needed. Ta is the active time in ms (-1: not reached), the termination state's
-- first character C or c says the client went away (aborted). Captured headers are positional (which header
-- the operator captured is in haproxy.cfg, not the line): not read. No id, no model (--served-model), no
-- customer, no token counts: candidates, joined to engine requests by time (queries/case/evidence_join.sql).
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        regexp_extract(i.line,
            '^(?:<[0-9]+>)?(?:[A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} (?:\S+ )?)?(?:\S+\[[0-9]+\]: )?'
            || '(\S+):([0-9]+) \[([0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)\] (\S+) (\S+)/(\S+) '
            || '(-?[0-9]+)/(-?[0-9]+)/(-?[0-9]+)/(-?[0-9]+)/\+?(-?[0-9]+) (-?[0-9]+) \+?([0-9]+) \S+ \S+ (\S{4}) '
            || '[0-9]+/[0-9]+/[0-9]+/[0-9]+/\+?[0-9]+ [0-9]+/[0-9]+(?: \{[^}]*\}){0,2} "((?:[^"\\]|\\.)*)"',
            ['ip', 'port', 'date', 'frontend', 'backend', 'server', 'tr', 'tw', 'tc', 'tresp', 'ta', 'status', 'bytes',
             'tsc', 'request']) AS m,
        s.served_model, s.node, s.tz_iana, s.tz_offset_min
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        try_strptime(nullif(p.m.date, ''), ['%d/%b/%Y:%H:%M:%S.%g', '%d/%b/%Y:%H:%M:%S']) AS naive_start,
        TRY_CAST(nullif(p.m.ta, '') AS DOUBLE) AS ta_ms,
        TRY_CAST(nullif(p.m.status, '') AS INTEGER) AS status,
        nullif(split_part(p.m.request, ' ', 1), '') AS method,
        nullif(split_part(p.m.request, ' ', 2), '') AS path
    FROM parsed AS p
),
timed AS (
    SELECT f.*, kvir_local_to_utc(f.naive_start, f.tz_iana, f.tz_offset_min) AS t_start FROM fields AS f
)
SELECT
    t.source_id,
    t.line_no AS source_line,
    CASE
        WHEN t.problem IS NOT NULL THEN kvir_bad(t.problem)
        WHEN trim(t.text) = '' THEN kvir_skip('blank line')
        WHEN t.m.date = '' THEN kvir_skip('other log line (not an HTTP log line)')
        WHEN NOT coalesce(kvir_is_generation_path(t.path), false)
            THEN kvir_skip('not a generation request: ' || coalesce(t.method, '?') || ' ' || left(split_part(coalesce(t.path, '-'), '?', 1), 60))
        WHEN t.naive_start IS NULL THEN kvir_bad('unparseable [request_date]: ' || left(t.m.date, 40))
        WHEN t.t_start IS NULL THEN kvir_bad(kvir_local_problem(t.naive_start, t.tz_iana, t.tz_offset_min))
        WHEN NOT kvir_in_range(t.t_start) THEN kvir_bad('timestamp outside 1990-2100: ' || left(t.m.date, 40))
        WHEN t.served_model IS NULL THEN kvir_bad('missing field: model (the HTTP log format names none: --served-model)')
    END AS verdict,
    t.text AS raw,
    'haproxy:' || t.source_id || ':' || t.line_no AS request_id,
    t.t_start AS ts,
    CASE WHEN t.ta_ms >= 0 THEN t.t_start + kvir_span(t.ta_ms / 1000.0) END AS ts_end,
    t.served_model AS model,
    CASE WHEN t.status >= 0 THEN t.status END AS http_status,
    CASE WHEN left(t.m.tsc, 1) IN ('C', 'c') THEN 'aborted' ELSE kvir_outcome_from_status(CASE WHEN t.status >= 0 THEN t.status END) END
        AS outcome,
    CASE WHEN t.m.tsc <> '----' THEN 'termination ' || t.m.tsc END AS finish_reason,
    'gateway' AS role
FROM timed AS t
