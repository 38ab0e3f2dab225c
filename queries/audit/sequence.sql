-- sequence: which node start each parsed start-up line belongs to (start_no per file), and its effective time.
-- Params: none
-- Inputs: __parsed__ (rows of audit/startup_lines for every file)
--
-- A start opens at a start-up marker (SGLang `server_args=ServerArgs(`, vLLM's engine/API-server banner)
-- unless no configuration line came since the previous marker (vLLM prints several banners per start).
-- Inside one marker segment, the n-th pool line of one rank tag belongs to the n-th start: a restart
-- whose dump is missing (a cut log) still counts, while the same line on TP0..TP7 of one start
-- (older builds print it on every rank) stays one start. An environment dump, a version line, vLLM's
-- `Using max model len` (the API server prints it before the engine's banner) or pasted
-- configuration (a launch command, key=value lines) with no
-- configuration line after it in its own start belongs to the next start (entrypoints print them
-- before launching the server). Lines
-- without a time prefix inherit the previous line's time (ts_inherited; ts_eff in UTC, ts_host_eff as the
-- host printed it, kept when the zone is unknown).
CREATE OR REPLACE TABLE audit_lines AS
WITH l AS (
    SELECT p.*,
        p.kind IN ('server_args', 'vllm_start') AS is_marker,
        p.kind IN ('pool', 'kv_alloc', 'pool_warning', 'vllm_kv', 'vllm_blocks', 'vllm_concurrency', 'vllm_refusal') AS is_cfg,
        p.kind IN ('pool', 'kv_alloc', 'vllm_kv', 'vllm_blocks') AS is_key
    FROM __parsed__ AS p
),
c1 AS (
    SELECT l.*,
        coalesce(sum(CASE WHEN l.is_cfg THEN 1 ELSE 0 END) OVER (PARTITION BY l.file_id ORDER BY l.line_no
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS cfg_before
    FROM l
),
c2 AS (
    SELECT c1.*,
        lag(c1.cfg_before) OVER (PARTITION BY c1.file_id, c1.is_marker ORDER BY c1.line_no) AS prev_marker_cfg
    FROM c1
),
c3 AS (
    SELECT c2.*,
        sum(CASE WHEN c2.is_marker AND (c2.prev_marker_cfg IS NULL OR c2.prev_marker_cfg < c2.cfg_before) THEN 1 ELSE 0 END)
            OVER (PARTITION BY c2.file_id ORDER BY c2.line_no ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS seg
    FROM c2
),
c4 AS (
    SELECT c3.*,
        CASE WHEN c3.is_key THEN row_number() OVER (PARTITION BY c3.file_id, c3.seg, c3.is_key, c3.kind, c3.rank_tag
                                                    ORDER BY c3.line_no) END AS occ
    FROM c3
),
c5 AS (
    SELECT c4.*,
        coalesce(max(c4.occ) OVER (PARTITION BY c4.file_id, c4.seg ORDER BY c4.line_no
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), 1) AS sub
    FROM c4
),
c6 AS (
    SELECT c5.*, dense_rank() OVER (PARTITION BY c5.file_id ORDER BY c5.seg, c5.sub) AS start0
    FROM c5
),
c7 AS (
    SELECT c6.*,
        coalesce(sum(CASE WHEN c6.is_cfg THEN 1 ELSE 0 END) OVER (PARTITION BY c6.file_id, c6.start0 ORDER BY c6.line_no
                 ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), 0) AS cfg_in_start_after,
        max(c6.start0) OVER (PARTITION BY c6.file_id) AS last_start
    FROM c6
)
SELECT c7.* EXCLUDE (cfg_before, prev_marker_cfg, occ, sub, start0, cfg_in_start_after, last_start),
    CASE WHEN c7.kind IN ('env', 'version', 'vllm_version', 'lmcache_version', 'config', 'vllm_max_len') AND c7.cfg_in_start_after = 0 AND c7.start0 < c7.last_start THEN c7.start0 + 1
         ELSE c7.start0 END AS start_no,
    c7.ts IS NULL AND c7.ts_text IS NULL AS ts_inherited,
    CASE WHEN c7.ts IS NOT NULL OR c7.ts_text IS NOT NULL THEN c7.ts
         ELSE last_value(c7.ts IGNORE NULLS) OVER (PARTITION BY c7.file_id ORDER BY c7.line_no
                                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END AS ts_eff,
    CASE WHEN c7.ts_host IS NOT NULL OR c7.ts_text IS NOT NULL THEN c7.ts_host
         ELSE last_value(c7.ts_host IGNORE NULLS) OVER (PARTITION BY c7.file_id ORDER BY c7.line_no
                                                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END AS ts_host_eff
FROM c7;
