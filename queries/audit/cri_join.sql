-- cri_join: a container-runtime (CRI) log with its split records joined back into whole lines.
-- Params: none
-- Inputs: __input__ (numbered text lines of one or more files: file_id, line_no, line, line_bytes)
--
-- containerd / CRI-O write `<RFC3339 time> <stdout|stderr> <P|F> <content>`: a line longer than the
-- runtime's buffer (16 KiB by default; SGLang's server_args dump is often longer) is split into P
-- (partial) records ended by one F (full) record. The joined line keeps the first record's prefix and
-- line number (the evidence line) and the sum of the parts' lengths; a group whose last record is P
-- (the file ends inside a line) is marked cri_open, i.e. truncated.
WITH l AS (
    SELECT i.file_id, i.line_no, i.line_bytes, i.line AS text
    FROM __input__ AS i
),
t AS (
    SELECT l.*, regexp_extract(l.text, '^\S+\s+(?:stdout|stderr)\s+([FP])\s', 1) AS tag
    FROM l
),
g AS (
    SELECT t.*,
        coalesce(sum(CASE WHEN t.tag = 'P' THEN 0 ELSE 1 END)
                 OVER (PARTITION BY t.file_id ORDER BY t.line_no ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS grp
    FROM t
)
SELECT
    g.file_id,
    min(g.line_no) AS line_no,
    string_agg(CASE WHEN g.line_no = g.first_no THEN g.text
                    ELSE regexp_replace(g.text, '^\S+\s+(?:stdout|stderr)\s+[FP]\s', '') END, ''
               ORDER BY g.line_no) AS line,
    sum(g.line_bytes)::BIGINT AS line_bytes,
    arg_max(g.tag, g.line_no) = 'P' AS cri_open,
    count(*)::BIGINT AS cri_parts
FROM (SELECT g.*, min(g.line_no) OVER (PARTITION BY g.file_id, g.grp) AS first_no FROM g) AS g
GROUP BY g.file_id, g.grp
