-- invalid_utf8: quarantine the request records whose identifiers hold invalid UTF-8, instead of letting a damaged id become another id.
-- Params: none
-- Inputs: __records__ (records_text, with a batch's rows), __repaired__ (source_id, line_no of every line the reader repaired)
--
-- The line reader replaces each invalid UTF-8 sequence with U+FFFD and marks the line `repaired`
-- (kvir.ingest.lines). A request record of such a line whose request_id, account_id, bootstrap_room or
-- model holds U+FFFD no longer names what the log named: kept, it could merge with, or be notified as,
-- another request or account, or miss the incident's model. It is quarantined with the field named
-- (the first of those four that is damaged); the rest of a repaired line's record is kept as read.
UPDATE __records__ SET kind = 'bad', reason = 'invalid UTF-8 in ' || CASE
        WHEN contains(coalesce(__records__.request_id, ''), chr(65533)) THEN 'request_id'
        WHEN contains(coalesce(__records__.account_id, ''), chr(65533)) THEN 'account_id'
        WHEN contains(coalesce(__records__.bootstrap_room, ''), chr(65533)) THEN 'bootstrap_room'
        ELSE 'model' END
FROM __repaired__ AS r
WHERE __records__.source_id = r.source_id AND __records__.source_line = r.line_no AND __records__.kind = 'request'
  AND (contains(coalesce(__records__.request_id, ''), chr(65533)) OR contains(coalesce(__records__.account_id, ''), chr(65533))
       OR contains(coalesce(__records__.bootstrap_room, ''), chr(65533)) OR contains(coalesce(__records__.model, ''), chr(65533)));
