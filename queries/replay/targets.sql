-- targets: the affected responses to replay, oldest first (at most $limit of them).
-- Params: $limit
SELECT a.request_id, a.ts, a.ts_end, a.account_id, a.prompt_tokens, a.completion_tokens,
       a.prefill_node, a.decode_node
FROM affected AS a
ORDER BY a.ts, a.request_id
LIMIT $limit
