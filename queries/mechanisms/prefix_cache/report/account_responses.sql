-- account_responses: the affected and possibly affected responses of every account with an id, one row each,
-- with the triage's verdict, the cached prompt tokens and how many other tenants could have written them (a
-- count: a notice never names another customer). Replaces queries/report/account_responses.sql for this
-- mechanism: the extra columns are the notice's (templates/mechanisms/prefix_cache/notice_responses.md.j2).
-- Params: none
SELECT account_id, request_id, ts, ts_end, prompt_tokens, completion_tokens, http_status, finish_reason,
       verdict, cached_tokens, len(source_tenants) AS source_tenants
FROM affected
WHERE account_id IS NOT NULL
ORDER BY account_id, ts, request_id
