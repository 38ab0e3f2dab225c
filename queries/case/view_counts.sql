-- view_counts: count what a columnar source (queried in place) holds, by kind and reason.
-- Params: $source_id
-- Inputs: __records__ (the source's normalising view)
INSERT INTO source_counts
SELECT $source_id AS source_id, kind, CASE WHEN kind = 'request' THEN NULL ELSE reason END AS reason, count(*) AS n
FROM __records__
GROUP BY ALL;
