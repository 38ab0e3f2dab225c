-- excluded: the listed responses of accounts incident.toml excludes (listed apart, never dropped): the
-- columns every report reads (triage/listed). A mechanism's own triage/excluded adds its columns.
-- Params: none
CREATE OR REPLACE TABLE excluded AS
SELECT excluded_row.*
FROM listed_hits AS l
WHERE l.account_excluded
ORDER BY l.ts, l.request_id;
