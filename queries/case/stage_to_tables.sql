-- stage_to_tables: file one chunk of a batch's adapter output: requests to records_text, quarantined rows to quarantine_text, every row counted.
-- Params: none
-- Inputs: __stage__ (the adapter's rows for one chunk of a batch), __counts__ (the batch's counts so far, summed into source_counts at its end)
INSERT INTO records_text BY NAME SELECT * FROM __stage__ WHERE kind = 'request';
INSERT INTO quarantine_text SELECT source_id, source_line, reason, raw FROM __stage__ WHERE kind = 'bad';
INSERT INTO __counts__
SELECT source_id, kind, CASE WHEN kind = 'request' THEN NULL ELSE reason END AS reason, count(*) AS n
FROM __stage__
GROUP BY ALL;
