-- generic: any CSV / JSON Lines / Parquet source whose columns are mapped in incident.toml, as request records.
-- Params: none
-- Inputs: __input__ (source_id, line_no, mapped columns, see below), __settings__ (one row per source_id: its settings)
--
-- The reader (toolkit/ingest.py) maps the user's columns onto fixed names, whitelisting each column
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
        TRY_CAST(i.http_status AS INTEGER) AS status
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
timed AS (
    SELECT f.*,
        coalesce(f.ts0, f.ts1 - kvir_span(f.lat)) AS start_ts,
        coalesce(f.ts_tz::VARCHAR, f.ts_naive::VARCHAR, f.ts_text, f.ts_end_tz::VARCHAR, f.ts_end_naive::VARCHAR, f.ts_end_text) AS ts_written
    FROM fields AS f
),
judged AS (
    SELECT t.*,
        CASE
            WHEN t._problem = 'blank line' THEN 'skip'
            WHEN t._problem IS NOT NULL THEN 'bad'
            WHEN kvir_text(t.request_id) IS NULL OR t.start_ts IS NULL OR NOT kvir_in_range(t.start_ts) THEN 'bad'
            WHEN kvir_text(t.model) IS NULL AND s.served_model IS NULL THEN 'bad'
            WHEN t.prompt_tokens IS NOT NULL AND t.n_prompt IS NULL THEN 'bad'
            WHEN t.http_status IS NOT NULL AND t.status IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN t._problem IS NOT NULL THEN t._problem
            WHEN kvir_text(t.request_id) IS NULL THEN 'missing field: request_id'
            WHEN t.start_ts IS NULL AND t.ts_written IS NULL THEN 'missing field: ts'
            WHEN t.start_ts IS NULL AND t.ts0 IS NULL AND t.ts1 IS NOT NULL THEN 'ts missing and ts_end without latency_s'
            WHEN t.start_ts IS NULL OR NOT kvir_in_range(t.start_ts)
                THEN coalesce(kvir_ts_problem(coalesce(t.ts_text, t.ts_end_text), t.start_ts, s.tz_iana, s.tz_offset_min),
                              kvir_local_problem(coalesce(t.ts_naive, t.ts_end_naive), s.tz_iana, s.tz_offset_min),
                              'timestamp outside 1990-2100: ' || left(t.ts_written, 40))
            WHEN kvir_text(t.model) IS NULL AND s.served_model IS NULL THEN 'missing field: model'
            WHEN t.prompt_tokens IS NOT NULL AND t.n_prompt IS NULL
                THEN 'prompt_tokens is not a non-negative integer: ' || left(CAST(t.prompt_tokens AS VARCHAR), 40)
            WHEN t.http_status IS NOT NULL AND t.status IS NULL
                THEN 'http_status is not an integer: ' || left(CAST(t.http_status AS VARCHAR), 40)
        END AS reason
    FROM timed AS t JOIN __settings__ AS s ON s.source_id = t.source_id
)
SELECT
    s.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    j.reason,
    CASE WHEN j.kind = 'request' THEN kvir_text(j.request_id) END AS request_id,
    CASE WHEN j.kind = 'request' THEN kvir_text(j.bootstrap_room) END AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.start_ts END AS ts,
    CASE WHEN j.kind = 'request' THEN coalesce(j.ts1, j.start_ts + kvir_span(j.lat)) END AS ts_end,
    0 AS ts_granularity_s,
    CASE WHEN j.kind = 'request' THEN kvir_text(j.account_id) END AS account_id,
    CASE WHEN j.kind = 'request' THEN coalesce(kvir_text(j.model), s.served_model) END AS model,
    CASE WHEN j.kind = 'request' THEN j.n_prompt END AS prompt_tokens,
    CASE WHEN j.kind = 'request' THEN kvir_count(j.cached_tokens) END AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN kvir_count(j.completion_tokens) END AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN j.status END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN j.status IS NOT NULL THEN kvir_outcome_from_status(j.status)
         ELSE kvir_sglang_outcome(lower(kvir_text(j.finish_reason)), NULL) END AS outcome,
    CASE WHEN j.kind = 'request' THEN kvir_text(j.finish_reason) END AS finish_reason,
    s.role AS role,
    s.node AS node,
    CASE WHEN j.kind = 'request' THEN coalesce(kvir_text(j.prefill_node), CASE WHEN s.role IN ('prefill', 'mixed') THEN s.node END) END AS prefill_node,
    CASE WHEN j.kind = 'request' THEN coalesce(kvir_text(j.decode_node), CASE WHEN s.role IN ('decode', 'mixed') THEN s.node END) END AS decode_node,
    CASE WHEN j.kind = 'request' THEN kvir_count(j.prefill_tokens) END AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j._raw END AS raw,
    j.source_path                -- the file of a multi-file Parquet dataset; NULL otherwise
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
