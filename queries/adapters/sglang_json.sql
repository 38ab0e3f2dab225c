-- sglang_json: SGLang's request log in JSON (--log-requests-format json), alone or in the server's stdout, as request records.
-- Params: none
-- Inputs: __input__ (parsed lines: source_id, line_no, problem, text, payload, j, rej; and the source's tz_iana, tz_offset_min, tz_spans and role, attached by kvir: Format.settings_columns; from queries/parse/sglang_json_lines.sql or sglang_json_native.sql)
-- Example: [2026-08-28 10:02:20] {"timestamp": "2026-08-28T10:02:20.250307", "event": "request.finished", "rid": "dA", "obj": {"rid": "dA", "bootstrap_host": "10.0.0.7", "bootstrap_port": 8998, "bootstrap_room": 7001}, "out": {"meta_info": {"id": "dA", "finish_reason": {"type": "length", "length": 812}, "prompt_tokens": 681281, "weight_version": "default", "completion_tokens": 812, "cached_tokens": 0, "e2e_latency": 140.25}}}
-- Required: timestamp, event, rid|obj.rid|out.meta_info.id
-- Optional: obj.bootstrap_room, out.meta_info.prompt_tokens, out.meta_info.completion_tokens, out.meta_info.cached_tokens, out.meta_info.e2e_latency, out.meta_info.finish_reason
--
-- Each record is one JSON object {"timestamp": <host-local naive ISO>, "event": "request.received" |
-- "request.finished", "rid", "obj": {...}, "out": {"meta_info": {...}}}; from 0.5.12 the request log's handler
-- writes `[YYYY-MM-DD HH:MM:SS] ` (host-local, no rank tag) before it (0.5.11: nothing), and a server's stdout
-- interleaves it with the server's own lines, which are counted (skip). Only request.finished is a request; its
-- timestamp is the finish, so the start is timestamp - e2e_latency (without e2e_latency the finish stands for
-- the start: it started no later). The model is the server's served model; PD copies share obj.bootstrap_room.
-- An abort carries its HTTP status in finish_reason.status_code (400 = rejected, none = client abort); a
-- request without prompt_tokens (the tokenizer manager's abort of a request in flight) has an unknown length.
-- Rejected for length: the scheduler's `Input length (N tokens) exceeds the maximum allowed length (M
-- tokens). ..., self.rid='<rid>'` line is a record of its own (rid, N, the stub's 1 prefill token; rejected,
-- unless the node is a PD prefill, where leaking builds forwarded the stub and its Finish says what
-- happened), and an abort whose message repeats that text gives its Finish record the real N.
--
-- Written for speed (it is the 10^8-line format): each line is parsed once, before this query (by kvir's
-- line reader and queries/parse/sglang_json_lines.sql, or for a big file of bare JSON lines by DuckDB's
-- own JSON reader, queries/parse/sglang_json_native.sql: both give the same rows); the common case is
-- decided by the first WHEN, and reasons are only worked out for the rows that are not requests;
-- the source's settings (tz_*, role) come with the input: kvir attaches them by a join, or for a file
-- read by DuckDB's own reader as constants (a join there would lose the file order that numbers the
-- lines: kvir.ingest.native).
WITH fields AS (
    SELECT p.source_id, p.line_no, p.problem, p.text, p.payload, p.j,
        p.j.event = 'request.finished' AS finished,
        p.rej.tokens <> '' AS rejection,
        kvir_text(coalesce(p.j.rid, p.j.obj.rid, p.j.out.meta_info.id)) AS rid,
        kvir_text(p.j.obj.bootstrap_room) AS room,
        kvir_count(p.j.out.meta_info.prompt_tokens) AS logged_prompt,
        CASE WHEN p.j.out.meta_info.finish_reason.type = 'abort'
             THEN kvir_sglang_rejected_len(p.j.out.meta_info.finish_reason.message) END AS rejected_len,
        kvir_count(p.j.out.meta_info.completion_tokens) AS completion_tokens,
        kvir_count(p.j.out.meta_info.cached_tokens) AS cached_tokens,
        TRY_CAST(p.j.out.meta_info.e2e_latency AS DOUBLE) AS latency_s,
        p.j.out.meta_info.finish_reason.type AS ftype,
        TRY_CAST(p.j.out.meta_info.finish_reason.status_code AS INTEGER) AS fstatus,
        coalesce(p.j.timestamp, nullif(p.rej.stamp, '')) AS stamp,
        p.rej, p.tz_iana, p.tz_offset_min, p.role AS s_role, p.tz_spans
    FROM __input__ AS p
),
timed AS (
    SELECT f.*, kvir_local_ts_to_utc(f.stamp, kvir_naive_ts(f.stamp), f.tz_iana, f.tz_offset_min, f.tz_spans) AS ts_fin
    FROM fields AS f
)
SELECT
    t.source_id,
    t.line_no AS source_line,
    CASE
        WHEN t.finished AND t.rid IS NOT NULL AND kvir_in_range(t.ts_fin)       -- the common case first
             AND (t.logged_prompt IS NOT NULL OR t.j.out.meta_info.prompt_tokens IS NULL)
             AND (t.latency_s >= 0 AND kvir_span(t.latency_s) IS NOT NULL OR t.j.out.meta_info.e2e_latency IS NULL) THEN NULL
        WHEN t.problem IS NOT NULL THEN kvir_bad(t.problem)
        WHEN t.rejection AND kvir_in_range(t.ts_fin) THEN NULL
        WHEN t.rejection THEN kvir_bad(kvir_ts_problem(t.stamp, t.ts_fin, t.tz_iana, t.tz_offset_min))
        WHEN t.j IS NULL AND t.payload IS NOT NULL THEN kvir_unparsed(t.payload)
        WHEN t.j IS NULL AND trim(t.text) = '' THEN kvir_skip('blank line')
        WHEN t.j IS NULL THEN kvir_skip('other log line (not a request-log record)')
        WHEN t.j.event = 'request.received' THEN kvir_skip('request.received event (not a request)')
        WHEN t.j.event IS NULL THEN kvir_bad('missing field: event')
        WHEN t.j.event <> 'request.finished' THEN kvir_skip('other request-log event: ' || left(t.j.event, 40))
        WHEN t.rid IS NULL THEN kvir_bad('missing field: rid')
        WHEN t.ts_fin IS NULL OR NOT kvir_in_range(t.ts_fin)
            THEN kvir_bad(kvir_ts_problem(t.stamp, t.ts_fin, t.tz_iana, t.tz_offset_min))
        WHEN t.logged_prompt IS NULL THEN kvir_bad('prompt_tokens is not a non-negative integer')
        WHEN t.latency_s IS NULL THEN kvir_bad('non-numeric field: out.meta_info.e2e_latency')
        WHEN kvir_span_problem(t.latency_s, 'e2e_latency') IS NOT NULL THEN kvir_bad(kvir_span_problem(t.latency_s, 'e2e_latency'))
        ELSE kvir_bad('unreadable record') END AS verdict,
    t.text AS raw,
    CASE WHEN t.rejection THEN coalesce(nullif(t.rej.rid, ''), t.rej.rid_dq) ELSE t.rid END AS request_id,
    t.room AS bootstrap_room,
    CASE WHEN t.rejection THEN t.ts_fin ELSE t.ts_fin - coalesce(kvir_span(t.latency_s), INTERVAL 0 SECOND) END AS ts,
    CASE WHEN t.rejection THEN NULL ELSE t.ts_fin END AS ts_end,   -- not NOT t.rejection: NULL on every other line
    CASE WHEN t.rejection THEN CAST(t.rej.tokens AS BIGINT) ELSE coalesce(t.rejected_len, t.logged_prompt) END AS prompt_tokens,
    t.cached_tokens,
    t.completion_tokens,
    CASE WHEN t.rejection THEN CASE WHEN t.s_role IS DISTINCT FROM 'prefill' THEN 400 END
         ELSE kvir_sglang_status(t.ftype, t.fstatus) END AS http_status,
    CASE WHEN t.rejection THEN CASE WHEN t.s_role IS DISTINCT FROM 'prefill' THEN 'rejected' END
         ELSE kvir_sglang_outcome(t.ftype, t.fstatus) END AS outcome,
    CASE WHEN t.rejection THEN 'abort' ELSE t.ftype END AS finish_reason,
    CASE WHEN t.rejection THEN 1 WHEN t.rejected_len IS NOT NULL THEN t.logged_prompt END::BIGINT AS prefill_tokens
FROM timed AS t
