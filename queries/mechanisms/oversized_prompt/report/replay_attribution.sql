-- replay_attribution: the scale whose page placement named the replay's foreign owners (1: full size), for a
-- case whose replay_results has the column (replays since issue 39; before it, `scale` shrank placement too).
-- Params: none
SELECT min(attribution_scale) AS attribution_scale FROM replay_results
