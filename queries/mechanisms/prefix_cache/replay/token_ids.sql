-- token_ids: the prompt's token ids and cache salt of the wanted evidence lines, where the line holds them:
-- a JSON record's `prompt_token_ids` (a client's or gateway's capture; the field's name as vLLM's API gives
-- it) or vLLM's request log (`prompt_token_ids: [...]`, printed up to 0.11.0 and at DEBUG since), and the
-- salt under the spec's salt field of a JSON record. Lines without them give NULL: the replay says so.
-- Params: $salt_path
-- Inputs: __lines__ (source_id, line_no, line), __wanted__ (request_id, source_id, source_line)
SELECT w.request_id, w.source_id, w.source_line,
    CASE WHEN json_valid(l.line) THEN TRY_CAST(json_extract(l.line, '$.prompt_token_ids') AS BIGINT[])
         ELSE TRY_CAST(string_split(nullif(regexp_extract(l.line, 'prompt_token_ids: \[([0-9, ]*)\]', 1), ''), ',') AS BIGINT[])
    END AS token_ids,
    CASE WHEN json_valid(l.line) THEN json_extract_string(l.line, $salt_path) END AS salt
FROM __wanted__ AS w
JOIN __lines__ AS l ON l.source_id = w.source_id AND l.line_no = w.source_line
