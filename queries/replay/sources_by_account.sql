-- sources_by_account: per source account, whose responses its data reached (for the CLI table).
-- Params: none
SELECT e.source_account_id, count(DISTINCT e.source_request_id) AS source_requests,
       count(DISTINCT e.reader_request_id) AS reader_responses,
       count(DISTINCT e.reader_account_id) AS reader_accounts, sum(e.tokens) AS tokens,
       sum(e.attention_mass) AS attention_mass
FROM replay_exposure AS e
GROUP BY e.source_account_id
ORDER BY reader_responses DESC, tokens DESC, e.source_account_id NULLS LAST
