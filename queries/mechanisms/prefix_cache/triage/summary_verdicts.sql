-- summary_verdicts: the headline (triage_summary, made by triage/summary) restated for the prefix-cache
-- mechanism: `affected` counts the responses judged affected, `possibly_affected` those that may be, and
-- `cannot_decide` (also in `undecidable`) the requests whose evidence cannot say (triage/counts).
-- Params: none
CREATE OR REPLACE TABLE triage_summary AS
SELECT t.* REPLACE (
        (SELECT count(*) FROM affected WHERE verdict = 'affected') AS affected,
        (SELECT count(*) FROM affected WHERE verdict = 'possibly affected') AS possibly_affected,
        (SELECT coalesce(sum(cannot_decide), 0) FROM prefix_cache_counts) AS undecidable
    ),
    'prefix-cache' AS mechanism,
    (SELECT coalesce(sum(cannot_decide), 0) FROM prefix_cache_counts) AS cannot_decide,
    (SELECT coalesce(sum(cache_hits), 0) FROM prefix_cache_counts) AS cache_hits,
    (SELECT count(DISTINCT instance) FROM affected) AS instances
FROM triage_summary AS t;
