-- targets: the affected responses to replay through the cache, oldest first (at most $limit of them), with the
-- instance whose cache served each and the cached prompt tokens its log reports (triage's affected columns).
-- Params: $limit
SELECT a.request_id, a.ts, a.account_id, a.instance, a.cached_tokens, a.prompt_tokens, a.prefill_node,
       a.decode_node, a.completion_tokens
FROM affected AS a
ORDER BY a.ts, a.request_id
LIMIT $limit
