SELECT
  a.account_id,
  COUNT(*) AS affected,
  MIN(a.ts) AS first_affected,
  MAX(a.ts) AS last_affected,
  COUNT(DISTINCT a.decode_node) AS decode_nodes,
  ANY_VALUE(a.account_label) IGNORE NULLS AS label,
  ANY_VALUE(r.reason) IGNORE NULLS AS label_reason
FROM affected AS a
LEFT JOIN account_rules AS r
  ON r.account_id = a.account_id
GROUP BY
  a.account_id
ORDER BY
  affected DESC,
  a.account_id NULLS LAST
