-- replay_verdicts: how many replayed requests got each verdict, the foreign tokens they read, and how
-- many the patched path rejected (HTTP 4xx) instead of serving.
-- Params: none
SELECT verdict, count(*) AS n, sum(coalesce(leaked_tokens, 0)) AS leaked_tokens,
       sum(CASE WHEN patched_status >= 400 AND patched_status < 500 THEN 1 ELSE 0 END) AS patched_rejected
FROM replay_results
GROUP BY verdict
ORDER BY n DESC, verdict
