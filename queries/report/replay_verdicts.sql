-- replay_verdicts: under the build each replayed request ran (build_role 'incident'), how many got each
-- verdict and the foreign tokens they read, and how many of them the first fixed build rejected (HTTP 4xx)
-- instead of serving.
-- Params: none
-- (Aggregated apart and joined after: DuckDB 2.0.1's compressed materialization mis-sizes the leaked-token sum
-- of the one-join form under ORDER BY n, failing or, cast, wrapping to -128.)
WITH incident AS (
    SELECT verdict, count(*) AS n, sum(coalesce(leaked_tokens, 0)) AS leaked_tokens
    FROM replay_results WHERE build_role = 'incident' GROUP BY verdict
),
rejected AS (
    SELECT i.verdict, count(*) AS fixed_rejected
    FROM replay_results AS i
    JOIN replay_results AS x ON x.request_id = i.request_id AND x.first_fixed AND x.build_role <> 'incident'
    WHERE i.build_role = 'incident' AND x.http_status >= 400 AND x.http_status < 500
    GROUP BY i.verdict
)
SELECT v.verdict, v.n, v.leaked_tokens, coalesce(r.fixed_rejected, 0) AS fixed_rejected
FROM incident AS v LEFT JOIN rejected AS r USING (verdict)
ORDER BY v.n DESC, v.verdict
