-- excluded: affected responses of accounts incident.toml excludes (listed apart, never dropped).
-- Params: none
CREATE OR REPLACE TABLE excluded AS
SELECT h.request_id, h.ts, h.account_id, a.label AS account_label, a.reason, h.model, h.prompt_tokens,
       h.http_status, h.prefill_node, h.decode_node, h.source_file, h.source_line
FROM triage_hits AS h
JOIN account_rules AS a ON a.account_id = h.account_id
WHERE h.category = 'affected' AND a.exclude
ORDER BY h.ts, h.request_id;
