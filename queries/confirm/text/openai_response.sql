-- openai_response: the response text of OpenAI-compatible bodies and stream chunks saved one per record.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- One piece per choice: choices[].text (completions and their chunks), choices[].message.content (chat),
-- choices[].delta.content (chat chunks). A chunk's piece is done when its choice carries a finish_reason (the
-- stream's last content chunk); a chat.completion body is whole. The request id is the body's `id`, as
-- queries/adapters/openai_response.sql reads it. A body without an id (an error, a model list) holds no
-- response: skipped; a record that is no JSON object is quarantined.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        CASE WHEN i.problem IS NULL AND json_valid(i.line) AND json_type(i.line) = 'OBJECT' THEN i.line::JSON END AS j
    FROM __input__ AS i
)
SELECT p.source_id, p.line_no,
    CASE WHEN p.problem IS NOT NULL THEN 'bad: ' || p.problem
         WHEN p.j IS NULL THEN 'bad: not a JSON object'
         WHEN nullif(trim(json_extract_string(p.j, '$.id')), '') IS NULL THEN 'skip: no id (an error body or another object)' END AS status,
    trim(json_extract_string(p.j, '$.id')) AS request_id,
    CASE WHEN json_type(p.j, '$.choices') = 'ARRAY' THEN list_filter(list_transform(json_extract(p.j, '$.choices[*]'),
        lambda c: {'part': 'response', 'choice': TRY_CAST(json_extract_string(c, '$.index') AS INTEGER),
                   'text': coalesce(json_extract_string(c, '$.text'), confirm_content(json_extract(c, '$.message.content')),
                                    confirm_content(json_extract(c, '$.delta.content'))),
                   'done': (json_extract_string(c, '$.finish_reason')) IS NOT NULL OR (json_extract_string(p.j, '$.object')) = 'chat.completion'}),
        lambda x: x.text IS NOT NULL OR x.done) ELSE [] END AS pieces
FROM p;
