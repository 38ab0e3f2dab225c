-- events: engine log lines as the events detection rules run over (the shape of a log shipper's record and of Timesketch's JSONL: message, datetime, timestamp_desc), one row per line.
-- Params: none
-- Inputs: __input__ (numbered text lines of one or more files: file_id, line_no, line), __files__ (one row per file:
--         file_id, path, node, tz_iana, tz_offset_min, year)
--
-- message    the whole line, as a Loki line filter sees it
-- timestamp  the line's own time in UTC: an RFC 3339 container-runtime stamp with its offset, else SGLang's
--            `[YYYY-MM-DD HH:MM:SS...]` or a JSON request log's "timestamp", else vLLM's `MM-DD HH:MM:SS` (with
--            the file's year), read in the file's zone; NULL when the line has none or the zone is not given
-- rid        the request id a line names (SGLang `rid='R'` / `self.rid='R'` / "rid": "R"; vLLM `Added request R.`,
--            `Request R aborted.`), the field correlation rules group by; node: the file's node
WITH l AS (
    SELECT i.file_id, i.line_no, i.line AS message, f.path, f.node, f.tz_iana, f.tz_offset_min, f.year,
        regexp_extract(i.line, '^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}))\s', 1) AS rt,
        regexp_extract(i.line, '^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)', 1) AS sg,
        regexp_extract(i.line, '"timestamp": "(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)"', 1) AS js,
        regexp_extract(i.line, '(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+(\d{2}-\d{2} \d{2}:\d{2}:\d{2})', 1) AS vl
    FROM __input__ AS i JOIN __files__ AS f USING (file_id)
)
SELECT l.path AS file, l.line_no, l.node, l.message,
    CASE WHEN l.rt <> '' THEN TRY_CAST(l.rt AS TIMESTAMPTZ)
         WHEN l.sg <> '' THEN kvir_parse_ts(l.sg, l.tz_iana, l.tz_offset_min)
         WHEN l.js <> '' THEN kvir_parse_ts(l.js, l.tz_iana, l.tz_offset_min)
         WHEN l.vl <> '' AND l.year IS NOT NULL THEN kvir_parse_ts(l.year || '-' || l.vl, l.tz_iana, l.tz_offset_min)
    END AS timestamp,
    nullif(coalesce(nullif(regexp_extract(l.message, '(?:^|[ (,])(?:self\.)?rid=''([^'']+)''', 1), ''),
                    nullif(regexp_extract(l.message, '"rid": "([^"]+)"', 1), ''),
                    nullif(regexp_extract(l.message, '(?:Added request|Request) (\S+?)\.?(?: aborted\.|$)', 1), '')), '') AS rid
FROM l;
