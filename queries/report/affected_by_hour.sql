-- affected_by_hour: affected responses per hour (UTC).
-- Params: none
SELECT date_trunc('hour', ts) AS hour, count(*) AS n
FROM affected
GROUP BY 1
ORDER BY 1
