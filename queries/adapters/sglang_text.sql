-- sglang_text: SGLang request-log lines in text (Finish: obj=... out={'meta_info': ...}) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- Lines look like `[2026-08-31 03:03:03] Finish: obj=GenerateReqInput(..., bootstrap_room=N, ...),
-- out={'meta_info': {'id': '<rid>', 'finish_reason': {'type': 'length', 'length': 812}, 'prompt_tokens':
-- 681281, ..., 'e2e_latency': 143.27}}` (Python reprs; host-local time, second resolution; optional rank
-- tags such as `TP0` in the bracket and an optional container-runtime stamp before it). The Finish time
-- is the end; start = end - e2e_latency. Fields are read from the *last* meta_info dict (prompt text at
-- log levels 2/3 comes earlier in the line and cannot spoof them). Receive lines are counted, not requests;
-- every other server line is counted as an "other log line".
WITH base AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        regexp_extract(i.line, '^(?:\S+\s+)?\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)?(?: [^\]]*)?\]', 1) AS stamp,
        CASE WHEN position('Finish: obj=' IN i.line) > 0 THEN 'finish'
             WHEN position('Receive: obj=' IN i.line) > 0 THEN 'receive' END AS event
    FROM __input__ AS i
),
finish AS (
    SELECT b.*,
        CASE WHEN b.event = 'finish' THEN regexp_extract(b.text, '.*''meta_info'': \{(.*)$', 1) END AS meta,
        CASE WHEN b.event = 'finish' THEN nullif(regexp_extract(b.text, '.*\bbootstrap_room=(\d+)', 1), '') END AS room
    FROM base AS b
),
fields AS (
    SELECT f.*,
        nullif(regexp_extract(f.meta, '''id'': ''([^'']*)''', 1), '') AS rid,
        kvir_count(nullif(regexp_extract(f.meta, '''prompt_tokens'': (\d+)', 1), '')) AS prompt_tokens,
        kvir_count(nullif(regexp_extract(f.meta, '''completion_tokens'': (\d+)', 1), '')) AS completion_tokens,
        kvir_count(nullif(regexp_extract(f.meta, '''cached_tokens'': (\d+)', 1), '')) AS cached_tokens,
        TRY_CAST(nullif(regexp_extract(f.meta, '''e2e_latency'': ([0-9.eE+-]+)', 1), '') AS DOUBLE) AS latency_s,
        nullif(regexp_extract(f.meta, '''finish_reason'': \{''type'': ''(\w+)''', 1), '') AS ftype,
        TRY_CAST(nullif(regexp_extract(f.meta, '''finish_reason'': \{[^}]*''status_code'': (\d+)', 1), '') AS INTEGER) AS fstatus,
        CASE WHEN f.event = 'finish' THEN kvir_local_ts_to_utc(nullif(f.stamp, ''), kvir_naive_ts(nullif(f.stamp, '')),
                                                                 s.tz_iana, s.tz_offset_min, s.tz_spans) END AS ts_fin,
        s.tz_iana, s.tz_offset_min
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
        WHEN f.stamp = '' THEN kvir_bad('Finish line without a [YYYY-MM-DD HH:MM:SS] prefix')
        WHEN f.ts_fin IS NULL OR NOT kvir_in_range(f.ts_fin)
            THEN kvir_bad(kvir_ts_problem(f.stamp, f.ts_fin, f.tz_iana, f.tz_offset_min))
        WHEN coalesce(f.meta, '') = '' THEN kvir_bad('Finish line without out={''meta_info'': ...} (truncated?)')
        WHEN f.rid IS NULL THEN kvir_bad('missing field: meta_info id')
        WHEN f.prompt_tokens IS NULL THEN kvir_bad('missing field: meta_info prompt_tokens')
        WHEN f.latency_s IS NULL THEN kvir_bad('missing field: meta_info e2e_latency')
        WHEN f.latency_s < 0 THEN kvir_bad('negative e2e_latency')
        WHEN kvir_span(f.latency_s) IS NULL THEN kvir_bad('implausible e2e_latency (over 10^7 s)')
    END AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.room AS bootstrap_room,
    f.ts_fin - kvir_span(f.latency_s) AS ts,
    f.ts_fin AS ts_end,
    f.prompt_tokens,
    f.cached_tokens,
    f.completion_tokens,
    kvir_sglang_status(f.ftype, f.fstatus) AS http_status,
    kvir_sglang_outcome(f.ftype, f.fstatus) AS outcome,
    f.ftype AS finish_reason
FROM fields AS f
