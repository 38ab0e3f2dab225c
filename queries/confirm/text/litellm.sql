-- litellm: the prompts and responses LiteLLM's SpendLogs keep when the proxy stores prompts in spend logs.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- LiteLLM 1.110.2 (proxy/spend_tracking/spend_tracking_utils.py) writes `proxy_server_request` (the request body
-- as a JSON string: its messages, prompt or input), `messages` (realtime calls only) and `response` (the
-- response as a JSON string), each "{}" unless store_prompts_in_spend_logs is on. request_id as
-- queries/adapters/litellm.sql reads it. A CSV export holds the same cells as text.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        CASE WHEN i.problem IS NULL AND json_valid(i.line) AND json_type(i.line) = 'OBJECT' THEN i.line::JSON END AS j
    FROM __input__ AS i
),
v AS (
    SELECT p.*, trim(json_extract_string(p.j, '$.request_id')) AS rid,
        confirm_body_prompts(confirm_unwrap(json_extract(p.j, '$.proxy_server_request'))) AS body_prompts,
        confirm_prompts(confirm_unwrap(json_extract(p.j, '$.messages'))) AS rt_prompts,
        confirm_body_response(confirm_unwrap(json_extract(p.j, '$.response'))) AS resp
    FROM p
)
SELECT v.source_id, v.line_no,
    CASE WHEN v.problem IS NOT NULL THEN 'bad: ' || v.problem
         WHEN v.j IS NULL THEN 'bad: not a JSON object'
         WHEN nullif(v.rid, '') IS NULL THEN 'skip: no request_id' END AS status,
    v.rid AS request_id,
    list_concat(
        list_transform(CASE WHEN len(v.body_prompts) > 0 THEN v.body_prompts ELSE v.rt_prompts END,
                       lambda t: {'part': 'prompt', 'choice': NULL::INTEGER, 'text': t, 'done': true}),
        CASE WHEN v.resp IS NULL THEN [] ELSE [{'part': 'response', 'choice': NULL::INTEGER, 'text': v.resp, 'done': true}] END
    ) AS pieces
FROM v;
