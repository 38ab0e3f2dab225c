-- parquet_typed: Parquet whose mapped columns already have the right types, as request records (lean).
-- Params: none
-- Inputs: __input__ (source_id, line_no, mapped columns with native types)
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
    CASE WHEN i.request_id IS NULL OR i.request_id = '' THEN kvir_bad('missing field: request_id')
         WHEN i.ts_tz IS NULL THEN kvir_bad('missing field: ts')
         WHEN i.ts_tz < TIMESTAMPTZ '1990-01-01 00:00:00+00' OR i.ts_tz >= TIMESTAMPTZ '2100-01-01 00:00:00+00'
             THEN kvir_bad('timestamp outside 1990-2100: ' || CAST(i.ts_tz AS VARCHAR))
         WHEN i.model IS NULL THEN kvir_bad('missing field: model')
         WHEN i.prompt_tokens < 0 THEN kvir_bad('prompt_tokens is negative') END AS verdict,
    i.request_id,
    CAST(i.bootstrap_room AS VARCHAR) AS bootstrap_room,
    i.ts_tz AS ts,
    i.ts_end_tz AS ts_end,
    i.account_id,
    i.model,                 -- a plain column, so the model filter reaches the scan (see _typed_projection)
    CAST(i.prompt_tokens AS BIGINT) AS prompt_tokens,
    CAST(i.cached_tokens AS BIGINT) AS cached_tokens,
    CAST(i.completion_tokens AS BIGINT) AS completion_tokens,
    CAST(i.http_status AS INTEGER) AS http_status,
    CASE WHEN i.http_status IS NOT NULL THEN kvir_outcome_from_status(i.http_status)
         ELSE kvir_sglang_outcome(lower(i.finish_reason), NULL) END AS outcome,
    i.finish_reason,
    i.prefill_node,              -- the epilogue falls back to the source's node for its role
    i.decode_node,
    CAST(i.prefill_tokens AS BIGINT) AS prefill_tokens,
    i.source_path                -- the dataset file this row is in (source_line is its row number)
FROM __input__ AS i
