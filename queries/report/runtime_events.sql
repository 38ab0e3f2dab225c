-- runtime_events: per node and runtime indicator (audit), how often it was seen, first and last
-- time, and the log line of its first sighting.
-- Params: none
SELECT node, role, indicator, sum(count) AS n, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
       min_by(evidence_file, first_ts) AS evidence_file, min_by(evidence_line, first_ts) AS evidence_line
FROM runtime_indicators
GROUP BY node, role, indicator
ORDER BY first_ts, node, indicator
