-- summary: the headline counts of a triage, in one row: the case table triage_summary, which the terminal
-- prints and every report states (queries/report/headline.sql reads it: the counts are defined here only).
-- Params: $requests_total, $in_scope
-- Every count reads the small derived tables; the two that need a pass over `requests` come in as
-- parameters (kvir counts them where that is cheap: see toolkit/triage/run.py). Accounts are counted
-- apart from responses: affected_accounts = customer_accounts + labelled_accounts (known ids only).
-- The mechanism's own counts follow, added by its summary queries (kvir.triage.plugin.TriagePart).
CREATE OR REPLACE TABLE triage_summary AS
SELECT
    $requests_total::BIGINT AS requests_total,
    $in_scope::BIGINT AS in_scope,
    (SELECT count(*) FROM affected) AS affected,
    (SELECT count(DISTINCT account_id) FROM affected) AS affected_accounts,
    (SELECT count(DISTINCT account_id) FROM affected WHERE account_label IS NULL) AS customer_accounts,
    (SELECT count(DISTINCT account_id) FROM affected WHERE account_label IS NOT NULL) AS labelled_accounts,
    (SELECT count(*) FROM affected WHERE account_id IS NOT NULL AND account_label IS NULL) AS affected_customer,
    (SELECT count(*) FROM affected WHERE account_id IS NULL) AS affected_unknown_account,
    (SELECT count(*) FROM excluded) AS excluded,
    (SELECT count(*) FROM affected WHERE account_label IS NOT NULL) AS affected_labelled,
    (SELECT count(*) FROM triage_hits WHERE category = 'rejected') AS rejected,
    (SELECT count(*) FROM triage_hits WHERE category = 'failed') AS failed,
    (SELECT count(*) FROM triage_hits WHERE category = 'aborted') AS aborted,
    (SELECT count(*) FROM triage_hits WHERE category = 'undecidable') AS undecidable,
    (SELECT count(*) FROM triage_hits WHERE category = 'possibly-affected') AS possibly_affected,
    (SELECT count(*) FROM triage_hits WHERE other_hit AND NOT hit AND outcome = 'served') AS other_rule_adds,
    (SELECT count(*) FROM triage_hits WHERE hit AND NOT other_hit AND outcome = 'served') AS other_rule_drops,
    (SELECT count(*) FROM affected WHERE conflict) AS affected_with_conflicts,
    (SELECT count(*) FROM conflicts) AS conflicts,        -- requests whose records disagree (conflicts.csv)
    (SELECT min(ts) FROM affected) AS first_affected,
    (SELECT max(ts) FROM affected) AS last_affected,
    (SELECT count(DISTINCT prefill_node) FROM affected) AS prefill_nodes,
    (SELECT count(DISTINCT decode_node) FROM affected) AS decode_nodes,
    -- joining evidence (case/evidence_join): candidates and gateway identities
    (SELECT count(*) FROM evidence_joins WHERE status = 'matched') AS join_matched,
    (SELECT count(*) FROM evidence_joins WHERE status = 'unmatched') AS join_unmatched,
    (SELECT count(*) FROM evidence_joins WHERE status = 'ambiguous') AS join_ambiguous,
    -- ambiguous records another source holds under another id: not requests of their own
    (SELECT count(*) FROM evidence_joins WHERE status = 'ambiguous' AND NOT counted) AS join_ambiguous_held,
    (SELECT max(tolerance_s) FROM evidence_joins) AS join_tolerance_s,
    -- records joined by id need no time: the median time between them shows a source read in the wrong zone
    (SELECT median(delta_s) FROM evidence_joins
     WHERE status = 'matched' AND method = 'id' AND partner_request_id <> request_id) AS join_id_delta_s;
