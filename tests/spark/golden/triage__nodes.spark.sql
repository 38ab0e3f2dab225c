SELECT
  node,
  role,
  COUNT(*) AS affected,
  MIN(ts) AS first_affected,
  MAX(ts) AS last_affected,
  COUNT(DISTINCT account_id) AS accounts
FROM (
  SELECT
    prefill_node AS node,
    'prefill' AS role,
    ts,
    account_id
  FROM affected
  WHERE
    NOT prefill_node IS NULL
  UNION ALL
  SELECT
    decode_node AS node,
    'decode' AS role,
    ts,
    account_id
  FROM affected
  WHERE
    NOT decode_node IS NULL
  UNION ALL
  SELECT
    NULL AS node,
    'unknown' AS role,
    ts,
    account_id
  FROM affected
  WHERE
    prefill_node IS NULL AND decode_node IS NULL
) AS n
GROUP BY
  node,
  role
ORDER BY
  role NULLS LAST,
  affected DESC,
  node NULLS LAST
