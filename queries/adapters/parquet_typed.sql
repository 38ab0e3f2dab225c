-- parquet_typed: Parquet whose mapped columns already have the right types, as request records (lean).
-- Params: none
-- Inputs: __input__ (source_id, line_no, mapped columns with native types), __settings__ (one row per source_id)
--
-- Chosen by the ingest when ts is TIMESTAMP WITH TIME ZONE, the counts are integers and the ids and names
-- are text (kvir simulate --format parquet writes exactly that). Every expression here is a plain column
-- test, so DuckDB pushes triage's filters (model, window, prompt length) into the Parquet scan and skips
-- row groups by their statistics: the rows are read in place, never copied. Anything less tidy goes
-- through queries/adapters/generic.sql instead. A served model for rows without one is applied in the
-- input view, only when one is configured.
SELECT
    i.source_id,
    i.line_no AS source_line,
    CASE WHEN i.request_id IS NULL OR i.request_id = '' OR i.ts_tz IS NULL
              OR i.ts_tz < TIMESTAMPTZ '1990-01-01 00:00:00+00' OR i.ts_tz >= TIMESTAMPTZ '2100-01-01 00:00:00+00'
              OR i.model IS NULL OR i.prompt_tokens < 0
         THEN 'bad' ELSE 'request' END AS kind,
    CASE WHEN i.request_id IS NULL OR i.request_id = '' THEN 'missing field: request_id'
         WHEN i.ts_tz IS NULL THEN 'missing field: ts'
         WHEN i.ts_tz < TIMESTAMPTZ '1990-01-01 00:00:00+00' OR i.ts_tz >= TIMESTAMPTZ '2100-01-01 00:00:00+00'
             THEN 'timestamp outside 1990-2100: ' || CAST(i.ts_tz AS VARCHAR)
         WHEN i.model IS NULL THEN 'missing field: model'
         WHEN i.prompt_tokens < 0 THEN 'prompt_tokens is negative' END AS reason,
    i.request_id,
    CAST(i.bootstrap_room AS VARCHAR) AS bootstrap_room,
    i.ts_tz AS ts,
    i.ts_end_tz AS ts_end,
    0 AS ts_granularity_s,
    i.account_id,
    i.model,                 -- a plain column, so the model filter reaches the scan (see _typed_projection)
    CAST(i.prompt_tokens AS BIGINT) AS prompt_tokens,
    CAST(i.cached_tokens AS BIGINT) AS cached_tokens,
    CAST(i.completion_tokens AS BIGINT) AS completion_tokens,
    CAST(i.http_status AS INTEGER) AS http_status,
    CASE WHEN i.http_status IS NOT NULL THEN kvir_outcome_from_status(i.http_status)
         ELSE kvir_sglang_outcome(lower(i.finish_reason), NULL) END AS outcome,
    i.finish_reason,
    s.role AS role,
    s.node AS node,
    coalesce(i.prefill_node, CASE WHEN s.role IN ('prefill', 'mixed') THEN s.node END) AS prefill_node,
    coalesce(i.decode_node, CASE WHEN s.role IN ('decode', 'mixed') THEN s.node END) AS decode_node,
    CAST(i.prefill_tokens AS BIGINT) AS prefill_tokens,
    NULL::VARCHAR AS raw,
    i.source_path                -- the dataset file this row is in (source_line is its row number)
FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
