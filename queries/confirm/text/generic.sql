-- generic: the prompt and response text at the JSON paths --map names, in JSON Lines (or JSON documents).
-- Params: $p_request_id_1, $p_request_id_2, $p_request_id_3, $p_request_id_4, $p_prompt_1, $p_prompt_2, $p_prompt_3, $p_prompt_4, $p_response_1, $p_response_2, $p_response_3, $p_response_4
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- Each field has up to four paths (a path apiece: DuckDB takes a path with * only as a constant), tried in
-- order: the first that holds a value (not null, not an empty list) is the field's; an unused one reads nothing. request_id: a value; prompt: a string, a list of strings (several prompts, choice 0,
-- 1 ...) or chat messages; response: a string, or a list of strings (a path with * over a stream's chunks:
-- joined in order). An unmapped field reads nothing.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        CASE WHEN i.problem IS NULL AND json_valid(i.line) AND json_type(i.line) = 'OBJECT' THEN i.line::JSON END AS j
    FROM __input__ AS i
),
v AS (
    SELECT p.*,
        list_filter([json_extract(p.j, $p_request_id_1), json_extract(p.j, $p_request_id_2), json_extract(p.j, $p_request_id_3), json_extract(p.j, $p_request_id_4)], lambda x: x IS NOT NULL AND json_type(x) <> 'NULL')[1] AS rid_j,
        list_filter([json_extract(p.j, $p_prompt_1), json_extract(p.j, $p_prompt_2), json_extract(p.j, $p_prompt_3), json_extract(p.j, $p_prompt_4)],
                    lambda x: x IS NOT NULL AND json_type(x) <> 'NULL' AND x::VARCHAR <> '[]')[1] AS prompt_j,
        list_filter([json_extract(p.j, $p_response_1), json_extract(p.j, $p_response_2), json_extract(p.j, $p_response_3), json_extract(p.j, $p_response_4)],
                    lambda x: x IS NOT NULL AND json_type(x) <> 'NULL' AND x::VARCHAR <> '[]')[1] AS resp
    FROM p
),
w AS (
    SELECT v.*, trim(json_extract_string(v.rid_j, '$')) AS rid, confirm_prompts(v.prompt_j) AS prompts FROM v
)
SELECT w.source_id, w.line_no,
    CASE WHEN w.problem IS NOT NULL THEN 'bad: ' || w.problem
         WHEN w.j IS NULL THEN 'bad: not a JSON object'
         WHEN nullif(w.rid, '') IS NULL THEN 'skip: no request id at the mapped path' END AS status,
    w.rid AS request_id,
    list_concat(
        list_transform(range(len(w.prompts)), lambda i: {'part': 'prompt', 'choice': CASE WHEN len(w.prompts) > 1 THEN i::INTEGER END,
                                                         'text': w.prompts[i + 1], 'done': true}),
        CASE WHEN w.resp IS NULL THEN []
             WHEN json_type(w.resp) = 'ARRAY' THEN [{'part': 'response', 'choice': NULL::INTEGER,
                 'text': array_to_string(list_filter(list_transform(json_extract(w.resp, '$[*]'),
                         lambda x: CASE WHEN json_type(x) = 'VARCHAR' THEN json_extract_string(x, '$') END), lambda x: x IS NOT NULL), ''),
                 'done': true}]
             ELSE [{'part': 'response', 'choice': NULL::INTEGER, 'text': confirm_content(w.resp), 'done': true}] END
    ) AS pieces
FROM w;
