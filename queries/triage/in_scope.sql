-- in_scope: how many requests there are, and how many of the incident's model started inside the window (any prompt length).
-- Params: $models, $window_start, $window_end
-- One scan of `requests` for both counts (a second one cost as much again on a big log).
SELECT count(*) AS requests_total,
    count(*) FILTER (WHERE (model IN (SELECT unnest($models)) OR model_other IN (SELECT unnest($models)))
                     AND kvir_in_window(ts, ts_extra_ns, $window_start, $window_end)) AS in_scope
FROM requests;
