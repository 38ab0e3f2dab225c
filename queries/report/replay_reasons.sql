-- replay_reasons: why replayed requests were inconclusive (the reason each row of replay_results carries),
-- and on what each replay's build rests (build_basis: ran = the start-up evidence names it; assumed = not).
-- Params: none
SELECT i.verdict, coalesce(i.reason, 'no reason recorded') AS reason,
       coalesce(i.build_basis, 'assumed') AS build_basis, count(*) AS n
FROM replay_results AS i
WHERE i.build_role = 'incident'
GROUP BY ALL
ORDER BY n DESC, reason
