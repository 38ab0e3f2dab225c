-- sglang_text: SGLang request-log lines in text (Finish: obj=... out={'meta_info': ...}) as request records.
-- Params: none
-- Inputs: __input__ (numbered text lines: source_id, line_no, line, line_bytes), __settings__ (one row per source_id: its settings)
--
-- Lines look like `[2026-08-31 03:03:03] Finish: obj=GenerateReqInput(..., bootstrap_room=N, ...),
-- out={'meta_info': {'id': '<rid>', 'finish_reason': {'type': 'length', 'length': 812}, 'prompt_tokens':
-- 681281, ..., 'e2e_latency': 143.27}}` (Python reprs; host-local time, second resolution; optional rank
-- tags such as `TP0` in the bracket and an optional container-runtime stamp before it). The Finish time
-- is the end; start = end - e2e_latency. Fields are read from the *last* meta_info dict (prompt text at
-- log levels 2/3 comes earlier in the line and cannot spoof them). Receive lines are counted, not requests;
-- every other server line is counted as an "other log line".
WITH lines AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text
    FROM __input__ AS i
),
base AS (
    SELECT l.*,
        regexp_extract(l.text, '^(?:\S+\s+)?\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)?(?: [^\]]*)?\]', 1) AS stamp,
        CASE WHEN position('Finish: obj=' IN l.text) > 0 THEN 'finish'
             WHEN position('Receive: obj=' IN l.text) > 0 THEN 'receive' END AS event
    FROM lines AS l
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
                                                                 s.tz_iana, s.tz_offset_min, s.tz_spans) END AS ts_fin
    FROM finish AS f JOIN __settings__ AS s ON s.source_id = f.source_id
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.line_bytes > s.max_line_bytes THEN 'bad'
            WHEN f.line_bytes = 0 OR trim(f.text) = '' THEN 'skip'
            WHEN f.event IS DISTINCT FROM 'finish' THEN 'skip'
            WHEN f.ts_fin IS NULL OR NOT kvir_in_range(f.ts_fin) OR coalesce(f.meta, '') = '' OR f.rid IS NULL
                 OR f.prompt_tokens IS NULL OR f.latency_s IS NULL OR f.latency_s < 0 OR kvir_span(f.latency_s) IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.line_bytes > s.max_line_bytes THEN 'line longer than ' || s.max_line_bytes || ' bytes'
            WHEN f.line_bytes = 0 OR trim(f.text) = '' THEN 'blank line'
            WHEN f.event = 'receive' THEN 'Receive line (not a request)'
            WHEN f.event IS NULL AND f.stamp = '' THEN 'other log line (no timestamp prefix)'
            WHEN f.event IS NULL THEN 'other log line'
            WHEN f.stamp = '' THEN 'Finish line without a [YYYY-MM-DD HH:MM:SS] prefix'
            WHEN f.ts_fin IS NULL OR NOT kvir_in_range(f.ts_fin) THEN kvir_ts_problem(f.stamp, f.ts_fin, s.tz_iana, s.tz_offset_min)
            WHEN coalesce(f.meta, '') = '' THEN 'Finish line without out={''meta_info'': ...} (truncated?)'
            WHEN f.rid IS NULL THEN 'missing field: meta_info id'
            WHEN f.prompt_tokens IS NULL THEN 'missing field: meta_info prompt_tokens'
            WHEN f.latency_s IS NULL THEN 'missing field: meta_info e2e_latency'
            WHEN f.latency_s < 0 THEN 'negative e2e_latency'
            WHEN kvir_span(f.latency_s) IS NULL THEN 'implausible e2e_latency (over 10^7 s)'
        END AS reason
    FROM fields AS f JOIN __settings__ AS s ON s.source_id = f.source_id
)
SELECT
    s.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    j.reason,
    CASE WHEN j.kind = 'request' THEN j.rid END AS request_id,
    CASE WHEN j.kind = 'request' THEN j.room END AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts_fin - kvir_span(j.latency_s) END AS ts,
    CASE WHEN j.kind = 'request' THEN j.ts_fin END AS ts_end,
    0 AS ts_granularity_s,
    NULL::VARCHAR AS account_id,
    CASE WHEN j.kind = 'request' THEN s.served_model END AS model,
    CASE WHEN j.kind = 'request' THEN j.prompt_tokens END AS prompt_tokens,
    CASE WHEN j.kind = 'request' THEN j.cached_tokens END AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN j.completion_tokens END AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN kvir_sglang_status(j.ftype, j.fstatus) END AS http_status,
    CASE WHEN j.kind = 'request' THEN kvir_sglang_outcome(j.ftype, j.fstatus) END AS outcome,
    CASE WHEN j.kind = 'request' THEN j.ftype END AS finish_reason,
    s.role AS role,
    s.node AS node,
    CASE WHEN s.role = 'prefill' OR s.role = 'mixed' THEN s.node END AS prefill_node,
    CASE WHEN s.role = 'decode' OR s.role = 'mixed' THEN s.node END AS decode_node,
    CASE WHEN j.kind = 'request' AND s.role = 'prefill' THEN j.prompt_tokens END AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
