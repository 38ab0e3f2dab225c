-- account_replays: the replay verdict of every replayed response (under the build it ran), with the account it went to and how many
-- foreign requests it read (never which ones: they belong to other customers), and why it was inconclusive.
-- Params: none
SELECT coalesce(a.account_id, rr.account_id) AS account_id, rr.request_id, rr.verdict,
       CASE WHEN rr.verdict = 'inconclusive' THEN rr.reason END AS reason, rr.leaked_tokens,
       coalesce(len(rr.foreign_owners), 0) AS foreign_requests, rr.uninitialised_mass
FROM replay_results AS rr
LEFT JOIN affected AS a ON a.request_id = rr.request_id
WHERE coalesce(a.account_id, rr.account_id) IS NOT NULL AND rr.build_role = 'incident'
ORDER BY account_id, rr.request_id
