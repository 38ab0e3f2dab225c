-- threshold_sources: with the pool in effect per node (triage/hits_pool_in_effect), how many flagged requests
-- each threshold judged: a node's start, or the global spec's with the reason (a fallback is said, not hidden).
-- Params: none
SELECT threshold_source, count(*) AS requests
FROM triage_hits
GROUP BY threshold_source
ORDER BY threshold_source;
