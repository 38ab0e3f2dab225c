-- replay_for_account: the replay verdict of each affected response of ONE account, with how many
-- foreign requests it read (never which ones: they belong to other customers).
-- Params: $account_id
SELECT rr.request_id, rr.verdict, rr.leaked_tokens, coalesce(len(rr.foreign_owners), 0) AS foreign_requests,
       rr.uninitialised_mass
FROM replay_results AS rr
LEFT JOIN affected AS a ON a.request_id = rr.request_id
WHERE coalesce(a.account_id, rr.account_id) = $account_id
ORDER BY rr.request_id
