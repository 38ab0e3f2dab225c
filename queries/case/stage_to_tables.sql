-- stage_to_tables: file one source's adapter output: requests to records_text, the rest counted.
-- Params: none
-- Inputs: __stage__ (the adapter's rows for one source)
INSERT INTO records_text BY NAME SELECT * FROM __stage__ WHERE kind = 'request';
INSERT INTO quarantine_text SELECT source_id, source_line, reason, raw FROM __stage__ WHERE kind = 'bad';
INSERT INTO source_counts
SELECT source_id, kind, CASE WHEN kind = 'request' THEN NULL ELSE reason END AS reason, count(*) AS n
FROM __stage__
GROUP BY ALL;
