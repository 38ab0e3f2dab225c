-- models: every model name the requests of the window carry (model and model_other), per source format,
-- with how many requests carry it. The names a misspelt spec missed are found here. Only the window is
-- read (a plain bound on ts reaches a Parquet scan): `kvir triage --list-models` reads every time.
-- Params: $window_start, $window_end
CREATE OR REPLACE TABLE model_inventory AS
WITH w AS (
    SELECT r.model, r.model_other, r.source_format FROM requests AS r
    WHERE r.ts >= $window_start AND r.ts <= $window_end
),
names AS (
    SELECT w.model AS name, w.source_format FROM w WHERE w.model IS NOT NULL
    UNION ALL
    SELECT w.model_other, w.source_format FROM w WHERE w.model_other IS NOT NULL AND w.model_other IS DISTINCT FROM w.model
)
SELECT n.name, n.source_format, count(*) AS requests, count(*) AS in_window
FROM names AS n
GROUP BY n.name, n.source_format
ORDER BY requests DESC, n.name, n.source_format;
