-- candidate_sources: every tenant the triage names as a candidate source (an earlier request of that tenant on
-- the instance could have written the cached blocks another tenant's response was served from): how many
-- affected and possibly affected responses name it, and the first and last of them. Never who read them.
-- Params: none
SELECT s.account_id, count(*) AS responses, count(*) FILTER (WHERE s.verdict = 'affected') AS affected,
       min(s.ts) AS first_ts, max(s.ts) AS last_ts
FROM (SELECT unnest(source_tenants) AS account_id, verdict, ts FROM affected) AS s
WHERE s.account_id IS NOT NULL
GROUP BY s.account_id
ORDER BY s.account_id
