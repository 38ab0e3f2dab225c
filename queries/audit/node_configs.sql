-- node_configs: one row per node start (SGLang or vLLM): its KV pool, context, limits, build, safety flags and evidence (file:line).
-- Params: $default_block_size
--
-- Per start (audit_lines.start_no of one file), values come from these lines, first source that has one:
--   pool_tokens   SGLang `max_total_num_tokens=` (line g), else `KV Cache is allocated. #tokens:` (MHA
--                 and MLA forms); vLLM `GPU KV cache size: N tokens` (`CPU ...` on the CPU build), else `# GPU blocks: N` x block size.
--                 Ranks print the same line (TP0..TP7; DP groups): values are deduplicated, never
--                 summed; when DP ranks differ, the smallest (binding) one is kept and all are listed.
--   context_len   line g `context_len=`, else server_args `context_length=`, else vLLM's max model len
--                 (`Maximum concurrency for N tokens`, `Using max model len`, `max_seq_len=`), else the
--                 user value of the context-length override warning.
--   holds_context SGLang: pool >= context. vLLM: the concurrency figure when printed (>= 1.00x), because
--                 for hybrid models (SWA/Mamba) the token count understates what one request can use.
--   max_req_input_len  SGLang's scheduler limit, kvir_max_req_input_len (NULL unless both are known).
--   version       a version line in the start (or elsewhere in the file), else the inventory.
--   deferred_release / transfer_batch_cap  an environment dump in the log, else the inventory's env;
--                 otherwise NULL: unknown, never assumed.
-- Identical starts found in two files (a rotated copy) are kept once.
CREATE OR REPLACE TABLE node_configs AS
WITH file_version AS (
    SELECT a.file_id, arg_min(a.version, a.line_no) AS version, min(a.line_no) AS line
    FROM audit_lines AS a WHERE a.version IS NOT NULL GROUP BY a.file_id
),
s AS (
    SELECT a.file_id, a.start_no,
        bool_or(a.kind IN ('server_args', 'vllm_start', 'pool', 'kv_alloc', 'vllm_kv', 'vllm_blocks',
                           'vllm_concurrency', 'vllm_refusal')) AS is_start,
        CASE WHEN bool_or(a.engine = 'vllm') THEN 'vllm' WHEN bool_or(a.engine = 'sglang') THEN 'sglang' END AS engine,
        arg_min(a.ts_eff, a.line_no) FILTER (WHERE a.ts_eff IS NOT NULL AND a.kind IN ('server_args', 'vllm_start', 'pool',
                'kv_alloc', 'vllm_kv', 'vllm_blocks', 'vllm_concurrency', 'vllm_refusal')) AS ts,
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
        min(a.line_no) FILTER (WHERE a.vllm_blocks IS NOT NULL) AS b_line,
        list(DISTINCT coalesce(a.pool_tokens, a.kv_tokens, a.vllm_kv_tokens)) FILTER (
            WHERE coalesce(a.pool_tokens, a.kv_tokens, a.vllm_kv_tokens) IS NOT NULL) AS pool_values,
        list(DISTINCT a.rank_tag) FILTER (WHERE a.kind IN ('pool', 'kv_alloc', 'vllm_kv', 'vllm_blocks') AND a.rank_tag <> '') AS rank_tags,
        -- context
        min(a.context_len) AS g_context,
        max(a.sa_context_length) AS sa_context,
        max(a.vllm_max_model_len) AS v_context,
        min(a.line_no) FILTER (WHERE a.vllm_max_model_len IS NOT NULL) AS v_context_line,
        max(a.ctx_user) AS ctx_user,
        max(a.ctx_derived) AS ctx_derived,
        min(a.line_no) FILTER (WHERE a.kind = 'ctx_override') AS ctx_override_line,
        max(a.vllm_concurrency) FILTER (WHERE a.kind = 'vllm_concurrency') AS max_concurrency,
        min(a.line_no) FILTER (WHERE a.kind = 'vllm_concurrency') AS conc_line,
        -- server_args
        min(a.line_no) FILTER (WHERE a.kind = 'server_args') AS sa_line,
        arg_min(a.truncated, a.line_no) FILTER (WHERE a.kind = 'server_args') AS sa_truncated,
        arg_min(a.sa_mode, a.line_no) FILTER (WHERE a.sa_mode IS NOT NULL) AS sa_mode,
        bool_or(a.kind = 'decode_hint') AS decode_hint,
        max(a.sa_page_size) AS page_size,
        max(a.sa_max_total_tokens) AS max_total_tokens_arg,
        arg_min(a.sa_served_model, a.line_no) FILTER (WHERE a.sa_served_model IS NOT NULL) AS sa_served_model,
        arg_min(a.sa_model_path, a.line_no) FILTER (WHERE a.sa_model_path IS NOT NULL) AS sa_model_path,
        arg_min(a.vllm_served_model, a.line_no) FILTER (WHERE a.vllm_served_model IS NOT NULL) AS v_served_model,
        arg_min(a.sa_kv_checksum, a.line_no) FILTER (WHERE a.sa_kv_checksum IS NOT NULL) AS sa_kv_checksum,
        arg_max(a.checksum_enabled, a.line_no) FILTER (WHERE a.checksum_enabled IS NOT NULL) AS line_kv_checksum,
        max(a.line_no) FILTER (WHERE a.checksum_enabled IS NOT NULL) AS checksum_line,
        arg_min(a.sa_kv_canary, a.line_no) FILTER (WHERE a.sa_kv_canary IS NOT NULL) AS kv_canary,
        bool_or(a.sa_has_kv_canary) AS has_kv_canary,
        coalesce(max(a.sa_tp_size), max(a.vllm_tp_size)) AS tp_size,
        coalesce(max(a.sa_dp_size), max(a.vllm_dp_size)) AS dp_size,
        bool_or(a.sa_dp_attention) AS dp_attention,
        arg_min(a.sa_transfer_backend, a.line_no) FILTER (WHERE a.sa_transfer_backend IS NOT NULL) AS transfer_backend,
        bool_or(a.sa_allow_auto_truncate) AS allow_auto_truncate,
        max(a.vllm_block_size) AS v_block_size,
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
v AS (
    SELECT s.*, f.path, f.node, f.name_source, f.inv_role, f.inv_version, f.inv_engine, f.inv_deployment,
        f.inv_env_deferred, f.inv_env_batch_cap, f.inv_advertised_context, f.inv_block_size, f.role AS file_role,
        fv.version AS file_version, fv.line AS file_version_line,
        coalesce(s.v_block_size, f.inv_block_size, $default_block_size) AS block_size,
        CASE s.sa_mode WHEN 'prefill' THEN 'prefill' WHEN 'decode' THEN 'decode' WHEN 'null' THEN 'mixed' END AS log_role
    FROM s
    JOIN audit_files AS f USING (file_id)
    LEFT JOIN file_version AS fv USING (file_id)
    WHERE s.is_start
),
vals AS (
    SELECT v.*,
        coalesce(v.g_pool, v.e_pool, v.v_pool, v.v_blocks * v.block_size) AS pool_tokens,
        CASE WHEN v.g_pool IS NOT NULL THEN 'max_total_num_tokens line'
             WHEN v.e_pool IS NOT NULL THEN 'KV Cache is allocated line'
             WHEN v.v_pool IS NOT NULL THEN 'KV cache size line'
             WHEN v.v_blocks IS NOT NULL THEN format('# GPU blocks x block size {}{}', v.block_size,
                  CASE WHEN v.v_block_size IS NULL AND v.inv_block_size IS NULL THEN ' (vLLM default, assumed)' ELSE '' END)
        END AS pool_source,
        coalesce(v.g_context, v.sa_context, v.v_context, v.ctx_user) AS context_len,
        CASE WHEN v.g_context IS NOT NULL THEN 'max_total_num_tokens line (context_len)'
             WHEN v.sa_context IS NOT NULL THEN 'server_args context_length'
             WHEN v.v_context IS NOT NULL THEN 'vLLM max model len'
             WHEN v.ctx_user IS NOT NULL THEN 'context-length override warning'
        END AS context_source,
        coalesce(v.g_line, v.e_line, v.v_line, v.b_line, v.conc_line, v.refusal_line, v.sa_line, v.first_line) AS evidence_line,
        coalesce(v.log_role, CASE WHEN v.decode_hint THEN 'decode' END, v.inv_role, v.file_role,
                 CASE WHEN v.engine = 'vllm' THEN 'mixed' END) AS role,
        CASE WHEN v.log_role IS NOT NULL THEN format('log: server_args disaggregation_mode at line {}', v.sa_line)
                 || CASE WHEN v.inv_role IS NOT NULL AND v.inv_role <> v.log_role THEN format(' (inventory says {})', v.inv_role) ELSE '' END
             WHEN v.decode_hint THEN 'log: decode chunk-cache line'
             WHEN v.inv_role IS NOT NULL THEN 'inventory'
             WHEN v.file_role IS NOT NULL THEN 'file name'
             WHEN v.engine = 'vllm' THEN 'vLLM: no disaggregation seen'
        END AS role_source,
        coalesce(v.log_version, v.file_version, v.inv_version) AS version,
        CASE WHEN v.log_version IS NOT NULL THEN format('log line {}', v.version_line)
             WHEN v.file_version IS NOT NULL THEN format('log line {} (same file)', v.file_version_line)
             WHEN v.inv_version IS NOT NULL THEN 'inventory' END AS version_source,
        coalesce(v.line_kv_checksum, v.sa_kv_checksum) AS kv_checksum,
        CASE WHEN v.line_kv_checksum IS NOT NULL THEN format('PD KV checksum line {}', v.checksum_line)
             WHEN v.sa_kv_checksum IS NOT NULL THEN format('server_args line {}', v.sa_line) END AS kv_checksum_source,
        kva_truthy(coalesce(v.env_deferred, v.inv_env_deferred)) AS deferred_release,
        TRY_CAST(coalesce(v.env_batch_cap, v.inv_env_batch_cap) AS BIGINT) AS transfer_batch_cap,
        concat_ws('; ',
            CASE WHEN v.env_deferred IS NOT NULL THEN format('deferred release: log line {}', v.env_deferred_line)
                 WHEN v.inv_env_deferred IS NOT NULL THEN 'deferred release: inventory' END,
            CASE WHEN v.env_batch_cap IS NOT NULL THEN format('batch cap: log line {}', v.env_batch_cap_line)
                 WHEN v.inv_env_batch_cap IS NOT NULL THEN 'batch cap: inventory' END) AS env_source
    FROM v
),
derived AS (
    SELECT x.*,
        coalesce(x.sa_served_model, x.v_served_model, x.sa_model_path) AS served_model,
        CASE WHEN x.engine = 'sglang' AND x.pool_tokens IS NOT NULL AND x.context_len IS NOT NULL
             THEN kvir_max_req_input_len(x.context_len, x.pool_tokens) END AS max_req_input_len,
        CASE WHEN x.engine = 'vllm' AND x.max_concurrency IS NOT NULL THEN x.max_concurrency >= 1.0
             WHEN x.engine = 'vllm' AND x.refused THEN false
             WHEN x.pool_tokens IS NOT NULL AND x.context_len IS NOT NULL THEN x.pool_tokens >= x.context_len
        END AS holds_context,
        CASE WHEN x.engine = 'vllm' AND x.max_concurrency IS NOT NULL
                  THEN format('vLLM maximum concurrency {}x for {} tokens per request', x.max_concurrency, x.context_len)
                       || CASE WHEN x.max_concurrency >= 1.0 AND x.pool_tokens < x.context_len
                               THEN ' (hybrid model: the token count is below the context, the concurrency figure is trusted)' ELSE '' END
             WHEN x.engine = 'vllm' AND x.refused THEN 'vLLM refused to start'
             WHEN x.pool_tokens IS NOT NULL AND x.context_len IS NOT NULL THEN 'pool vs context'
        END AS capacity_basis
    FROM vals AS x
),
dedup AS (
    SELECT d.*, row_number() OVER (PARTITION BY d.node, d.ts, d.engine, d.pool_tokens, d.context_len
                                   ORDER BY d.file_id, d.start_no) AS copy_no
    FROM derived AS d
),
kept AS (
    SELECT d.*,
        lead(d.ts) OVER (PARTITION BY d.node ORDER BY d.ts NULLS FIRST, d.file_id, d.start_no) AS ts_end,
        row_number() OVER (PARTITION BY d.node ORDER BY d.ts NULLS FIRST, d.file_id, d.start_no) AS start_index,
        count(*) OVER (PARTITION BY d.node) AS node_starts
    FROM dedup AS d WHERE d.copy_no = 1
)
SELECT
    k.node, k.role, k.ts, k.engine, k.version, k.pool_tokens, k.context_len, k.page_size, k.max_req_input_len,
    k.served_model, k.sa_mode AS disaggregation_mode, k.kv_checksum, k.kv_canary, k.deferred_release,
    k.transfer_batch_cap, k.tp_size, k.dp_size, k.path AS evidence_file, k.evidence_line, k.name_source,
    k.version_source,
    -- beyond the contract
    (k.file_id * 100000 + k.start_no)::BIGINT AS config_id,
    coalesce(k.inv_deployment, k.served_model, k.node) AS deployment,
    k.role_source, k.ts_end, k.start_index, k.start_index = k.node_starts AS is_current, k.ts_source, k.ready_ts,
    k.holds_context, k.capacity_basis, k.pool_source, list_sort(k.pool_values) AS pool_values,
    list_sort(k.rank_tags) AS rank_tags, k.context_source, k.inv_advertised_context AS advertised_context,
    k.kv_layout, k.max_total_tokens_arg, k.max_concurrency, k.refused, k.refusal,
    k.ctx_override_line IS NOT NULL AS context_override, k.ctx_user AS override_context, k.ctx_derived AS derived_context,
    k.allow_auto_truncate, k.dp_attention, k.transfer_backend, k.kv_checksum_source,
    CASE WHEN k.sa_line IS NULL THEN NULL ELSE coalesce(k.has_kv_canary, false) END AS kv_canary_in_build,
    k.env_source, k.sa_line AS server_args_line, k.sa_truncated AS server_args_truncated, k.truncated_lines,
    k.file_id, k.start_no
FROM kept AS k
ORDER BY k.node, k.ts NULLS FIRST, k.file_id, k.start_no;
