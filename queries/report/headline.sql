-- headline: the headline counts every document states, read from the triage's own summary (the case table
-- triage_summary that queries/triage/summary.sql writes and `kvir triage` prints), so the reports and the
-- terminal state the same numbers; affected_now recounts the affected table to notice a later change.
-- Params: none
SELECT s.requests_total, s.in_scope, s.affected, s.affected_accounts, s.customer_accounts, s.labelled_accounts,
       s.affected_customer, s.affected_labelled, s.affected_unknown_account, s.excluded, s.rejected, s.failed,
       s.aborted, s.undecidable, s.other_rule_adds, s.other_rule_drops, s.affected_with_conflicts,
       s.first_affected, s.last_affected, s.prefill_nodes, s.decode_nodes,
       (SELECT count(*) FROM affected) AS affected_now
FROM triage_summary AS s
