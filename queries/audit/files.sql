-- files: per input file, the node it belongs to (and how that was decided) and its line counts: read = recognised + other, nothing lost silently.
-- Params: none
--
-- A file is a text log or a /server_info JSON snapshot (input_kind). zone_unknown: its times are
-- host-local and no zone was given (shown as host-local; kvir triage --startup needs the zone).
-- Node name: the inventory's entry for the file, else a HOSTNAME= line in the log, else the file name
-- (or its folder's name when the file name is generic, e.g. engine/decode-0/server.log).
-- Role (used for lines outside any start): the log's disaggregation_mode, else the inventory, else
-- the file name.
CREATE OR REPLACE TABLE audit_files AS
WITH per_file AS (
    SELECT a.file_id,
        count(*) AS recognised,
        count(*) FILTER (WHERE a.truncated) AS truncated,
        count(*) FILTER (WHERE a.ts_problem IS NOT NULL) AS ts_problems,
        count(*) FILTER (WHERE a.kind IN ('server_args', 'pool', 'kv_alloc', 'pool_warning', 'config', 'vllm_start', 'vllm_kv',
                                          'vllm_blocks', 'vllm_concurrency', 'vllm_refusal', 'pool_bound', 'env',
                                          'version', 'vllm_version')) AS startup_lines,
        count(*) FILTER (WHERE a.kind IN ('input-length-exceeds', 'kv-budget-exceeded', 'mm-prompt-too-long', 'exceeds-max-tokens',
                                          'kv-byte-budget-exceeded', 'swa-prealloc-exceeded', 'kv-checksum-mismatch',
                                          'kv-checksum-skipped', 'kv-canary-violation', 'canary-stats',
                                          'context-corruption', 'kv-transfer-failed')) AS indicator_lines,
        bool_or(a.zone_unknown) AS zone_unknown,
        arg_min(a.env_hostname, a.line_no) FILTER (WHERE a.env_hostname IS NOT NULL) AS hostname,
        min(a.line_no) FILTER (WHERE a.env_hostname IS NOT NULL) AS hostname_line,
        arg_min(a.sa_mode, a.line_no) FILTER (WHERE a.sa_mode IS NOT NULL) AS sa_mode,
        min(a.line_no) FILTER (WHERE a.sa_mode IS NOT NULL) AS sa_mode_line,
        bool_or(a.kind = 'decode_hint') AS decode_hint,
        bool_or(a.engine = 'vllm') AS any_vllm
    FROM audit_lines AS a
    GROUP BY a.file_id
)
SELECT
    m.file_id, m.path, m.size_bytes, m.sha256, m.skipped,
    m.lines_read, coalesce(p.recognised, 0) AS recognised, coalesce(p.startup_lines, 0) AS startup_lines,
    coalesce(p.indicator_lines, 0) AS indicator_lines, coalesce(p.truncated, 0) AS truncated,
    m.too_long, coalesce(p.ts_problems, 0) AS ts_problems,
    coalesce(m.inv_node, p.hostname, m.file_node) AS node,
    CASE WHEN m.inv_node IS NOT NULL THEN 'inventory ' || m.inv_match
         WHEN p.hostname IS NOT NULL THEN 'log: HOSTNAME= at line ' || p.hostname_line
         ELSE m.file_node_source END AS name_source,
    coalesce(CASE p.sa_mode WHEN 'prefill' THEN 'prefill' WHEN 'decode' THEN 'decode' WHEN 'null' THEN 'mixed' END,
             CASE WHEN p.decode_hint THEN 'decode' END, si.role, m.inv_role, m.file_role,
             CASE WHEN p.any_vllm THEN 'mixed' END) AS role,
    m.inv_role, m.inv_version, m.inv_engine, m.inv_deployment, m.inv_env_deferred, m.inv_env_batch_cap,
    m.inv_advertised_context, m.inv_block_size, m.source_tz, m.year,
    m.input_kind, coalesce(p.zone_unknown, false) AS zone_unknown,
    CASE WHEN m.skipped IS NOT NULL THEN m.skipped
         WHEN m.input_kind = 'server_info' THEN NULL
         WHEN coalesce(p.startup_lines, 0) = 0 AND coalesce(p.indicator_lines, 0) = 0 THEN 'no recognisable start-up lines'
         WHEN coalesce(p.startup_lines, 0) = 0 THEN 'runtime lines only (no start-up lines)'
    END AS note
FROM audit_file_map AS m
LEFT JOIN per_file AS p USING (file_id)
LEFT JOIN (SELECT file_id, CASE disaggregation_mode WHEN 'prefill' THEN 'prefill' WHEN 'decode' THEN 'decode'
                                 WHEN 'null' THEN 'mixed' END AS role FROM audit_server_info) AS si USING (file_id)
ORDER BY m.file_id;
