-- sglang_json_native: a file of bare SGLang JSON request-log lines read by DuckDB's own JSON reader, in file order, as queries/adapters/sglang_json.sql reads them.
-- Params: $path, $source_id, $max_object_bytes, $empty_problem
-- Inputs: none
--
-- One row per line, in the file's order, with the same j as queries/parse/sglang_json_lines.sql gives
-- the line (every field VARCHAR as written). Nothing here may reorder rows: kvir.ingest.native writes
-- the adapter's output with one order-preserving CREATE TABLE AS, so a row's rowid is its line's
-- index, and it refuses a plan with any operator that does not keep order (a join would not: kvir
-- attaches the source's settings by a cross product with its one settings row). Lines this reader cannot
-- take as they are make it raise (malformed JSON, invalid UTF-8, a field of another shape, a duplicate
-- key), and kvir's line reader reads the file instead. A line with none of the top-level fields gets
-- the problem $empty_problem: `null` and `{}` read alike here but not by the line reader, so
-- kvir.ingest.native sends such a file to the line reader too. Only JSON lines reach this path: no
-- text (raw text is never kept here: --keep-raw reads with the line reader), no rejection line.
-- The identifiers (rid, obj.rid, obj.bootstrap_room, out.meta_info.id) are read as JSON and taken as text with
-- ->> '$', as the line path's json_extract_string writes them: a JSON number is one text per value (0.000001
-- for 1e-6; a VARCHAR column would write 1e-06) and a string stays as written (queries/macros.sql kvir_id).
SELECT $source_id::INTEGER AS source_id, NULL::BIGINT AS line_no,
    CASE WHEN r."timestamp" IS NULL AND r.event IS NULL AND r.rid IS NULL AND r.obj IS NULL AND r."out" IS NULL
         THEN $empty_problem::VARCHAR END AS problem,
    NULL::VARCHAR AS text, '' AS payload,
    {'timestamp': r."timestamp", 'event': r.event, 'rid': r.rid ->> '$',
     'obj': {'rid': r.obj.rid ->> '$', 'bootstrap_room': r.obj.bootstrap_room ->> '$'},
     'out': {'meta_info': struct_update(r."out".meta_info, id := r."out".meta_info.id ->> '$')}} AS j,
    kvir_sglang_rejection(NULL::VARCHAR) AS rej
FROM read_ndjson($path, format = 'newline_delimited', maximum_object_size = $max_object_bytes, columns = {
    "timestamp": 'VARCHAR', event: 'VARCHAR', rid: 'JSON',
    obj: 'STRUCT(rid JSON, bootstrap_room JSON)',
    "out": 'STRUCT(meta_info STRUCT(id JSON, prompt_tokens VARCHAR, completion_tokens VARCHAR, cached_tokens VARCHAR,
        e2e_latency VARCHAR, finish_reason STRUCT(type VARCHAR, status_code VARCHAR, message VARCHAR)))'}) AS r
