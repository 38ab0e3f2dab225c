-- replay_scope: what the replay's figures cover: how many affected responses it replayed of how many, and at
-- which numeric scale (replay_results.scale: the decode attention's; before issue 39 every length's).
-- Params: none
SELECT (SELECT count(DISTINCT request_id) FROM replay_results) AS replayed,
       (SELECT count(*) FROM affected) AS affected,
       (SELECT min(scale) FROM replay_results) AS scale
