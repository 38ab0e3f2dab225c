-- summary: verdict counts of the replay under each response's production build (build_role 'incident'), what the first fixed build did with them, and the source accounts named.
-- Params: none
SELECT
    (SELECT count(DISTINCT request_id) FROM replay_results) AS replayed,
    (SELECT count(*) FROM replay_results WHERE build_role = 'incident' AND verdict = 'exposed') AS exposed,
    (SELECT count(*) FROM replay_results WHERE build_role = 'incident' AND verdict = 'served-unwritten') AS served_unwritten,
    (SELECT count(*) FROM replay_results WHERE build_role = 'incident' AND verdict = 'not-reproduced') AS not_reproduced,
    (SELECT count(*) FROM replay_results WHERE build_role = 'incident' AND verdict = 'inconclusive') AS inconclusive,
    (SELECT count(*) FROM replay_results AS i JOIN replay_results AS x USING (request_id)
      WHERE i.build_role = 'incident' AND i.http_status = 200 AND x.first_fixed AND x.http_status BETWEEN 400 AND 499) AS rejected_by_first_fixed,
    (SELECT count(DISTINCT source_account_id) FROM replay_exposure WHERE source_account_id IS NOT NULL) AS source_accounts,
    (SELECT count(DISTINCT source_request_id) FROM replay_exposure) AS source_requests
