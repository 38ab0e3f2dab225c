-- history: the replay's request sequence through the cache: every request of the incident's model on the
-- instances of the affected responses, up to the last of them, in triage's order (time, then source file
-- and line, then id: queries/mechanisms/prefix_cache/triage/hits.sql numbers them the same way).
-- Params: $models, $until
SELECT q.request_id, q.account_id, q.ts, coalesce(q.prefill_node, q.decode_node, 'unknown') AS instance,
       q.prompt_tokens, q.cached_tokens, q.prefill_node, q.decode_node, q.completion_tokens
FROM requests AS q
WHERE (q.model IN (SELECT unnest($models)) OR q.model_other IN (SELECT unnest($models)))
  AND coalesce(q.prefill_node, q.decode_node, 'unknown') IN (SELECT DISTINCT instance FROM affected)
  AND q.ts <= $until
ORDER BY q.ts, q.source_file, q.source_line, q.request_id
