-- summary: the headline counts of a triage, in one row.
-- Params: $models, $window_start, $window_end
-- requests_total and in_scope need one pass over `requests`; every other count reads triage_hits.
SELECT
    (SELECT count(*) FROM requests) AS requests_total,
    (SELECT count(*) FROM requests
      WHERE list_contains($models, model) AND ts >= $window_start AND ts <= $window_end) AS in_scope,
    (SELECT count(*) FROM affected) AS affected,
    (SELECT count(DISTINCT account_id) FROM affected) AS affected_accounts,
    (SELECT count(*) FROM affected WHERE account_id IS NULL) AS affected_unknown_account,
    (SELECT count(*) FROM excluded) AS excluded,
    (SELECT count(*) FROM affected WHERE account_label IS NOT NULL) AS affected_labelled,
    (SELECT count(*) FROM triage_hits WHERE category = 'rejected') AS rejected,
    (SELECT count(*) FROM triage_hits WHERE category = 'failed') AS failed,
    (SELECT count(*) FROM triage_hits WHERE category = 'aborted') AS aborted,
    (SELECT count(*) FROM triage_hits WHERE category = 'undecidable') AS undecidable,
    (SELECT count(*) FROM triage_hits WHERE other_hit AND NOT hit AND outcome = 'served') AS other_rule_adds,
    (SELECT count(*) FROM triage_hits WHERE hit AND NOT other_hit AND outcome = 'served') AS other_rule_drops,
    (SELECT count(*) FROM affected WHERE conflict) AS affected_with_conflicts,
    (SELECT min(ts) FROM affected) AS first_affected,
    (SELECT max(ts) FROM affected) AS last_affected;
