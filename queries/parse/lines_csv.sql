-- lines_csv: a text file's lines read by DuckDB's CSV reader (one column, nothing quoted), in file order, as kvir's line reader hands them over.
-- Params: $path, $source_id, $max_line_size, $buffer_size
-- Inputs: none
--
-- One row per line, in the file's order: source_id, line_no (NULL: kvir.ingest.native numbers the rows
-- by the order they are written in), problem (NULL) and line (without its \n or \r\n; '' for a blank
-- line, which this reader gives as NULL). Where this reader and kvir's line reader part ways,
-- kvir.ingest.native finds out and reads the file with the line reader: invalid UTF-8 and a line
-- over $max_line_size make it raise, a lone \r makes it start a new row (more rows than lines), and the
-- delimiter byte \x01 would cut a line short (the check looks for it). Blank lines stay rows.
-- $buffer_size: DuckDB's default is 16 lines of the longest allowed (256 MiB for 16 MiB lines).
SELECT $source_id::INTEGER AS source_id, NULL::BIGINT AS line_no, NULL::VARCHAR AS problem, coalesce(c.line, '') AS line
FROM read_csv($path, columns = {'line': 'VARCHAR'}, header = false, delim = E'\x01', quote = '', escape = '',
              comment = '', auto_detect = false, strict_mode = false, max_line_size = $max_line_size,
              buffer_size = $buffer_size) AS c
