-- problems: every input line or file the audit could not fully use, with the reason (truncated lines, unusable times, times without a zone, over-long lines, files without start-up lines).
-- Params: none
CREATE OR REPLACE TABLE audit_problems AS
SELECT f.path AS file, a.line_no AS line, 'truncated ' || a.kind || ' line: the values after the cut are missing' AS problem
FROM audit_lines AS a JOIN audit_files AS f USING (file_id) WHERE a.truncated
UNION ALL
SELECT f.path, a.line_no, a.ts_problem
FROM audit_lines AS a JOIN audit_files AS f USING (file_id) WHERE a.ts_problem IS NOT NULL
UNION ALL
SELECT f.path, t.line_no, 'line of ' || t.line_bytes || ' bytes is longer than the line limit (not read)'
FROM audit_too_long AS t JOIN audit_files AS f USING (file_id)
UNION ALL
SELECT f.path, NULL, f.note FROM audit_files AS f WHERE f.note IS NOT NULL
UNION ALL
SELECT f.path, NULL, 'times are host-local and no zone was given (--source-tz or source_tz in the inventory): they are '
    || 'shown as the host printed them, zone unknown; pool vs context, the build and the flags need no clock, '
    || 'kvir triage --startup (which joins start-up and request times) needs the zone'
FROM audit_files AS f WHERE f.zone_unknown
ORDER BY 1, 2 NULLS FIRST;
