-- openai_response: the response text of OpenAI-compatible bodies and stream chunks saved one per record.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- One piece per choice: choices[].text (completions and their chunks), choices[].message.content (chat),
-- choices[].delta.content (chat chunks). A chunk's piece is done when its choice carries a finish_reason (the
-- stream's last content chunk); a chat.completion body is whole. The request id is the body's `id`, as
-- queries/adapters/openai_response.sql reads it. A body without an id (an error, a model list) holds no
-- response: skipped; a record that is no JSON object is quarantined. Parsed once into the fields read
-- (from_json), as the adapter does.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"id":"VARCHAR","object":"VARCHAR","choices":[{"index":"VARCHAR",
                  "finish_reason":"VARCHAR","text":"VARCHAR","message":{"content":"JSON"},"delta":{"content":"JSON"}}]}'))
        END AS j
    FROM __input__ AS i
)
SELECT p.source_id, p.line_no,
    CASE WHEN p.problem IS NOT NULL THEN 'bad: ' || p.problem
         WHEN p.j IS NULL THEN 'bad: not a JSON object'
         WHEN nullif(trim(p.j.id), '') IS NULL THEN 'skip: no id (an error body or another object)' END AS status,
    trim(p.j.id) AS request_id,
    list_filter(list_transform(coalesce(p.j.choices, []),
        lambda c: {'part': 'response', 'choice': TRY_CAST(c.index AS INTEGER),
                   'text': coalesce(c.text, confirm_content(c.message.content), confirm_content(c.delta.content)),
                   'done': c.finish_reason IS NOT NULL OR p.j.object = 'chat.completion'}),
        lambda x: x.text IS NOT NULL OR x.done) AS pieces
FROM p;
