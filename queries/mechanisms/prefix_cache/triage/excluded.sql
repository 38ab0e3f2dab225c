-- excluded: the affected and possibly affected responses of accounts incident.toml excludes (listed apart,
-- never dropped): the columns every report reads (triage/listed), then the cached tokens and the verdict.
-- Params: none
CREATE OR REPLACE TABLE excluded AS
SELECT excluded_row.*, l.cached_tokens, replace(l.category, '-', ' ') AS verdict
FROM listed_hits AS l
WHERE l.account_excluded
ORDER BY l.ts, l.request_id;
