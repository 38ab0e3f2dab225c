-- file_batch: file a batch's records once they are in records_text: quarantined rows to quarantine_text, every row counted in source_counts.
-- Params: none
-- Inputs: __batch__ (source_id of each source the batch read)
--
-- records_text holds every row an adapter produced (kind request | skip | bad); `records` reads its
-- requests. read = parsed + quarantined per source comes from these counts.
INSERT INTO quarantine_text
SELECT r.source_id, r.source_line, r.reason, r.raw FROM records_text AS r
WHERE r.kind = 'bad' AND r.source_id IN (SELECT source_id FROM __batch__);
INSERT INTO source_counts
SELECT r.source_id, r.kind, CASE WHEN r.kind = 'request' THEN NULL ELSE r.reason END AS reason, count(*) AS n
FROM records_text AS r
WHERE r.source_id IN (SELECT source_id FROM __batch__)
GROUP BY ALL;
