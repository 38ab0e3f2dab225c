-- sglang_text: SGLang's request log in text (Finish: obj=... out={'meta_info': ...}), alone or in the server's output, as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: [2026-08-28 10:02:20] Finish: obj=GenerateReqInput(rid='dA', sampling_params={'max_new_tokens': 1024}, stream=False, bootstrap_host='10.0.0.7', bootstrap_port=8998, bootstrap_room=7001), out={'meta_info': {'id': 'dA', 'finish_reason': {'type': 'length', 'length': 812}, 'prompt_tokens': 681281, 'weight_version': 'default', 'completion_tokens': 812, 'cached_tokens': 0, 'e2e_latency': 140.25}}
-- Required: [time] prefix, Finish: obj=, 'meta_info', 'id'
-- Optional: bootstrap_room=, 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'e2e_latency', 'finish_reason'
--
-- Lines look like `[2026-08-31 03:03:03] Finish: obj=GenerateReqInput(..., bootstrap_room=N, ...),
-- out={'meta_info': {'id': '<rid>', 'finish_reason': {'type': 'length', 'length': 812}, 'prompt_tokens':
-- 681281, ..., 'e2e_latency': 143.27}}` (Python reprs; host-local time, second resolution; optional rank
-- tags such as `TP0` in the bracket and an optional container-runtime stamp before it; SGLang 0.5.11's
-- request-log handler writes no prefix at all, so its Finish lines have no time and are quarantined,
-- counted and named, never guessed: its JSON request log carries a timestamp). The Finish time
-- is the end; start = end - e2e_latency (without e2e_latency the end stands for the start). Fields are read
-- from the *last* meta_info dict (prompt text at log levels 2/3 comes earlier in the line and cannot spoof
-- them); a Finish without prompt_tokens (the tokenizer manager's abort of a request in flight) has an unknown
-- length. Receive lines are counted, not requests; every other server line is counted as an "other log line".
-- Rejected for length: the scheduler's `Input length (N tokens) exceeds the maximum allowed length (M
-- tokens). ..., self.rid='<rid>'` line is a record of its own (as in sglang_json.sql), and an abort whose
-- message repeats that text gives its Finish record the real N.
WITH base AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        regexp_extract(i.line, '^(?:\S+\s+(?:stdout|stderr)\s+[FP]\s+|\S+\s+)?\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)?(?: [^\]]*)?\]', 1) AS stamp,
        CASE WHEN position('Finish: obj=' IN i.line) > 0 THEN 'finish'
             WHEN position('Receive: obj=' IN i.line) > 0 THEN 'receive'
             WHEN kvir_sglang_rejection(i.line).tokens <> '' THEN 'rejection' END AS event
    FROM __input__ AS i
),
finish AS (
    SELECT b.*,
        CASE WHEN b.event = 'finish' THEN regexp_extract(b.text, '.*''meta_info'': \{(.*)$', 1) END AS meta,
        -- the room as Python's repr writes it: an int, a float (1e-06: one text per number, as the JSON log's reader
        -- writes it, kvir_number_id) or a quoted string
        CASE WHEN b.event = 'finish' THEN kvir_number_id(nullif(regexp_extract(b.text,
            '.*\bbootstrap_room=(-?[0-9][0-9.eE+-]*|''[^'']*'')', 1), '')) END AS room,
        CASE WHEN b.event = 'rejection' THEN kvir_sglang_rejection(b.text) END AS rej
    FROM base AS b
),
fields AS (
    SELECT f.*,
        nullif(regexp_extract(f.meta, '''id'': ''([^'']*)''', 1), '') AS rid,
        position('''prompt_tokens'': ' IN f.meta) > 0 AS has_prompt,
        kvir_count(nullif(regexp_extract(f.meta, '''prompt_tokens'': (\d+)', 1), '')) AS logged_prompt,
        kvir_sglang_rejected_len(f.meta) AS rejected_len,
        kvir_count(nullif(regexp_extract(f.meta, '''completion_tokens'': (\d+)', 1), '')) AS completion_tokens,
        kvir_count(nullif(regexp_extract(f.meta, '''cached_tokens'': (\d+)', 1), '')) AS cached_tokens,
        position('''e2e_latency'': ' IN f.meta) > 0 AS has_latency,
        TRY_CAST(nullif(regexp_extract(f.meta, '''e2e_latency'': (-?inf|nan|[0-9.eE+-]+)', 1), '') AS DOUBLE) AS latency_s,
        nullif(regexp_extract(f.meta, '''finish_reason'': \{''type'': ''(\w+)''', 1), '') AS ftype,
        TRY_CAST(nullif(regexp_extract(f.meta, '''finish_reason'': \{[^}]*''status_code'': (\d+)', 1), '') AS INTEGER) AS fstatus,
        CASE WHEN f.event IN ('finish', 'rejection') THEN kvir_local_ts_to_utc(nullif(f.stamp, ''), kvir_naive_ts(nullif(f.stamp, '')),
                                                                 s.tz_iana, s.tz_offset_min, s.tz_spans) END AS ts_fin,
        s.tz_iana, s.tz_offset_min, s.role AS s_role
    FROM finish AS f JOIN __settings__ AS s ON s.source_id = f.source_id
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    CASE
        WHEN f.problem IS NOT NULL THEN kvir_bad(f.problem)
        WHEN trim(f.text) = '' THEN kvir_skip('blank line')
        WHEN f.event = 'receive' THEN kvir_skip('Receive line (not a request)')
        WHEN f.event IS NULL AND f.stamp = '' THEN kvir_skip('other log line (no timestamp prefix)')
        WHEN f.event IS NULL THEN kvir_skip('other log line')
        WHEN f.stamp = '' THEN kvir_bad('Finish line without a [YYYY-MM-DD HH:MM:SS] prefix: no time to place it '
                                        || '(SGLang 0.5.11 writes its request log without one; its JSON log has times)')
        WHEN f.ts_fin IS NULL OR NOT kvir_in_range(f.ts_fin)
            THEN kvir_bad(kvir_ts_problem(f.stamp, f.ts_fin, f.tz_iana, f.tz_offset_min))
        WHEN f.event = 'rejection' THEN NULL
        WHEN coalesce(f.meta, '') = '' THEN kvir_bad('Finish line without out={''meta_info'': ...} (truncated?)')
        WHEN NOT regexp_matches(f.meta, '\}\s*\}\s*$') THEN kvir_bad('Finish line cut short: out={''meta_info'': ...} not closed')
        WHEN f.rid IS NULL THEN kvir_bad('missing field: meta_info id')
        WHEN f.has_prompt AND f.logged_prompt IS NULL THEN kvir_bad('prompt_tokens is not a non-negative integer')
        WHEN f.has_latency AND f.latency_s IS NULL THEN kvir_bad('non-numeric field: meta_info e2e_latency')
        WHEN kvir_span_problem(f.latency_s, 'e2e_latency') IS NOT NULL THEN kvir_bad(kvir_span_problem(f.latency_s, 'e2e_latency'))
    END AS verdict,
    f.text AS raw,
    CASE WHEN f.event = 'rejection' THEN coalesce(nullif(f.rej.rid, ''), f.rej.rid_dq) ELSE f.rid END AS request_id,
    f.room AS bootstrap_room,
    CASE WHEN f.event = 'rejection' THEN f.ts_fin ELSE f.ts_fin - coalesce(kvir_span(f.latency_s), INTERVAL 0 SECOND) END AS ts,
    CASE WHEN f.event = 'finish' THEN f.ts_fin END AS ts_end,
    CASE WHEN f.event = 'rejection' THEN CAST(f.rej.tokens AS BIGINT) ELSE coalesce(f.rejected_len, f.logged_prompt) END AS prompt_tokens,
    f.cached_tokens,
    f.completion_tokens,
    CASE WHEN f.event = 'rejection' THEN CASE WHEN f.s_role IS DISTINCT FROM 'prefill' THEN 400 END
         ELSE kvir_sglang_status(f.ftype, f.fstatus) END AS http_status,
    CASE WHEN f.event = 'rejection' THEN CASE WHEN f.s_role IS DISTINCT FROM 'prefill' THEN 'rejected' END
         ELSE kvir_sglang_outcome(f.ftype, f.fstatus) END AS outcome,
    CASE WHEN f.event = 'rejection' THEN 'abort' ELSE f.ftype END AS finish_reason,
    CASE WHEN f.event = 'rejection' THEN 1 WHEN f.rejected_len IS NOT NULL THEN f.logged_prompt END::BIGINT AS prefill_tokens
FROM fields AS f
