-- prompt_histogram: prompt lengths of the model's requests in the window, binned on a log scale
-- ($bins_per_decade bins per factor of ten), with the affected ones counted apart.
-- Params: $models, $window_start, $window_end, $bins_per_decade
SELECT CAST(floor(log10(greatest(r.prompt_tokens, 1)) * $bins_per_decade) AS INTEGER) AS bin,
       count(*) AS n,
       sum(CASE WHEN a.request_id IS NOT NULL THEN 1 ELSE 0 END) AS n_affected
FROM requests AS r
LEFT JOIN affected AS a ON a.request_id = r.request_id
WHERE list_contains($models, r.model) AND r.ts >= $window_start AND r.ts <= $window_end
  AND r.prompt_tokens IS NOT NULL
GROUP BY 1
ORDER BY 1
