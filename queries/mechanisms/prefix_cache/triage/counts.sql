-- counts: the prefix-cache verdicts per instance and tenant, over every request of the model
-- inside the window (triage_hits holds only the cache hits; this pass counts the rest without copying it).
-- Params: none (reads the temporary table prefix_cache_scope of triage/hits)
-- cannot_decide: served requests whose source carries no cached_tokens, cache hits without an account, and
-- requests of unknown outcome: never counted as clean. `sources` names the formats that gave no count.
CREATE OR REPLACE TABLE prefix_cache_counts AS
SELECT s.instance, s.account_id AS tenant,
    count(*) AS requests,
    count(*) FILTER (WHERE s.cached_tokens > 0) AS cache_hits,
    count(*) FILTER (WHERE h.category = 'affected') AS affected,
    count(*) FILTER (WHERE h.category = 'possibly-affected') AS possibly_affected,
    count(*) FILTER (WHERE h.category = 'clean' OR (s.cached_tokens = 0 AND s.outcome = 'served')) AS clean,
    count(*) FILTER (WHERE s.outcome IS NULL OR (s.outcome = 'served' AND s.cached_tokens IS NULL)
                     OR h.category = 'undecidable') AS cannot_decide,
    count(*) FILTER (WHERE s.outcome <> 'served') AS not_served,
    list_sort(list_distinct(list(s.source_format) FILTER (WHERE s.cached_tokens IS NULL AND coalesce(s.outcome, 'served') = 'served')))
        AS sources_without_cached_tokens
FROM prefix_cache_scope AS s
LEFT JOIN triage_hits AS h ON h.seq = s.seq
WHERE s.in_window
GROUP BY s.instance, s.account_id
ORDER BY s.instance, s.account_id NULLS LAST;
