-- in_scope: how many requests of the incident's model started inside the window (any prompt length).
-- Params: $models, $window_start, $window_end
SELECT count(*) FROM requests
WHERE (model IN (SELECT unnest($models)) OR model_other IN (SELECT unnest($models)))
  AND kvir_in_window(ts, ts_extra_ns, $window_start, $window_end);
