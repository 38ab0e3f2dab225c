-- summary: verdict counts of the replay and the source accounts it names.
-- Params: none
SELECT
    (SELECT count(*) FROM replay_results) AS replayed,
    (SELECT count(*) FROM replay_results WHERE verdict = 'exposed') AS exposed,
    (SELECT count(*) FROM replay_results WHERE verdict = 'rejected-by-patch') AS rejected_by_patch,
    (SELECT count(*) FROM replay_results WHERE verdict = 'not-reproduced') AS not_reproduced,
    (SELECT count(*) FROM replay_results WHERE verdict = 'inconclusive') AS inconclusive,
    (SELECT count(*) FROM replay_results WHERE unpatched_status = 200 AND patched_status = 400) AS fixed_by_patch,
    (SELECT count(DISTINCT source_account_id) FROM replay_exposure WHERE source_account_id IS NOT NULL) AS source_accounts,
    (SELECT count(DISTINCT source_request_id) FROM replay_exposure) AS source_requests
