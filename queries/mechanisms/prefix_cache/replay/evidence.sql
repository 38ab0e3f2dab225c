-- evidence: where each request of the replay's history has its records (source file and line), so the
-- prompt's token ids and salt can be read from the evidence itself (never copied into the case).
-- Params: $request_ids
SELECT r.request_id, r.source_id, s.label AS source_file, s.format, r.source_line
FROM records AS r JOIN sources AS s USING (source_id)
WHERE r.request_id IN (SELECT unnest($request_ids))
ORDER BY r.source_id, r.source_line
