-- runtime_indicators: exposure indicators in the engine logs, counted per node, hour (UTC; the host's own hour when the zone is unknown) and indicator, for the timeline.
-- Params: none
--
-- Indicators (the exact lines are in toolkit/rules/builds.toml [[log_line]]):
--   input-length-exceeds   `Input length (N tokens) exceeds the maximum allowed length (M tokens)`: what
--                          became of the request depends on the node's build (node_configs.over_long_outcome)
--                          The scheduler's other rejections count here too, each build's own lines
--                          (`Request prompt exceeds the KV memory budget: input_len=N.` from 0.5.21,
--                          `Multimodal prompt is too long after expanding multimodal tokens. ...`): every
--                          one is a prompt answered through set_finish_with_abort, HTTP 400
--   exceeds-max-tokens     `Request ... exceeds the maximum number of tokens: N > M` (the bootstrap door; decode's
--                          admission also prints `... exceeds the unified FULL/SWA KV byte budget` from 0.5.21 and
--                          `... requires too many SWA KV tokens for decode preallocation: N > M` from 0.5.12)
--   kv-checksum-mismatch   `KV checksum mismatch req=...` (decode aborted the request with 500)
--   kv-checksum-skipped    `KV checksum skipped ... admitted unverified` (not exposure; requests unverified)
--   kv-canary-violation    `kv_canary violation: launch_tag=...` (one per violation)
--   canary-violations-counted  `[canary] step=... violations=N` with N > 0: N is the running count, so an
--                          hour's count is its largest N (a healthy canary prints violations=0: no row)
--   context-corruption     `Context corruption detected ... bootstrap_room=...` (metadata of another request)
--   kv-transfer-failed     counted, not a signal by itself
-- incident_signal marks the rows that indicate exposure on that node's role. The node is the node of
-- the start the line falls in, else the file's node. No request text is kept: only counts, the largest
-- prompt length and the limit the engine printed (M + 6 = the pool when the pool binds).
CREATE OR REPLACE TABLE runtime_indicators AS
WITH l AS (
    SELECT a.*, coalesce(s.node, f.node) AS node, coalesce(s.role, f.role) AS role, f.path,
        CASE WHEN a.kind = 'canary-stats' THEN 'canary-violations-counted'
             WHEN a.kind IN ('kv-budget-exceeded', 'mm-prompt-too-long') THEN 'input-length-exceeds'
             WHEN a.kind IN ('kv-byte-budget-exceeded', 'swa-prealloc-exceeded') THEN 'exceeds-max-tokens'
             ELSE a.kind END AS indicator
    FROM audit_lines AS a
    JOIN audit_files AS f USING (file_id)
    LEFT JOIN node_configs AS s ON s.file_id = a.file_id AND s.start_no = a.start_no
    WHERE a.kind IN ('input-length-exceeds', 'kv-budget-exceeded', 'mm-prompt-too-long', 'exceeds-max-tokens',
                     'kv-byte-budget-exceeded', 'swa-prealloc-exceeded', 'kv-checksum-mismatch', 'kv-checksum-skipped',
                     'kv-canary-violation', 'context-corruption', 'kv-transfer-failed')
       OR (a.kind = 'canary-stats' AND a.canary_violations > 0)
)
SELECT
    l.node, l.role, date_trunc('hour', l.ts_eff) AS hour, l.indicator,
    CASE WHEN l.indicator = 'canary-violations-counted' THEN max(l.canary_violations) ELSE count(*) END AS count,
    min(l.ts_eff) AS first_ts, max(l.ts_eff) AS last_ts,
    min(l.ts_host_eff) AS first_ts_host, max(l.ts_host_eff) AS last_ts_host,
    arg_min(l.path, l.line_no) AS evidence_file, min(l.line_no) AS evidence_line,
    max(l.ind_limit) AS limit_tokens, max(l.ind_tokens) AS max_prompt_tokens,
    (l.indicator = 'input-length-exceeds' AND l.role = 'prefill')
        OR (l.indicator = 'exceeds-max-tokens' AND l.role IN ('prefill', 'decode'))
        OR l.indicator IN ('kv-checksum-mismatch', 'kv-canary-violation', 'canary-violations-counted',
                           'context-corruption') AS incident_signal
FROM l
GROUP BY l.node, l.role, date_trunc('hour', l.ts_eff), date_trunc('hour', l.ts_host_eff), l.indicator
ORDER BY l.node, hour NULLS FIRST, min(l.ts_host_eff) NULLS FIRST, l.indicator;
