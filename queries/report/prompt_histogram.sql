-- prompt_histogram: prompt lengths of the model's requests in the window, binned on a log scale
-- ($bins_per_decade bins per factor of ten) and split at the figure's limit lines ($lines: the KV pool,
-- the engine's limit, the context), so that no bar spans a line: `seg` counts the lines at or below the
-- prompt length. The affected ones are counted apart.
-- Params: $models, $window_start, $window_end, $bins_per_decade, $lines
SELECT CAST(floor(log10(greatest(r.prompt_tokens, 1)) * $bins_per_decade) AS INTEGER) AS bin,
       len(list_filter($lines, lambda x: x <= r.prompt_tokens)) AS seg,
       count(*) AS n,
       sum(CASE WHEN a.request_id IS NOT NULL THEN 1 ELSE 0 END) AS n_affected
FROM requests AS r
LEFT JOIN affected AS a ON a.request_id = r.request_id
WHERE (list_contains($models, r.model) OR list_contains($models, r.model_other)) AND r.ts >= $window_start AND r.ts <= $window_end
  AND r.prompt_tokens IS NOT NULL
GROUP BY 1, 2
ORDER BY 1, 2
