-- runtime_indicators: exposure indicators in the engine logs, counted per node, hour (UTC) and indicator, for the timeline.
-- Params: none
--
-- Indicators: input-length-exceeds (`Input length (N tokens) exceeds the maximum allowed length (M
-- tokens)`: on a PD prefill node of a pre-fix build each one is a request handed to decode as a
-- 1-token placeholder), exceeds-max-tokens (`Request ... exceeds the maximum number of tokens: N > M`,
-- the PD admission check), kv-checksum-mismatch, kv-canary-violation, kv-transfer-failed (counted,
-- not a signal by itself). incident_signal marks the rows that indicate exposure on that node's role.
-- The node is the node of the start the line falls in, else the file's node. No request text is kept:
-- only counts, the largest prompt length and the limit the engine printed (M + 6 = the pool when the
-- pool binds).
CREATE OR REPLACE TABLE runtime_indicators AS
WITH l AS (
    SELECT a.*, coalesce(s.node, f.node) AS node, coalesce(s.role, f.role) AS role, f.path
    FROM audit_lines AS a
    JOIN audit_files AS f USING (file_id)
    LEFT JOIN node_configs AS s ON s.file_id = a.file_id AND s.start_no = a.start_no
    WHERE a.kind IN ('input-length-exceeds', 'exceeds-max-tokens', 'kv-checksum-mismatch', 'kv-canary-violation',
                     'kv-transfer-failed')
)
SELECT
    l.node, l.role, date_trunc('hour', l.ts_eff) AS hour, l.kind AS indicator,
    count(*) AS count, min(l.ts_eff) AS first_ts, max(l.ts_eff) AS last_ts,
    arg_min(l.path, l.line_no) AS evidence_file, min(l.line_no) AS evidence_line,
    max(l.ind_limit) AS limit_tokens, max(l.ind_tokens) AS max_prompt_tokens,
    (l.kind = 'input-length-exceeds' AND l.role = 'prefill')
        OR (l.kind = 'exceeds-max-tokens' AND l.role IN ('prefill', 'decode'))
        OR l.kind IN ('kv-checksum-mismatch', 'kv-canary-violation') AS incident_signal
FROM l
GROUP BY l.node, l.role, date_trunc('hour', l.ts_eff), l.kind
ORDER BY l.node, hour NULLS FIRST, indicator;
