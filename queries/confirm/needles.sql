-- needles: the case tables `confirm_needle_export` (per needle and response) and `confirm_needle_results`: per needle, the responses (other than its own plant's)
-- that hold a fragment of it, with their tenants; never the needle.
-- Params: none
-- A probe canary's own plant request is left out (its response may echo the prompt it planted).
CREATE OR REPLACE TABLE confirm_needle_export AS
SELECT n.needle_id, n.kind, n.label, n.planted_by, h.request_id, r.account_id, r.ts,
       max(h.chars) AS chars, min(h."offset") FILTER (WHERE NOT h.normalised) AS "offset", bool_and(h.normalised) AS normalised
FROM confirm_needle_hits AS h
JOIN confirm_needles AS n ON n.needle_id = h.needle_id
LEFT JOIN requests AS r ON r.request_id = h.request_id
WHERE NOT list_contains(coalesce(n.planted_request_ids, []), h.request_id)
GROUP BY ALL
ORDER BY n.needle_id, r.ts, h.request_id;

CREATE OR REPLACE TABLE confirm_needle_results AS
SELECT n.needle_id, n.kind, n.label, n.planted_by, count(DISTINCT e.request_id) AS responses,
       coalesce(list_sort(list_distinct(list(e.account_id) FILTER (WHERE e.account_id IS NOT NULL))), []) AS tenants,
       coalesce(list_sort(list_distinct(list(e.request_id) FILTER (WHERE e.request_id IS NOT NULL))), []) AS request_ids
FROM confirm_needles AS n LEFT JOIN confirm_needle_export AS e ON e.needle_id = n.needle_id
GROUP BY ALL
ORDER BY n.needle_id;
