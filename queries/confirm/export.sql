-- export: confirmations.csv / .parquet, flat: one row per (affected response, source request) that confirms
-- foreign content, and one row (no source) for every other response.
-- Params: none
CREATE OR REPLACE TABLE confirm_export AS
SELECT c.request_id, c.ts, c.account_id, c.instance, c.triage_verdict, c.verdict, c.reason,
       s.source_request_id, s.source_tenant, array_to_string(s.source_parts, ' ') AS source_parts, s.rank,
       s.score, s.overlap, s.matched_fingerprints, s.matched_bytes, s.instance AS source_instance,
       array_to_string(c.corruption, ' ') AS corruption, c.candidates, c.candidates_with_text
FROM confirmations AS c
LEFT JOIN confirmation_sources AS s ON s.request_id = c.request_id
ORDER BY c.ts, c.request_id, s.rank, s.source_request_id;
