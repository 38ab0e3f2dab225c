-- generic: the prompt and response text at the JSON paths --map names, in JSON Lines (or JSON documents).
-- Params: $p_request_id, $p_prompt, $p_response
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- request_id: a value; prompt: a string, a list of strings (several prompts, choice 0, 1 ...) or chat
-- messages; response: a string, or a list of strings (a path with * over a stream's chunks: joined in
-- order). An unmapped field reads nothing.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        CASE WHEN i.problem IS NULL AND json_valid(i.line) AND json_type(i.line) = 'OBJECT' THEN i.line::JSON END AS j
    FROM __input__ AS i
),
v AS (
    SELECT p.*, trim(json_extract_string(p.j, $p_request_id)) AS rid,
        confirm_prompts(json_extract(p.j, $p_prompt)) AS prompts,
        json_extract(p.j, $p_response) AS resp
    FROM p
)
SELECT v.source_id, v.line_no,
    CASE WHEN v.problem IS NOT NULL THEN 'bad: ' || v.problem
         WHEN v.j IS NULL THEN 'bad: not a JSON object'
         WHEN nullif(v.rid, '') IS NULL THEN 'skip: no request id at the mapped path' END AS status,
    v.rid AS request_id,
    list_concat(
        list_transform(range(len(v.prompts)), lambda i: {'part': 'prompt', 'choice': CASE WHEN len(v.prompts) > 1 THEN i::INTEGER END,
                                                         'text': v.prompts[i + 1], 'done': true}),
        CASE WHEN v.resp IS NULL OR json_type(v.resp) = 'NULL' THEN []
             WHEN json_type(v.resp) = 'ARRAY' THEN [{'part': 'response', 'choice': NULL::INTEGER,
                 'text': array_to_string(list_filter(list_transform(json_extract(v.resp, '$[*]'),
                         lambda x: CASE WHEN json_type(x) = 'VARCHAR' THEN json_extract_string(x, '$') END), lambda x: x IS NOT NULL), ''),
                 'done': true}]
             ELSE [{'part': 'response', 'choice': NULL::INTEGER, 'text': confirm_content(v.resp), 'done': true}] END
    ) AS pieces
FROM v;
