-- summary_by_build: per build replayed, how many responses got each verdict.
-- Params: none
SELECT build, verdict, count(*) AS n
FROM replay_results
GROUP BY build, verdict
ORDER BY build, verdict
