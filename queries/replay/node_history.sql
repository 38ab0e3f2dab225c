-- node_history: every request the logs show on one decode node up to a time, in arrival order.
-- Params: $node, $until
SELECT r.request_id, r.account_id, r.ts, r.ts_end, r.prompt_tokens, r.completion_tokens, r.prefill_node,
       r.outcome, r.http_status
FROM requests AS r
WHERE r.decode_node = $node AND r.ts <= $until
ORDER BY r.ts, r.request_id
