-- accounts: per account, its affected responses (count, first and last), with the spec's labels.
-- Params: none
-- Engine logs name no customer: their responses are grouped under account_id NULL ("unknown").
CREATE OR REPLACE TABLE accounts AS
SELECT
    a.account_id,
    count(*) AS affected,
    min(a.ts) AS first_affected,
    max(a.ts) AS last_affected,
    count(DISTINCT a.decode_node) AS decode_nodes,
    any_value(a.account_label) AS label,
    any_value(r.reason) AS label_reason
FROM affected AS a
LEFT JOIN account_rules AS r ON r.account_id = a.account_id
GROUP BY a.account_id
ORDER BY affected DESC, a.account_id NULLS LAST;
