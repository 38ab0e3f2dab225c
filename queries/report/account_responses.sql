-- account_responses: the affected responses of every affected account with an id, one row each, by account
-- (kvir.report splits them by account_id: each notice shows exactly its own account's rows).
-- Params: none
SELECT account_id, request_id, ts, ts_end, prompt_tokens, completion_tokens, http_status, finish_reason
FROM affected
WHERE account_id IS NOT NULL
ORDER BY account_id, ts, request_id
