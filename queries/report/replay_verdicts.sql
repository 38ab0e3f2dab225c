-- replay_verdicts: how many replayed requests got each verdict, and the foreign tokens they read.
-- Params: none
SELECT verdict, count(*) AS n, sum(coalesce(leaked_tokens, 0)) AS leaked_tokens
FROM replay_results
GROUP BY verdict
ORDER BY n DESC, verdict
