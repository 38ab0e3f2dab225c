-- replay_verdicts: under the build each replayed request ran (build_role 'incident'), how many got each
-- verdict and the foreign tokens they read, and how many of them the first fixed build rejected (HTTP 4xx)
-- instead of serving.
-- Params: none
SELECT i.verdict, count(*) AS n, sum(coalesce(i.leaked_tokens, 0)) AS leaked_tokens,
       sum(CASE WHEN x.http_status >= 400 AND x.http_status < 500 THEN 1 ELSE 0 END) AS fixed_rejected
FROM replay_results AS i
LEFT JOIN replay_results AS x ON x.request_id = i.request_id AND x.first_fixed AND x.build_role <> 'incident'
WHERE i.build_role = 'incident'
GROUP BY i.verdict
ORDER BY n DESC, i.verdict
