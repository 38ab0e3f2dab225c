-- source_requests: for every source account (replay_exposure), its requests whose data reached another
-- account's response, with when they were sent and how many responses they reached (never whose).
-- Params: none
SELECT e.source_account_id AS account_id, e.source_request_id AS request_id, min(q.ts) AS ts,
       count(DISTINCT e.reader_request_id) AS reached_responses, sum(e.tokens) AS tokens
FROM replay_exposure AS e
LEFT JOIN requests AS q ON q.request_id = e.source_request_id
WHERE e.source_account_id IS NOT NULL
  AND e.reader_account_id IS DISTINCT FROM e.source_account_id
GROUP BY e.source_account_id, e.source_request_id
ORDER BY account_id, ts NULLS LAST, request_id
