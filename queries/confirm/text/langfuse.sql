-- langfuse: the input and output of Langfuse observations (the API's observation objects, one per record).
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- `input`: chat messages, a prompt string or a request body; `output`: a string, an assistant message
-- ({"role", "content"}) or a response body. request_id = the observation id, as queries/adapters/langfuse.sql
-- reads it. Observations that are not generations (spans, events) are skipped.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        CASE WHEN i.problem IS NULL AND json_valid(i.line) AND json_type(i.line) = 'OBJECT' THEN i.line::JSON END AS j
    FROM __input__ AS i
),
v AS (
    SELECT p.*, trim(json_extract_string(p.j, '$.id')) AS rid, upper(json_extract_string(p.j, '$.type')) AS kind,
        CASE WHEN json_type(p.j, '$.input') = 'OBJECT' THEN confirm_body_prompts(json_extract(p.j, '$.input'))
             ELSE confirm_prompts(json_extract(p.j, '$.input')) END AS prompts,
        confirm_body_response(json_extract(p.j, '$.output')) AS resp
    FROM p
)
SELECT v.source_id, v.line_no,
    CASE WHEN v.problem IS NOT NULL THEN 'bad: ' || v.problem
         WHEN v.j IS NULL THEN 'bad: not a JSON object'
         WHEN nullif(v.rid, '') IS NULL THEN 'skip: no id'
         WHEN v.kind IS DISTINCT FROM 'GENERATION' THEN 'skip: not a generation' END AS status,
    v.rid AS request_id,
    list_concat(
        list_transform(v.prompts, lambda t: {'part': 'prompt', 'choice': NULL::INTEGER, 'text': t, 'done': true}),
        CASE WHEN v.resp IS NULL THEN [] ELSE [{'part': 'response', 'choice': NULL::INTEGER, 'text': v.resp, 'done': true}] END
    ) AS pieces
FROM v;
