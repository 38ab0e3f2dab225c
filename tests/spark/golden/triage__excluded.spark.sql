SELECT
  excluded_row.*
FROM listed_hits AS l
WHERE
  l.account_excluded
ORDER BY
  l.ts NULLS LAST,
  l.request_id NULLS LAST
