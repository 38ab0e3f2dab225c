-- generic: any CSV / JSON Lines / Parquet source whose columns are mapped in incident.toml, as request records.
-- Params: none
-- Inputs: __input__ (source_id, line_no, mapped columns, see below), __settings__ (one row per source_id: its settings)
-- Example: request_id,ts,model,prompt_tokens,http_status,account_id // g1,2026-08-28T10:00:00Z,zai-org/GLM-5.3,681281,200,acct-1
-- Required: request_id, ts|ts_end (mapped in [sources.columns]; columns named like these need no mapping)
-- Optional: ts_end, latency_s, model (or --served-model), account_id, prompt_tokens, cached_tokens, completion_tokens, http_status, finish_reason, bootstrap_room, prefill_node, decode_node, prefill_tokens
--
-- The reader (toolkit/ingest/mapped.py) maps the user's columns onto fixed names, whitelisting each column
-- against the file's schema; unmapped fields are NULL. Time columns arrive split by type:
-- <f>_tz (TIMESTAMPTZ), <f>_naive (TIMESTAMP: local time in the source zone), <f>_text (VARCHAR:
-- offsets, naive strings or epoch numbers, see macros.sql). _problem is a reader-level reason
-- (malformed JSON line, blank line, over-long line) and wins over everything else.
WITH fields AS (
    SELECT i.*,
        coalesce(i.ts_tz, kvir_local_to_utc(i.ts_naive, s.tz_iana, s.tz_offset_min),
                 kvir_parse_ts(i.ts_text, s.tz_iana, s.tz_offset_min)) AS ts0,
        coalesce(i.ts_end_tz, kvir_local_to_utc(i.ts_end_naive, s.tz_iana, s.tz_offset_min),
                 kvir_parse_ts(i.ts_end_text, s.tz_iana, s.tz_offset_min)) AS ts1,
        TRY_CAST(i.latency_s AS DOUBLE) AS lat,
        kvir_count(i.prompt_tokens) AS n_prompt,
        TRY_CAST(i.http_status AS INTEGER) AS status,
        s.tz_iana, s.tz_offset_min, s.served_model
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
timed AS (
    SELECT f.*,
        coalesce(f.ts0, f.ts1 - kvir_span(f.lat)) AS start_ts,
        coalesce(f.ts_tz::VARCHAR, f.ts_naive::VARCHAR, f.ts_text, f.ts_end_tz::VARCHAR, f.ts_end_naive::VARCHAR, f.ts_end_text) AS ts_written
    FROM fields AS f
)
SELECT
    t.source_id,
    t.line_no AS source_line,
    CASE
        WHEN t._problem = 'blank line' THEN kvir_skip(t._problem)
        WHEN t._problem IS NOT NULL THEN kvir_bad(t._problem)
        WHEN kvir_text(t.request_id) IS NULL THEN kvir_bad('missing field: request_id')
        WHEN t.latency_s IS NOT NULL AND t.lat IS NULL
            THEN kvir_bad('latency_s is not a number: ' || left(CAST(t.latency_s AS VARCHAR), 40))
        WHEN kvir_span_problem(t.lat, 'latency_s') IS NOT NULL THEN kvir_bad(kvir_span_problem(t.lat, 'latency_s'))
        WHEN t.start_ts IS NULL AND t.ts_written IS NULL THEN kvir_bad('missing field: ts')
        WHEN t.start_ts IS NULL AND t.ts0 IS NULL AND t.ts1 IS NOT NULL THEN kvir_bad('ts missing and ts_end without latency_s')
        WHEN t.start_ts IS NULL OR NOT kvir_in_range(t.start_ts)
            THEN kvir_bad(coalesce(kvir_ts_problem(coalesce(t.ts_text, t.ts_end_text), t.start_ts, t.tz_iana, t.tz_offset_min),
                                   kvir_local_problem(coalesce(t.ts_naive, t.ts_end_naive), t.tz_iana, t.tz_offset_min),
                                   'timestamp outside 1990-2100: ' || left(t.ts_written, 40)))
        WHEN kvir_text(t.model) IS NULL AND t.served_model IS NULL THEN kvir_bad('missing field: model')
        WHEN t.prompt_tokens IS NOT NULL AND t.n_prompt IS NULL
            THEN kvir_bad('prompt_tokens is not a non-negative integer: ' || left(CAST(t.prompt_tokens AS VARCHAR), 40))
        WHEN t.http_status IS NOT NULL AND t.status IS NULL
            THEN kvir_bad('http_status is not an integer: ' || left(CAST(t.http_status AS VARCHAR), 40))
    END AS verdict,
    t._raw AS raw,
    kvir_text(t.request_id) AS request_id,
    kvir_text(t.bootstrap_room) AS bootstrap_room,
    t.start_ts AS ts,
    CASE WHEN t.ts0 IS NOT NULL THEN kvir_ts_extra_ns(t.ts_text) END AS ts_extra_ns,
    coalesce(t.ts1, t.start_ts + kvir_span(t.lat)) AS ts_end,
    kvir_text(t.account_id) AS account_id,
    coalesce(kvir_text(t.model), t.served_model) AS model,
    t.n_prompt AS prompt_tokens,
    kvir_count(t.cached_tokens) AS cached_tokens,
    kvir_count(t.completion_tokens) AS completion_tokens,
    t.status AS http_status,
    CASE WHEN t.status IS NOT NULL THEN kvir_outcome_from_status(t.status)
         ELSE kvir_sglang_outcome(lower(kvir_text(t.finish_reason)), NULL) END AS outcome,
    kvir_text(t.finish_reason) AS finish_reason,
    kvir_text(t.prefill_node) AS prefill_node,
    kvir_text(t.decode_node) AS decode_node,
    kvir_count(t.prefill_tokens) AS prefill_tokens,
    t.source_path                -- the file of a multi-file Parquet dataset; NULL otherwise
FROM timed AS t
