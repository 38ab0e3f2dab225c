-- headline: the counts every document states (affected responses, customers, labelled tests, outcomes).
-- Params: $models, $window_start, $window_end
-- A customer is an affected account that incident.toml does not label (the researcher's and the
-- provider's own accounts are labelled); responses whose account is unknown (engine logs only) are
-- counted apart, never guessed.
SELECT
    (SELECT count(*) FROM requests) AS requests_total,
    (SELECT count(*) FROM requests
      WHERE list_contains($models, model) AND ts >= $window_start AND ts <= $window_end) AS in_scope,
    (SELECT count(*) FROM affected) AS affected,
    (SELECT count(DISTINCT account_id) FROM affected) AS affected_accounts,
    (SELECT count(DISTINCT account_id) FROM affected WHERE account_label IS NULL) AS customers,
    (SELECT count(*) FROM affected WHERE account_label IS NULL AND account_id IS NOT NULL) AS customer_affected,
    (SELECT count(*) FROM affected WHERE account_label IS NOT NULL) AS labelled_affected,
    (SELECT count(*) FROM affected WHERE account_id IS NULL) AS unknown_account_affected,
    (SELECT count(*) FROM excluded) AS excluded,
    (SELECT count(*) FROM triage_hits WHERE category = 'rejected') AS rejected,
    (SELECT count(*) FROM triage_hits WHERE category = 'failed') AS failed,
    (SELECT count(*) FROM triage_hits WHERE category = 'aborted') AS aborted,
    (SELECT count(*) FROM triage_hits WHERE category = 'undecidable') AS undecidable,
    (SELECT count(*) FROM triage_hits WHERE other_hit AND NOT hit AND outcome = 'served') AS other_rule_adds,
    (SELECT count(*) FROM triage_hits WHERE hit AND NOT other_hit AND outcome = 'served') AS other_rule_drops,
    (SELECT count(*) FROM affected WHERE conflict) AS affected_with_conflicts,
    (SELECT min(ts) FROM affected) AS first_affected,
    (SELECT max(ts) FROM affected) AS last_affected,
    (SELECT count(DISTINCT prefill_node) FROM affected) AS prefill_nodes,
    (SELECT count(DISTINCT decode_node) FROM affected) AS decode_nodes
