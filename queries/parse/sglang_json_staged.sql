-- sglang_json_staged: the native stage's rows as queries/adapters/sglang_json.sql reads them, numbered by their place in the file.
-- Params: none
-- Inputs: __input__ (the stage of queries/parse/sglang_json_native.sql, written in file order)
--
-- The stage was filled by one order-preserving CREATE TABLE AS and kvir.ingest.native checked that it
-- holds exactly one row per line of the file, so rowid + 1 is the line number. Only JSON lines reach
-- this path: no problem, no rejection line; text stays NULL (raw text is never kept here:
-- --keep-raw reads with the line reader).
SELECT s.source_id, s.rowid + 1 AS line_no, NULL::VARCHAR AS problem, NULL::VARCHAR AS text, '' AS payload,
    s.j, kvir_sglang_rejection(NULL::VARCHAR) AS rej
FROM __input__ AS s
