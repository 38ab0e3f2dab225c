SELECT
  affected_row.*,
  l.other_hit AS other_rule_also_matches,
  :other_rule_text AS other_rule
FROM listed_hits AS l
WHERE
  NOT l.account_excluded
ORDER BY
  l.ts NULLS LAST,
  l.request_id NULLS LAST
