-- account_requests: the affected responses of ONE account (the only rows its notice may show).
-- Params: $account_id
SELECT request_id, ts, ts_end, prompt_tokens, completion_tokens, http_status, finish_reason
FROM affected
WHERE account_id = $account_id
ORDER BY ts, request_id
