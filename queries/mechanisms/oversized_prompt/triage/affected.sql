-- affected: one row per affected response (served, the rule holds) of a non-excluded account: the columns
-- every report reads (triage/listed), then whether the other rule also counts it.
-- Params: $other_rule_text
CREATE OR REPLACE TABLE affected AS
SELECT
    affected_row.*,
    l.other_hit AS other_rule_also_matches,
    $other_rule_text AS other_rule
FROM listed_hits AS l
WHERE NOT l.account_excluded
ORDER BY l.ts, l.request_id;
