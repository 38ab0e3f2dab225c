-- models: every model name the requests carry (model and model_other), per source format, with how many
-- requests carry it in all and inside the window. The names a misspelt spec missed are found here.
-- Params: $window_start, $window_end
CREATE OR REPLACE TABLE model_inventory AS
WITH names AS (
    SELECT r.model AS name, r.source_format, r.ts FROM requests AS r WHERE r.model IS NOT NULL
    UNION ALL
    SELECT r.model_other, r.source_format, r.ts FROM requests AS r
    WHERE r.model_other IS NOT NULL AND r.model_other IS DISTINCT FROM r.model
)
SELECT n.name, n.source_format, count(*) AS requests,
    count(*) FILTER (WHERE n.ts >= $window_start AND n.ts <= $window_end) AS in_window
FROM names AS n
GROUP BY n.name, n.source_format
ORDER BY requests DESC, n.name, n.source_format;
