-- accounts: every account with affected responses (count, first, last) and its incident.toml label.
-- Params: none
-- account_id NULL groups the responses only engine logs saw (no customer named): they cannot be notified.
SELECT a.account_id, a.label, a.label_reason, coalesce(r.exclude, false) AS excluded,
       a.affected, a.first_affected, a.last_affected
FROM accounts AS a
LEFT JOIN account_rules AS r ON r.account_id = a.account_id
ORDER BY a.affected DESC, a.account_id NULLS LAST
