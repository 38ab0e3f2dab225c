-- node_configs: one row per node start (SGLang or vLLM): its KV pool, context, limits, build, safety flags and evidence (file:line).
-- Params: $default_block_size, $build_fields
--
-- Per start (audit_lines.start_no of one file), values come from these lines, first source that has one:
--   pool_tokens   SGLang `max_total_num_tokens=` (line g), else `KV Cache is allocated. #tokens:` (MHA
--                 and MLA forms); vLLM `GPU KV cache size: N tokens` (`CPU ...` on the CPU build), else `# GPU blocks: N` x block size.
--                 Ranks print the same line (TP0..TP7; DP groups): values are deduplicated, never
--                 summed; when DP ranks differ, the smallest (binding) one is kept and all are listed.
--   context_len   line g `context_len=`, else server_args `context_length=`, else vLLM's max model len
--                 (`Maximum concurrency for N tokens`, `Using max model len`, `max_seq_len=`), else the
--                 user value of the context-length override warning.
--   holds_context SGLang: pool >= context; without the pool, false when a bound of it (pool_bound_tokens:
--                 --max-total-tokens, DSV4's full_token, the profiled value; SGLang's pool is the smallest of
--                 them) is below the context, a one-sided finding. vLLM: the concurrency figure when printed
--                 (>= 1.00x), because for hybrid models (SWA/Mamba) the token count understates what one
--                 request can use; a token count below the context without it decides nothing (NULL).
--   missing       what the start's evidence lacks (time, pool, context, version, role; kvir.audit.start_builds adds
--                 the start-up lines a known vLLM release prints, from kvir.rules.vllm).
--   max_req_input_len  SGLang's scheduler limit, kvir_max_req_input_len (NULL unless both are known).
--   version       a version line in the start (or elsewhere in the file), else the inventory.
--   deferred_release / transfer_batch_cap  an environment dump in the log, else the inventory's env;
--                 otherwise NULL: unknown, never assumed.
--   pc_flag / pc_connector  prefix caching on or off as the start-up log sets it, and the cache connector
--                 that adds a tier (NULL: not shown).
--   hash_algo / load_failure_policy / env_hashseed / lmcache_version  vLLM's --prefix-caching-hash-algo and
--                 kv_transfer_config kv_load_failure_policy, PYTHONHASHSEED, an LMCache version line (NULL: not shown),
--                 each with the line it came from.
-- Identical starts found in two files (a rotated copy) are kept once. Each registered mechanism's audit part
-- then adds the columns it judges starts on (kvir.audit.plugin.AuditPart.start_columns).
CREATE OR REPLACE TABLE node_configs AS
WITH file_version AS (
    SELECT a.file_id, arg_min(a.version, a.line_no) AS version, min(a.line_no) AS line
    FROM audit_lines AS a WHERE a.version IS NOT NULL GROUP BY a.file_id
),
s0 AS (
    SELECT a.file_id, a.start_no,
        -- a pasted excerpt of only an environment block or a version line is a start too: what it shows is
        -- read, and `missing` says what it lacks
        bool_or(a.kind IN ('server_args', 'vllm_start', 'pool', 'kv_alloc', 'pool_warning', 'vllm_kv', 'vllm_blocks',
                           'vllm_concurrency', 'vllm_refusal', 'config', 'pool_bound', 'env', 'version', 'vllm_version',
                           'vllm_max_len')) AS is_start,
        bool_or(a.ts_text IS NOT NULL) AS any_time,
        false AS si_start,
        CASE WHEN bool_or(a.engine = 'vllm') THEN 'vllm' WHEN bool_or(a.engine = 'sglang') THEN 'sglang' END AS engine,
        arg_min(a.ts_eff, a.line_no) FILTER (WHERE a.ts_eff IS NOT NULL AND a.kind IN ('server_args', 'vllm_start', 'pool',
                'kv_alloc', 'pool_warning', 'vllm_kv', 'vllm_blocks', 'vllm_concurrency', 'vllm_refusal', 'config')) AS ts,
        arg_min(a.ts_host_eff, a.line_no) FILTER (WHERE a.ts_host_eff IS NOT NULL AND a.kind IN ('server_args', 'vllm_start', 'pool',
                'kv_alloc', 'pool_warning', 'vllm_kv', 'vllm_blocks', 'vllm_concurrency', 'vllm_refusal', 'config')) AS ts_host,
        bool_or(a.zone_unknown) AS zone_unknown,
        arg_min(a.ts_source, a.line_no) FILTER (WHERE a.ts_eff IS NOT NULL AND a.ts_source IS NOT NULL) AS ts_source,
        min(a.ts_eff) FILTER (WHERE a.kind = 'ready') AS ready_ts,
        min(a.line_no) AS first_line,
        count(*) FILTER (WHERE a.truncated) AS truncated_lines,
        -- pool
        min(a.pool_tokens) AS g_pool,
        min(a.line_no) FILTER (WHERE a.pool_tokens IS NOT NULL) AS g_line,
        min(a.kv_tokens) AS e_pool,
        min(a.line_no) FILTER (WHERE a.kv_tokens IS NOT NULL) AS e_line,
        arg_min(a.kv_layout, a.line_no) FILTER (WHERE a.kv_layout IS NOT NULL) AS kv_layout,
        min(a.vllm_kv_tokens) AS v_pool,
        min(a.line_no) FILTER (WHERE a.vllm_kv_tokens IS NOT NULL) AS v_line,
        min(a.vllm_blocks) AS v_blocks,
        min(a.refusal_pool) AS r_pool,
        min(a.warn_pool) AS w_pool,
        max(a.warn_context) AS w_context,
        min(a.line_no) FILTER (WHERE a.kind = 'pool_warning') AS w_line,
        min(a.pool_tokens) FILTER (WHERE a.kind = 'config') AS c_pool,
        min(a.line_no) FILTER (WHERE a.kind = 'config') AS c_line,
        min(a.line_no) FILTER (WHERE a.vllm_blocks IS NOT NULL) AS b_line,
        min(a.pool_bound) AS b_pool_bound,
        arg_min(a.pool_bound_source || ' line ' || a.line_no, a.pool_bound) FILTER (WHERE a.pool_bound IS NOT NULL) AS b_pool_bound_source,
        list(DISTINCT coalesce(a.pool_tokens, a.kv_tokens, a.warn_pool, a.vllm_kv_tokens)) FILTER (
            WHERE coalesce(a.pool_tokens, a.kv_tokens, a.warn_pool, a.vllm_kv_tokens) IS NOT NULL) AS pool_values,
        list(DISTINCT a.rank_tag) FILTER (WHERE a.kind IN ('pool', 'kv_alloc', 'vllm_kv', 'vllm_blocks') AND a.rank_tag <> '') AS rank_tags,
        -- context
        min(a.context_len) FILTER (WHERE a.kind = 'pool') AS g_context,
        max(a.sa_context_length) AS sa_context,
        max(a.vllm_max_model_len) AS v_context,
        min(a.line_no) FILTER (WHERE a.vllm_max_model_len IS NOT NULL) AS v_context_line,
        max(a.ctx_user) AS ctx_user,
        max(a.ctx_derived) AS ctx_derived,
        min(a.line_no) FILTER (WHERE a.kind = 'ctx_override') AS ctx_override_line,
        max(a.vllm_concurrency) FILTER (WHERE a.kind IN ('vllm_concurrency', 'vllm_kv')) AS max_concurrency,
        min(a.line_no) FILTER (WHERE a.kind IN ('vllm_concurrency', 'vllm_kv') AND a.vllm_concurrency IS NOT NULL) AS conc_line,
        -- server_args
        min(a.line_no) FILTER (WHERE a.kind = 'server_args') AS sa_line,
        arg_min(a.truncated, a.line_no) FILTER (WHERE a.kind = 'server_args') AS sa_truncated,
        arg_min(a.sa_shape, a.line_no) FILTER (WHERE a.kind = 'server_args') AS sa_shape,
        arg_min(a.sa_keys, a.line_no) FILTER (WHERE a.kind = 'server_args') AS sa_keys,
        list(DISTINCT a.kind) AS line_kinds,
        -- the canary's statistics and the checksum's admission warnings: evidence that requests are verified
        count(*) FILTER (WHERE a.kind = 'canary-stats') AS canary_stats_lines,
        max(a.canary_protected) AS canary_protected_tokens,
        max(a.canary_violations) AS canary_violations,
        min(a.line_no) FILTER (WHERE a.kind = 'canary-stats' AND a.canary_protected > 0) AS canary_verified_line,
        min(a.line_no) FILTER (WHERE a.kind = 'canary-installed') AS canary_installed_line,
        count(*) FILTER (WHERE a.kind = 'kv-checksum-skipped') AS checksum_skipped_lines,
        min(a.line_no) FILTER (WHERE a.kind = 'kv-checksum-skipped') AS checksum_skipped_line,
        count(*) FILTER (WHERE a.kind = 'kv-checksum-mismatch') AS checksum_mismatch_lines,
        arg_min(a.sa_mode, a.line_no) FILTER (WHERE a.sa_mode IS NOT NULL) AS sa_mode,
        bool_or(a.kind = 'decode_hint') AS decode_hint,
        max(a.sa_page_size) AS page_size,
        max(a.sa_max_total_tokens) AS max_total_tokens_arg,
        min(a.line_no) FILTER (WHERE a.sa_max_total_tokens IS NOT NULL) AS max_total_tokens_line,
        arg_min(a.sa_served_model, a.line_no) FILTER (WHERE a.sa_served_model IS NOT NULL) AS sa_served_model,
        arg_min(a.sa_model_path, a.line_no) FILTER (WHERE a.sa_model_path IS NOT NULL) AS sa_model_path,
        arg_min(a.vllm_served_model, a.line_no) FILTER (WHERE a.vllm_served_model IS NOT NULL) AS v_served_model,
        arg_min(a.sa_kv_checksum, a.line_no) FILTER (WHERE a.sa_kv_checksum IS NOT NULL) AS sa_kv_checksum,
        min(a.line_no) FILTER (WHERE a.sa_kv_checksum IS NOT NULL) AS sa_kv_checksum_line,
        arg_min(a.kind, a.line_no) FILTER (WHERE a.sa_kv_checksum IS NOT NULL) AS sa_kv_checksum_kind,
        arg_min(a.sa_kv_canary, a.line_no) FILTER (WHERE a.sa_kv_canary IS NOT NULL) AS kv_canary,
        min(a.line_no) FILTER (WHERE a.sa_kv_canary IS NOT NULL) AS kv_canary_line,
        bool_or(a.sa_has_kv_canary) AS has_kv_canary,
        bool_or(a.sa_has_kv_checksum) AS has_kv_checksum,
        coalesce(max(a.sa_tp_size), max(a.vllm_tp_size)) AS tp_size,
        coalesce(max(a.sa_dp_size), max(a.vllm_dp_size)) AS dp_size,
        bool_or(a.sa_dp_attention) AS dp_attention,
        arg_min(a.sa_transfer_backend, a.line_no) FILTER (WHERE a.sa_transfer_backend IS NOT NULL) AS transfer_backend,
        bool_or(a.sa_allow_auto_truncate) AS allow_auto_truncate,
        max(a.vllm_block_size) AS v_block_size,
        arg_max(a.pc_flag, a.line_no) FILTER (WHERE a.pc_flag IS NOT NULL) AS pc_flag,
        max(a.line_no) FILTER (WHERE a.pc_flag IS NOT NULL) AS pc_flag_line,
        arg_max(a.pc_connector, a.line_no) FILTER (WHERE a.pc_connector IS NOT NULL) AS pc_connector,
        arg_max(a.hash_algo, a.line_no) FILTER (WHERE a.hash_algo IS NOT NULL) AS hash_algo,
        max(a.line_no) FILTER (WHERE a.hash_algo IS NOT NULL) AS hash_algo_line,
        arg_max(a.load_failure_policy, a.line_no) FILTER (WHERE a.load_failure_policy IS NOT NULL) AS load_failure_policy,
        max(a.line_no) FILTER (WHERE a.load_failure_policy IS NOT NULL) AS load_failure_policy_line,
        arg_max(a.env_hashseed, a.line_no) FILTER (WHERE a.env_hashseed IS NOT NULL) AS env_hashseed,
        max(a.line_no) FILTER (WHERE a.env_hashseed IS NOT NULL) AS env_hashseed_line,
        arg_min(a.lmcache_version, a.line_no) FILTER (WHERE a.lmcache_version IS NOT NULL) AS lmcache_version,
        min(a.line_no) FILTER (WHERE a.lmcache_version IS NOT NULL) AS lmcache_version_line,
        -- environment, version, refusal
        arg_max(a.env_deferred, a.line_no) FILTER (WHERE a.env_deferred IS NOT NULL) AS env_deferred,
        max(a.line_no) FILTER (WHERE a.env_deferred IS NOT NULL) AS env_deferred_line,
        arg_max(a.env_batch_cap, a.line_no) FILTER (WHERE a.env_batch_cap IS NOT NULL) AS env_batch_cap,
        max(a.line_no) FILTER (WHERE a.env_batch_cap IS NOT NULL) AS env_batch_cap_line,
        arg_min(a.version, a.line_no) FILTER (WHERE a.version IS NOT NULL) AS log_version,
        min(a.line_no) FILTER (WHERE a.version IS NOT NULL) AS version_line,
        bool_or(a.kind = 'vllm_refusal') AS refused,
        arg_min(a.refusal, a.line_no) FILTER (WHERE a.refusal IS NOT NULL) AS refusal,
        min(a.line_no) FILTER (WHERE a.kind = 'vllm_refusal') AS refusal_line
    FROM audit_lines AS a
    GROUP BY a.file_id, a.start_no
),
line_nodes AS (   -- nodes with a start in their logs (a /server_info snapshot then only names the build)
    SELECT DISTINCT f.node FROM s0 AS x JOIN audit_files AS f USING (file_id) WHERE x.is_start
),
s AS (            -- the starts, plus one per /server_info snapshot of a node no start-up log shows
    SELECT * FROM s0
    UNION ALL BY NAME
    SELECT i.file_id, 1 AS start_no, true AS is_start, true AS si_start, 'sglang' AS engine, 1 AS first_line,
        0 AS truncated_lines, i.pool_tokens AS g_pool, 1 AS g_line, [i.pool_tokens] AS pool_values,
        i.context_len AS sa_context, i.page_size AS page_size, i.disaggregation_mode AS sa_mode,
        i.served_model AS sa_served_model, i.kv_checksum AS sa_kv_checksum, 1 AS sa_kv_checksum_line,
        'server_info' AS sa_kv_checksum_kind, i.kv_canary AS kv_canary, 1 AS kv_canary_line,
        i.has_kv_canary AS has_kv_canary, i.has_kv_checksum AS has_kv_checksum, i.tp_size AS tp_size,
        i.dp_size AS dp_size, i.transfer_backend AS transfer_backend, i.allow_auto_truncate AS allow_auto_truncate,
        i.max_total_tokens AS max_total_tokens_arg, false AS refused, false AS decode_hint,
        0 AS canary_stats_lines, 0 AS checksum_skipped_lines, 0 AS checksum_mismatch_lines
    FROM audit_server_info AS i JOIN audit_files AS f USING (file_id)
    WHERE f.node NOT IN (SELECT node FROM line_nodes)
),
v AS (
    SELECT s.*, f.path, f.node, f.name_source, f.inv_role, f.inv_version, f.inv_engine, f.inv_deployment,
        f.inv_env_deferred, f.inv_env_batch_cap, f.inv_advertised_context, f.inv_block_size, f.role AS file_role,
        fv.version AS file_version, fv.line AS file_version_line,
        si.version AS si_version, si.path AS si_path,
        coalesce(s.v_block_size, f.inv_block_size, $default_block_size) AS block_size,
        CASE s.sa_mode WHEN 'prefill' THEN 'prefill' WHEN 'decode' THEN 'decode' WHEN 'null' THEN 'mixed' END AS log_role
    FROM s
    JOIN audit_files AS f USING (file_id)
    LEFT JOIN file_version AS fv USING (file_id)
    LEFT JOIN (SELECT sf.node, arg_max(i.version, i.file_id) AS version, arg_max(sf.path, i.file_id) AS path
               FROM audit_server_info AS i JOIN audit_files AS sf USING (file_id) GROUP BY sf.node) AS si
           ON si.node = f.node
    WHERE s.is_start
),
vals AS (
    SELECT v.*,
        coalesce(v.g_pool, v.e_pool, v.w_pool, v.v_pool, v.v_blocks * v.block_size, v.r_pool, v.c_pool) AS pool_tokens,
        CASE WHEN v.si_start THEN '/server_info max_total_num_tokens'
             WHEN v.g_pool IS NOT NULL THEN 'max_total_num_tokens line'
             WHEN v.e_pool IS NOT NULL THEN 'KV Cache is allocated line'
             WHEN v.w_pool IS NOT NULL THEN 'KV pool holds ... fewer than --context-length line'
             WHEN v.v_pool IS NOT NULL THEN 'vLLM KV cache size line'
             WHEN v.v_blocks IS NOT NULL THEN format('# GPU blocks x block size {}{}', v.block_size,
                  CASE WHEN v.v_block_size IS NULL AND v.inv_block_size IS NULL THEN ' (vLLM default, assumed)' ELSE '' END)
             WHEN v.r_pool IS NOT NULL THEN format('vLLM refusal line {}', v.refusal_line)
             WHEN v.c_pool IS NOT NULL THEN format('configuration line {}', v.c_line)
        END AS pool_source,
        -- SGLang's pool is the smaller of --max-total-tokens and what memory allows
        -- (kv_cache_configurator._apply_token_constraints): each is an upper bound of the pool
        CASE WHEN v.engine = 'sglang' THEN least(v.max_total_tokens_arg, v.b_pool_bound) END AS pool_bound_tokens,
        CASE WHEN v.engine <> 'sglang' OR coalesce(v.max_total_tokens_arg, v.b_pool_bound) IS NULL THEN NULL
             WHEN v.b_pool_bound IS NULL OR v.max_total_tokens_arg <= v.b_pool_bound
                  THEN format('max_total_tokens {} (line {}): the pool is the smaller of it and what memory allows',
                              v.max_total_tokens_arg, v.max_total_tokens_line)
             ELSE v.b_pool_bound_source || ': what memory allows' END AS pool_bound_source,
        coalesce(v.g_context, v.sa_context, v.w_context, v.v_context, v.ctx_user) AS context_len,
        CASE WHEN v.si_start THEN '/server_info context_length'
             WHEN v.g_context IS NOT NULL THEN 'max_total_num_tokens line (context_len)'
             WHEN v.sa_context IS NOT NULL AND v.sa_line IS NOT NULL THEN 'server_args context_length'
             WHEN v.sa_context IS NOT NULL THEN 'configuration line'
             WHEN v.w_context IS NOT NULL THEN 'KV pool holds ... fewer than --context-length line'
             WHEN v.v_context IS NOT NULL THEN 'vLLM max model len'
             WHEN v.ctx_user IS NOT NULL THEN 'context-length override warning'
        END AS context_source,
        coalesce(v.g_line, v.e_line, v.w_line, v.v_line, v.b_line, v.conc_line, v.refusal_line, v.sa_line, v.c_line, v.first_line) AS evidence_line,
        coalesce(v.log_role, CASE WHEN v.decode_hint THEN 'decode' END, v.inv_role, v.file_role,
                 CASE WHEN v.engine = 'vllm' THEN 'mixed' END) AS role,
        CASE WHEN v.si_start AND v.log_role IS NOT NULL THEN 'server_info disaggregation_mode'
             WHEN v.log_role IS NOT NULL AND v.sa_line IS NOT NULL THEN format('log: server_args disaggregation_mode at line {}', v.sa_line)
                 || CASE WHEN v.inv_role IS NOT NULL AND v.inv_role <> v.log_role THEN format(' (inventory says {})', v.inv_role) ELSE '' END
             WHEN v.log_role IS NOT NULL THEN 'log: disaggregation mode in a configuration line'
             WHEN v.decode_hint THEN 'log: decode chunk-cache line'
             WHEN v.inv_role IS NOT NULL THEN 'inventory'
             WHEN v.file_role IS NOT NULL THEN 'file name'
             WHEN v.engine = 'vllm' THEN 'vLLM: no disaggregation seen'
        END AS role_source,
        coalesce(v.log_version, v.file_version) AS log_any_version,
        CASE WHEN v.si_start THEN format('/server_info {}', v.si_path)
             WHEN v.log_version IS NOT NULL AND v.engine = 'vllm' THEN format('log line {}', v.version_line)
             WHEN v.file_version IS NOT NULL AND v.engine = 'vllm' THEN format('log line {} (same file)', v.file_version_line)
             WHEN v.log_version IS NOT NULL THEN format('a version line in the log (line {}; SGLang itself prints none)', v.version_line)
             WHEN v.file_version IS NOT NULL THEN format('a version line in the same file (line {}; SGLang itself prints none)', v.file_version_line)
        END AS log_version_source,
        v.sa_kv_checksum AS kv_checksum,
        CASE WHEN v.sa_kv_checksum IS NULL THEN NULL
             WHEN v.sa_kv_checksum_kind = 'server_info' THEN 'server_info disaggregation_enable_kv_checksum'
             WHEN v.sa_kv_checksum_kind = 'server_args' THEN format('server_args line {}', v.sa_kv_checksum_line)
             ELSE format('configuration line {}', v.sa_kv_checksum_line) END AS kv_checksum_source,
        kva_truthy(coalesce(v.env_deferred, v.inv_env_deferred)) AS deferred_release,
        TRY_CAST(coalesce(v.env_batch_cap, v.inv_env_batch_cap) AS BIGINT) AS transfer_batch_cap,
        concat_ws('; ',
            CASE WHEN v.env_deferred IS NOT NULL THEN format('deferred release: log line {}', v.env_deferred_line)
                 WHEN v.inv_env_deferred IS NOT NULL THEN 'deferred release: inventory' END,
            CASE WHEN v.env_batch_cap IS NOT NULL THEN format('batch cap: log line {}', v.env_batch_cap_line)
                 WHEN v.inv_env_batch_cap IS NOT NULL THEN 'batch cap: inventory' END) AS env_source,
        -- the dump's keys that place a build (kvir.rules.builds fields), for the build inference
        CASE WHEN v.sa_keys IS NOT NULL THEN list_sort(list_distinct(list_filter(v.sa_keys, lambda k: list_contains($build_fields, k)))) END AS dump_markers
    FROM v
),
derived AS (
    SELECT x.*,
        coalesce(x.sa_served_model, x.v_served_model, x.sa_model_path) AS served_model,
        CASE WHEN x.engine = 'sglang' AND x.pool_tokens IS NOT NULL AND x.context_len IS NOT NULL
             THEN kvir_max_req_input_len(x.context_len, x.pool_tokens) END AS max_req_input_len,
        CASE WHEN x.engine = 'vllm' AND x.max_concurrency IS NOT NULL THEN x.max_concurrency >= 1.0
             WHEN x.engine = 'vllm' AND x.refused THEN false
             -- V1's token count is not one request's capacity for hybrid-attention models (sliding window,
             -- Mamba): without the concurrency line a count below the context decides nothing
             WHEN x.engine = 'vllm' AND x.v_pool < x.context_len THEN NULL
             WHEN x.pool_tokens IS NOT NULL AND x.context_len IS NOT NULL THEN x.pool_tokens >= x.context_len
             WHEN x.pool_bound_tokens < x.context_len THEN false          -- one-sided: pool <= bound < context
        END AS holds_context,
        CASE WHEN x.engine = 'vllm' AND x.max_concurrency IS NOT NULL
                  THEN format('vLLM maximum concurrency {}x for {} tokens per request', x.max_concurrency, x.context_len)
                       || CASE WHEN x.max_concurrency >= 1.0 AND x.pool_tokens < x.context_len
                               THEN ' (hybrid model: the token count is below the context, the concurrency figure is trusted)' ELSE '' END
             WHEN x.engine = 'vllm' AND x.refused THEN 'vLLM refused to start'
             WHEN x.engine = 'vllm' AND x.v_pool < x.context_len
                  THEN format('KV cache {} tokens < max model len {}, but for a hybrid-attention model (sliding window, Mamba) the token count is not one request''s capacity, and the concurrency line that decides is not in the evidence', x.v_pool, x.context_len)
             WHEN x.pool_tokens IS NOT NULL AND x.context_len IS NOT NULL THEN 'pool vs context'
             WHEN x.pool_bound_tokens < x.context_len
                  THEN format('pool <= {} < context {} ({})', x.pool_bound_tokens, x.context_len, x.pool_bound_source)
        END AS capacity_basis,
        -- what the evidence of this start lacks (a pasted excerpt), said rather than guessed
        list_filter([CASE WHEN NOT coalesce(x.any_time, false) AND NOT x.si_start THEN 'time (no line carries a timestamp)' END,
                     CASE WHEN x.pool_tokens IS NULL THEN CASE WHEN x.pool_bound_tokens IS NOT NULL
                          THEN format('KV pool (only a bound: <= {})', x.pool_bound_tokens) ELSE 'KV pool' END END,
                     CASE WHEN x.context_len IS NULL THEN 'context length' END,
                     CASE WHEN x.log_any_version IS NULL AND x.inv_version IS NULL AND x.si_version IS NULL THEN 'version' END,
                     CASE WHEN x.log_role IS NULL AND NOT coalesce(x.decode_hint, false) AND x.inv_role IS NULL
                               AND coalesce(x.engine, 'sglang') = 'sglang' THEN 'disaggregation mode (role)' END],
                    lambda m: m IS NOT NULL) AS missing
    FROM vals AS x
),
dedup AS (
    SELECT d.*, row_number() OVER (PARTITION BY d.node, d.ts, d.ts_host, d.engine, d.pool_tokens, d.context_len
                                   ORDER BY d.file_id, d.start_no) AS copy_no
    FROM derived AS d
),
kept AS (
    SELECT d.*,
        lead(d.ts) OVER (PARTITION BY d.node ORDER BY d.ts NULLS FIRST, d.ts_host NULLS FIRST, d.file_id, d.start_no) AS ts_end,
        row_number() OVER (PARTITION BY d.node ORDER BY d.ts NULLS FIRST, d.ts_host NULLS FIRST, d.file_id, d.start_no) AS start_index,
        count(*) OVER (PARTITION BY d.node) AS node_starts
    FROM dedup AS d WHERE d.copy_no = 1
),
versioned AS (   -- the exact version, when something names one: the running server, a version line, the inventory
    SELECT k.*, k.start_index = k.node_starts AS is_current,
        coalesce(CASE WHEN k.si_start OR k.start_index = k.node_starts THEN k.si_version END, k.log_any_version, k.inv_version) AS version,
        CASE WHEN k.si_start THEN k.log_version_source
             WHEN k.start_index = k.node_starts AND k.si_version IS NOT NULL THEN format('/server_info {} (the running server)', k.si_path)
             WHEN k.log_any_version IS NOT NULL THEN k.log_version_source
             WHEN k.inv_version IS NOT NULL THEN 'inventory' END AS version_source
    FROM kept AS k
)
SELECT
    k.node, k.role, k.ts, k.engine, k.version, k.pool_tokens, k.context_len, k.page_size, k.max_req_input_len,
    k.served_model, k.sa_mode AS disaggregation_mode, k.kv_checksum, k.kv_canary, k.deferred_release,
    k.transfer_batch_cap, k.tp_size, k.dp_size, k.path AS evidence_file, k.evidence_line, k.name_source,
    k.version_source,
    -- beyond the contract
    (k.file_id * 100000 + k.start_no)::BIGINT AS config_id,
    coalesce(k.inv_deployment, k.served_model, k.node) AS deployment,
    k.role_source, k.ts_end, k.start_index, k.is_current, k.ts_source, k.ready_ts,
    k.ts_host, CASE WHEN k.ts IS NOT NULL THEN 'UTC' WHEN k.ts_host IS NOT NULL THEN 'host-local, zone unknown' END AS ts_zone,
    k.holds_context, k.capacity_basis, k.pool_source, list_sort(k.pool_values) AS pool_values,
    list_sort(k.rank_tags) AS rank_tags, k.context_source, k.inv_advertised_context AS advertised_context,
    k.kv_layout, k.max_total_tokens_arg, k.pool_bound_tokens, k.pool_bound_source, k.missing,
    k.max_concurrency, k.refused, k.refusal,
    k.ctx_override_line IS NOT NULL AS context_override, k.ctx_user AS override_context, k.ctx_derived AS derived_context,
    k.allow_auto_truncate, k.dp_attention, k.transfer_backend, k.kv_checksum_source,
    CASE WHEN k.sa_line IS NULL AND NOT k.si_start THEN NULL ELSE coalesce(k.has_kv_canary, false) END AS kv_canary_in_build,
    CASE WHEN k.sa_line IS NULL AND NOT k.si_start THEN NULL ELSE coalesce(k.has_kv_checksum, false) END AS kv_checksum_in_build,
    k.kv_canary_line, k.canary_installed_line, k.canary_stats_lines, k.canary_protected_tokens, k.canary_violations,
    k.canary_verified_line, k.checksum_skipped_lines, k.checksum_skipped_line, k.checksum_mismatch_lines,
    k.env_source, k.sa_line AS server_args_line, k.sa_truncated AS server_args_truncated, k.sa_shape AS server_args_shape,
    k.dump_markers, len(k.sa_keys) AS dump_keys, list_sort(k.line_kinds) AS line_kinds, k.truncated_lines,
    k.pc_flag, k.pc_flag_line, k.pc_connector,
    -- vLLM's block hash and KV-load failure policy, PYTHONHASHSEED, the LMCache release (NULL: not shown)
    k.hash_algo, k.hash_algo_line, k.load_failure_policy, k.load_failure_policy_line, k.env_hashseed,
    k.env_hashseed_line, k.lmcache_version, k.lmcache_version_line,
    -- the build (filled by kvir.audit.start_builds from kvir.rules.builds: audit/node_builds.sql)
    NULL::VARCHAR AS build, NULL::VARCHAR AS build_lo, NULL::VARCHAR AS build_hi, NULL::BOOLEAN AS build_open,
    NULL::VARCHAR AS build_evidence, NULL::VARCHAR AS over_long_outcome, NULL::BOOLEAN AS stub_transferred,
    NULL::VARCHAR AS build_note, NULL::VARCHAR AS deferred_release_default, NULL::VARCHAR AS batch_cap_default,
    k.file_id, k.start_no
FROM versioned AS k
ORDER BY k.node, k.ts NULLS FIRST, k.ts_host NULLS FIRST, k.file_id, k.start_no;
