-- haproxy_json: HAProxy access-log records written by a JSON log-format as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: {"request_date":"04/Dec/2026:16:37:54 -0600","unique_id":"0e37e26b-c6fd-4e85-be7e-50b2c95a80e5","client_ip":"127.0.0.1","frontend":"fe_api","backend":"vllm","server":"vllm0","TR":0,"Tw":0,"Tc":0,"Tr":35,"Ta":35,"status_code":200,"bytes_read":898,"termination_state":"----","http_method":"POST","http_path":"/v1/chat/completions","customer_id":"cust_a"}
-- Required: request_date|Ts, status_code
-- Optional: unique_id, Ta, termination_state, http_method, http_path, customer_id, model
--
-- HAProxy 2.6 (Debian's) has no JSON encoder: operators write a JSON template of its log variables, e.g.
-- '{"request_date":"%trl","unique_id":"%ID","Ta":%Ta,"status_code":%ST,"termination_state":"%tsc",
-- "http_method":"%HM","http_path":"%HP","customer_id":"%[capture.req.hdr(0),json(utf8s)]"}'. Keys are the
-- operator's; these are HAProxy's own names for the variables (its log docs' field table; HAProxy 3's JSON
-- encoder uses them too): request_date (%trl: the request's start, local time with its offset, to the second;
-- %tr / %trg write milliseconds and no offset: naive, the source's zone applies), or Ts (%Ts, epoch seconds) and
-- ms; unique_id (%ID; with `http-request set-header X-Request-Id %[unique-id]` vLLM logs chatcmpl-<it>: an id
-- join), Ta (%Ta: active time in ms, -1 when not reached), status_code (%ST), termination_state (%tsc: C or c
-- first = the client went away: aborted), http_method / http_path (or http_request, the request line %r), and
-- headers the operator captures for the customer (customer_id, user_id) or the model (model). HAProxy never
-- sees token counts: candidates, joined by id or time (queries/case/evidence_join.sql).
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"request_date":"VARCHAR","Ts":"VARCHAR","ms":"VARCHAR","unique_id":"JSON",
                  "request_id":"JSON","Ta":"VARCHAR","status_code":"VARCHAR","termination_state":"VARCHAR",
                  "http_method":"VARCHAR","http_path":"VARCHAR","http_request":"VARCHAR","customer_id":"JSON",
                  "user_id":"JSON","model":"VARCHAR"}')) END AS j,
        s.served_model, s.node, s.tz_iana, s.tz_offset_min
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        nullif(kvir_text(p.j.request_date), '-') AS date_text,
        coalesce(
            TRY_CAST(try_strptime(nullif(kvir_text(p.j.request_date), '-'), ['%d/%b/%Y:%H:%M:%S %z', '%d/%b/%Y:%H:%M:%S.%g %z'])
                     AS TIMESTAMPTZ),
            kvir_local_to_utc(try_strptime(nullif(kvir_text(p.j.request_date), '-'), ['%d/%b/%Y:%H:%M:%S.%g', '%d/%b/%Y:%H:%M:%S']),
                              p.tz_iana, p.tz_offset_min),
            kvir_parse_ts(CASE WHEN kvir_text(p.j.Ts) IS NOT NULL
                               THEN kvir_text(p.j.Ts) || coalesce('.' || lpad(kvir_text(p.j.ms), 3, '0'), '') END, NULL, 0)) AS t_start,
        try_strptime(nullif(kvir_text(p.j.request_date), '-'), ['%d/%b/%Y:%H:%M:%S.%g', '%d/%b/%Y:%H:%M:%S']) AS naive_start,
        regexp_matches(coalesce(p.j.request_date, ''), ':[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]') OR kvir_text(p.j.ms) IS NOT NULL
            AS has_ms,
        TRY_CAST(nullif(kvir_text(p.j.Ta), '-') AS DOUBLE) AS ta_ms,
        TRY_CAST(nullif(kvir_text(p.j.status_code), '-') AS INTEGER) AS status,
        nullif(kvir_text(p.j.termination_state), '-') AS tsc,
        nullif(kvir_text(coalesce(p.j.unique_id, p.j.request_id) ->> '$'), '-') AS rid0,
        coalesce(nullif(kvir_text(p.j.http_path), '-'), nullif(split_part(kvir_text(p.j.http_request), ' ', 2), '')) AS path,
        coalesce(nullif(kvir_text(p.j.http_method), '-'), nullif(split_part(kvir_text(p.j.http_request), ' ', 1), '')) AS method,
        nullif(kvir_text(p.j.model), '-') AS model0,
        nullif(kvir_text(coalesce(p.j.customer_id, p.j.user_id) ->> '$'), '-') AS account
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN NOT coalesce(kvir_is_generation_path(f.path), true)
            THEN kvir_skip('not a generation request: ' || coalesce(f.method, '?') || ' ' || left(split_part(f.path, '?', 1), 60))
        WHEN f.date_text IS NULL AND kvir_text(f.j.Ts) IS NULL THEN kvir_bad('missing field: request_date / Ts')
        WHEN f.t_start IS NULL AND f.naive_start IS NOT NULL
            THEN kvir_bad(coalesce(kvir_local_problem(f.naive_start, f.tz_iana, f.tz_offset_min), 'unparseable request_date'))
        WHEN f.t_start IS NULL OR NOT kvir_in_range(f.t_start)
            THEN kvir_bad('unparseable request_date / Ts: ' || left(coalesce(f.date_text, f.j.Ts), 40))
        WHEN f.status IS NULL THEN kvir_bad('missing field: status_code')
        WHEN f.ta_ms IS NOT NULL AND f.ta_ms >= 0 AND kvir_span_problem(f.ta_ms / 1000.0, 'Ta') IS NOT NULL
            THEN kvir_bad(kvir_span_problem(f.ta_ms / 1000.0, 'Ta'))
        WHEN coalesce(f.model0, f.served_model) IS NULL THEN kvir_bad('missing field: model (and no --served-model)')
    END) AS verdict,
    f.text AS raw,
    coalesce(f.rid0, 'haproxy:' || f.node || ':' || f.line_no) AS request_id,
    f.t_start AS ts,
    CASE WHEN f.has_ms THEN 0 ELSE 1 END AS ts_granularity_s,     -- %trl is to the second
    CASE WHEN f.ta_ms >= 0 THEN f.t_start + kvir_span(f.ta_ms / 1000.0) END AS ts_end,
    f.account AS account_id,
    coalesce(f.model0, f.served_model) AS model,
    f.status AS http_status,
    CASE WHEN left(f.tsc, 1) IN ('C', 'c') THEN 'aborted' ELSE kvir_outcome_from_status(f.status) END AS outcome,
    CASE WHEN f.tsc IS NOT NULL AND f.tsc <> '----' THEN 'termination ' || left(f.tsc, 4) END AS finish_reason,
    'gateway' AS role
FROM fields AS f
