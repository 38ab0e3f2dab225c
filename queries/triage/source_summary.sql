-- source_summary: per input, how it was read and read = parsed + quarantined (skips and their reasons).
-- Params: none
CREATE OR REPLACE TABLE source_summary AS
SELECT s.source_id, s.label AS input, s.format, s.chosen_by, s.source_tz, s.served_model, s.served_model_source,
       s.node, s.role, s.size_bytes, s.sha256,
       coalesce(sum(c.n), 0) AS read,
       coalesce(sum(c.n) FILTER (WHERE c.kind <> 'bad'), 0) AS parsed,
       coalesce(sum(c.n) FILTER (WHERE c.kind = 'request'), 0) AS requests,
       coalesce(sum(c.n) FILTER (WHERE c.kind = 'skip'), 0) AS skipped,
       coalesce(sum(c.n) FILTER (WHERE c.kind = 'bad'), 0) AS quarantined,
       string_agg(CASE WHEN c.kind <> 'request' THEN c.kind || ': ' || c.reason || ' x' || c.n END, '; '
                  ORDER BY c.kind, c.reason) AS breakdown
FROM sources AS s LEFT JOIN source_counts AS c USING (source_id)
GROUP BY ALL
ORDER BY s.source_id;
