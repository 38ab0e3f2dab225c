-- nodes: per serving node and role, its affected responses (count, first and last, accounts).
-- Params: none
CREATE OR REPLACE TABLE nodes AS
SELECT node, role, count(*) AS affected, min(ts) AS first_affected, max(ts) AS last_affected,
       count(DISTINCT account_id) AS accounts
FROM (
    SELECT prefill_node AS node, 'prefill' AS role, ts, account_id FROM affected WHERE prefill_node IS NOT NULL
    UNION ALL
    SELECT decode_node AS node, 'decode' AS role, ts, account_id FROM affected WHERE decode_node IS NOT NULL
    UNION ALL
    SELECT NULL AS node, 'unknown' AS role, ts, account_id FROM affected
    WHERE prefill_node IS NULL AND decode_node IS NULL
) AS n
GROUP BY node, role
ORDER BY role, affected DESC, node;
