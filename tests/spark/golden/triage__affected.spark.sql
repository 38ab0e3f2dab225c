SELECT
  h.request_id,
  h.ts,
  h.ts_end,
  h.account_id,
  a.label AS account_label,
  h.model,
  h.matched_name,
  h.prompt_tokens,
  h.prefill_tokens,
  h.completion_tokens,
  h.http_status,
  h.finish_reason,
  h.prefill_node,
  h.decode_node,
  CONCAT_WS(' -> ', h.prefill_node, h.decode_node) AS nodes,
  h.source_format,
  h.source_file,
  h.source_line,
  h.n_records,
  h.conflict,
  :rule_text AS rule,
  h.other_hit AS other_rule_also_matches,
  :other_rule_text AS other_rule
FROM triage_hits AS h
LEFT JOIN account_rules AS a
  ON a.account_id = h.account_id
WHERE
  h.category = 'affected' AND NOT COALESCE(a.exclude, FALSE)
ORDER BY
  h.ts NULLS LAST,
  h.request_id NULLS LAST
