-- prefix_cache_excluded: the case table `excluded` for the prefix-cache mechanism: the affected and possibly
-- affected responses of accounts incident.toml excludes (listed apart, never dropped), with their verdict.
-- Params: none
CREATE OR REPLACE TABLE excluded AS
SELECT h.request_id, h.ts, h.account_id, a.label AS account_label, a.reason, h.model, h.prompt_tokens,
       h.http_status, h.prefill_node, h.decode_node, h.source_file, h.source_line,
       h.cached_tokens, replace(h.category, '-', ' ') AS verdict
FROM triage_hits AS h
JOIN account_rules AS a ON a.account_id = h.account_id
WHERE h.category IN ('affected', 'possibly-affected') AND a.exclude
ORDER BY h.ts, h.request_id;
