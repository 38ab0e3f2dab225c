-- sglang_json_native: a file of bare SGLang JSON request-log lines read by DuckDB's own JSON reader, in file order, as the stage kvir.ingest.native numbers.
-- Params: $path, $source_id, $max_object_bytes
-- Inputs: none
--
-- One row per line, in the file's order (an order-preserving CREATE TABLE AS: the stage's rowid is
-- the line's index), with the same j as queries/parse/sglang_json_lines.sql gives the line (every
-- field VARCHAR as written). Lines this reader cannot take as they are make it raise (malformed
-- JSON, invalid UTF-8, a field of another shape, a duplicate key), and kvir's line reader reads the
-- file instead; `empty` marks a line with none of the top-level fields (also `null`, which the line
-- path counts as another log line), which sends the file to the line reader too.
SELECT $source_id::INTEGER AS source_id,
    {'timestamp': r."timestamp", 'event': r.event, 'rid': r.rid, 'obj': r.obj, 'out': r."out"} AS j,
    r."timestamp" IS NULL AND r.event IS NULL AND r.rid IS NULL AND r.obj IS NULL AND r."out" IS NULL AS empty
FROM read_ndjson($path, format = 'newline_delimited', maximum_object_size = $max_object_bytes, columns = {
    "timestamp": 'VARCHAR', event: 'VARCHAR', rid: 'VARCHAR',
    obj: 'STRUCT(rid VARCHAR, bootstrap_room VARCHAR)',
    "out": 'STRUCT(meta_info STRUCT(id VARCHAR, prompt_tokens VARCHAR, completion_tokens VARCHAR, cached_tokens VARCHAR,
        e2e_latency VARCHAR, finish_reason STRUCT(type VARCHAR, status_code VARCHAR, message VARCHAR)))'}) AS r
