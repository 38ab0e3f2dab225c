-- replay_sources: accounts whose data the replay found in another account's response (the "source"
-- side of replay_exposure), with how many of their requests leaked and into how many responses.
-- Params: none
SELECT e.source_account_id AS account_id, any_value(r.label) AS label,
       count(DISTINCT e.source_request_id) AS source_requests,
       count(DISTINCT e.reader_request_id) AS reader_responses,
       sum(e.tokens) AS tokens
FROM replay_exposure AS e
LEFT JOIN account_rules AS r ON r.account_id = e.source_account_id
WHERE e.source_account_id IS NOT NULL
  AND e.reader_account_id IS DISTINCT FROM e.source_account_id
GROUP BY e.source_account_id
ORDER BY reader_responses DESC, e.source_account_id
