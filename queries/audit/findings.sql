-- findings: every audit rule checked against every node start (and the runtime indicators): one row per failed or undecidable check.
-- Params: $fixed_version
--
-- status 'fail': the evidence shows the problem. status 'unknown': the evidence needed to decide is not
-- in the logs or the inventory; an unknown is reported, never counted as passed. Titles, fixes and
-- default severities come from audit_rules (kvir.audit.rules); severity can depend on the node's role.
-- PD = the node runs with --disaggregation-mode prefill or decode.
CREATE OR REPLACE TABLE findings AS
WITH c AS (
    SELECT n.*,
        n.role IN ('prefill', 'decode') OR n.disaggregation_mode IN ('prefill', 'decode') AS pd,
        kva_version_key(n.version) >= kva_version_key($fixed_version) AS fixed_build
    FROM node_configs AS n
),
r001 AS (   -- pool below context
    SELECT 'KVA001' AS rule_id,
        CASE WHEN c.holds_context IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        CASE WHEN c.engine = 'vllm' THEN 'medium'
             WHEN c.role = 'prefill' THEN 'critical' WHEN c.role = 'mixed' THEN 'medium' ELSE 'high' END AS severity,
        c.*,
        CASE
            WHEN c.holds_context IS NULL THEN format('{} node {}: {} not in the start-up evidence, so pool vs context cannot be checked',
                coalesce(c.role, 'unknown-role'), c.node,
                concat_ws(' and ', CASE WHEN c.pool_tokens IS NULL THEN 'the KV pool size' END,
                                   CASE WHEN c.context_len IS NULL THEN 'the context length' END))
            WHEN c.engine = 'vllm' AND c.max_concurrency IS NOT NULL THEN format('vLLM node {}: maximum concurrency {}x < 1.00x for {:,} tokens per request: one full-length request does not fit the KV cache',
                c.node, c.max_concurrency, c.context_len)
            WHEN c.engine = 'vllm' THEN format('vLLM node {}: KV cache {:,} tokens < max model len {:,}: one full-length request does not fit',
                c.node, c.pool_tokens, c.context_len)
            ELSE format('{} node {}: KV pool {:,} tokens < context {:,} tokens; the scheduler rejects prompts of {:,} tokens and more (max_req_input_len), {:,} token lengths below what the context admits{}',
                coalesce(c.role, 'unknown-role'), c.node, c.pool_tokens, c.context_len, c.max_req_input_len,
                c.context_len - 1 - c.max_req_input_len,
                CASE WHEN c.role = 'prefill' THEN '; on a PD prefill node without the fix those prompts become 1-token placeholders while decode serves unwritten KV pages' ELSE '' END)
        END AS message,
        NULL::VARCHAR AS related_node, NULL::VARCHAR AS related_evidence
    FROM c WHERE NOT coalesce(c.refused, false) AND (c.holds_context IS NULL OR NOT c.holds_context)
),
pairs AS (  -- prefill and decode starts of one deployment that were up at the same time
    SELECT p.config_id, p.node AS p_node, d.node AS d_node, d.evidence_file AS d_file, d.evidence_line AS d_line,
        coalesce(p.max_req_input_len, kvir_max_req_input_len(NULL, p.pool_tokens)) AS p_limit,
        coalesce(d.max_req_input_len, kvir_max_req_input_len(NULL, d.pool_tokens)) AS d_limit,
        d.pool_tokens AS d_pool
    FROM c AS p JOIN c AS d
      ON p.deployment = d.deployment AND p.role = 'prefill' AND d.role = 'decode'
     AND (p.ts IS NULL OR d.ts_end IS NULL OR p.ts < d.ts_end)
     AND (d.ts IS NULL OR p.ts_end IS NULL OR d.ts < p.ts_end)
    WHERE p.pool_tokens IS NOT NULL AND d.pool_tokens IS NOT NULL
),
worst_pair AS (
    SELECT config_id, arg_max(d_node, d_limit) AS d_node, arg_max(d_file, d_limit) AS d_file,
        arg_max(d_line, d_limit) AS d_line, max(d_limit) AS d_limit, arg_max(d_pool, d_limit) AS d_pool,
        min(p_limit) AS p_limit, count(DISTINCT d_node) FILTER (WHERE d_limit > p_limit) AS n_decode
    FROM pairs GROUP BY config_id
),
r002 AS (   -- asymmetric PD limits
    SELECT 'KVA002' AS rule_id, 'fail' AS status, 'high' AS severity, c.*,
        format('prefill node {} (pool {:,}) rejects prompts from {:,} tokens while decode node {} (pool {:,}){} accepts up to {:,}: prompts in between are reserved on decode and rejected on prefill',
            c.node, c.pool_tokens, w.p_limit, w.d_node, w.d_pool,
            CASE WHEN w.n_decode > 1 THEN format(' and {} other decode node(s)', w.n_decode - 1) ELSE '' END,
            w.d_limit - 1) AS message,
        w.d_node AS related_node, w.d_file || ':' || w.d_line AS related_evidence
    FROM c JOIN worst_pair AS w USING (config_id)
    WHERE w.p_limit < w.d_limit
),
advertised AS (   -- what the deployment tells clients: the inventory's figure, else its largest context
    SELECT a.config_id, coalesce(max(a.advertised_context), max(b.context_len)) AS adv
    FROM c AS a JOIN c AS b
      ON a.deployment = b.deployment
     AND (a.ts IS NULL OR b.ts_end IS NULL OR a.ts < b.ts_end)
     AND (b.ts IS NULL OR a.ts_end IS NULL OR b.ts < a.ts_end)
    GROUP BY a.config_id
),
r003 AS (   -- a node's own context below the deployment's advertised context (pool is fine)
    SELECT 'KVA003' AS rule_id, 'fail' AS status,
        CASE WHEN c.role = 'prefill' THEN 'high' ELSE 'medium' END AS severity, c.*,
        format('{} node {}: max_req_input_len {:,} (context {:,}) is below the {:,}-token context deployment {} advertises; prompts of {:,} to {:,} tokens are rejected here',
            coalesce(c.role, 'unknown-role'), c.node, c.max_req_input_len, c.context_len, ad.adv, c.deployment,
            c.max_req_input_len, ad.adv - 1) AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c JOIN advertised AS ad USING (config_id)
    WHERE c.holds_context AND c.max_req_input_len IS NOT NULL AND ad.adv IS NOT NULL AND c.max_req_input_len < kvir_max_req_input_len(ad.adv, NULL)
),
r004 AS (   -- PD build without the fix that ends rejected requests before transfer
    SELECT 'KVA004' AS rule_id, CASE WHEN c.fixed_build IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'high' AS severity, c.*,
        CASE WHEN c.fixed_build IS NULL THEN format('PD {} node {}: SGLang build {} not in the logs or the inventory; cannot tell whether it ends rejected requests before KV transfer (fixed in {})',
                 c.role, c.node, CASE WHEN c.version IS NULL THEN 'version' ELSE format('version "{}" unreadable', c.version) END, $fixed_version)
             ELSE format('PD {} node {}: SGLang {} ({}) is older than {}, which ends intake-rejected requests before bootstrap/transfer; older builds hand decode a 1-token placeholder',
                 c.role, c.node, c.version, c.version_source, $fixed_version) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd AND NOT coalesce(c.fixed_build, false)
),
r005 AS (   -- PD KV checksum
    SELECT 'KVA005' AS rule_id, CASE WHEN c.kv_checksum IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'medium' AS severity, c.*,
        CASE WHEN c.kv_checksum IS NULL THEN format('PD {} node {}: neither a PD KV checksum line nor disaggregation_enable_kv_checksum in server_args; whether transfers are verified is unknown', c.role, c.node)
             ELSE format('PD {} node {}: KV checksum off ({}): KV landing in reused decode pages is not verified', c.role, c.node, c.kv_checksum_source) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd AND NOT coalesce(c.kv_checksum, false)
),
r006 AS (   -- KV canary
    SELECT 'KVA006' AS rule_id, CASE WHEN c.kv_canary_in_build IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'low' AS severity, c.*,
        CASE WHEN c.kv_canary_in_build IS NULL THEN format('PD {} node {}: no server_args dump, so the --kv-canary setting is unknown', c.role, c.node)
             WHEN NOT c.kv_canary_in_build THEN format('PD {} node {}: this build has no --kv-canary (server_args line {} has no kv_canary)', c.role, c.node, c.server_args_line)
             ELSE format('PD {} node {}: kv_canary=''{}'' (server_args line {}): cross-request KV reads are not detected', c.role, c.node, c.kv_canary, c.server_args_line) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd
      AND (c.kv_canary_in_build IS NULL OR NOT c.kv_canary_in_build OR coalesce(c.kv_canary, 'off') NOT IN ('log', 'raise'))
),
r007 AS (   -- deferred decode KV release (decode side)
    SELECT 'KVA007' AS rule_id, CASE WHEN c.deferred_release IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'medium' AS severity, c.*,
        CASE WHEN c.deferred_release IS NULL THEN format('PD decode node {}: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE is not in the evidence (no environment dump in the log, none in the inventory): unknown, not assumed on', c.node)
             ELSE format('PD decode node {}: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE is off ({}): aborted requests free pages an in-flight transfer may still write', c.node, c.env_source) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.role = 'decode' AND NOT coalesce(c.deferred_release, false)
),
r008 AS (   -- Mooncake transfer batch cap (prefill side issues the transfers)
    SELECT 'KVA008' AS rule_id, CASE WHEN c.transfer_batch_cap IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'medium' AS severity, c.*,
        CASE WHEN c.transfer_batch_cap IS NULL THEN format('PD prefill node {}: SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES is not in the evidence: unknown, not assumed set', c.node)
             ELSE format('PD prefill node {}: SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES={} ({}): each transfer is one unbounded all-layer batch', c.node, c.transfer_batch_cap, c.env_source) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.role = 'prefill' AND coalesce(c.transfer_backend, 'mooncake') LIKE 'mooncake%'
      AND NOT coalesce(c.transfer_batch_cap > 0, false)
),
r009 AS (   -- vLLM refused to start
    SELECT 'KVA009' AS rule_id, 'fail' AS status, 'medium' AS severity, c.*,
        format('vLLM node {} refused to start: {}', c.node, c.refusal) AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.refused
),
r010 AS (   -- context length forced beyond the model's
    SELECT 'KVA010' AS rule_id, 'fail' AS status, 'medium' AS severity, c.*,
        format('{} node {}: context_length {:,} overrides the model''s derived {:,} (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN, line {})',
            coalesce(c.role, 'unknown-role'), c.node, c.override_context, c.derived_context,
            (SELECT min(a.line_no) FROM audit_lines AS a WHERE a.file_id = c.file_id AND a.start_no = c.start_no AND a.kind = 'ctx_override')) AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.context_override
),
starts AS (
    SELECT * FROM r001 UNION ALL BY NAME SELECT * FROM r002 UNION ALL BY NAME SELECT * FROM r003
    UNION ALL BY NAME SELECT * FROM r004 UNION ALL BY NAME SELECT * FROM r005 UNION ALL BY NAME SELECT * FROM r006
    UNION ALL BY NAME SELECT * FROM r007 UNION ALL BY NAME SELECT * FROM r008 UNION ALL BY NAME SELECT * FROM r009
    UNION ALL BY NAME SELECT * FROM r010
),
ind AS (   -- runtime indicators of exposure, per node and indicator
    SELECT i.node, i.role, i.indicator, sum(i.count) AS n, min(i.first_ts) AS first_ts, max(i.last_ts) AS last_ts,
        arg_min(i.evidence_file, i.first_ts) AS evidence_file, arg_min(i.evidence_line, i.first_ts) AS evidence_line,
        max(i.limit_tokens) AS limit_tokens
    FROM runtime_indicators AS i WHERE i.incident_signal
    GROUP BY i.node, i.role, i.indicator
),
ind_build AS (
    SELECT ind.*, cur.version, cur.engine, cur.deployment, cur.fixed_build
    FROM ind LEFT JOIN (SELECT node, version, engine, deployment, fixed_build FROM c WHERE is_current) AS cur USING (node)
),
r011 AS (
    SELECT 'KVA011' AS rule_id, 'fail' AS status,
        CASE WHEN b.indicator = 'input-length-exceeds' AND NOT coalesce(b.fixed_build, false) THEN 'critical' ELSE 'high' END AS severity,
        b.node, b.role, b.first_ts AS ts, b.engine, b.version, b.deployment, NULL::BIGINT AS config_id, NULL::BOOLEAN AS is_current,
        b.evidence_file, b.evidence_line,
        CASE b.indicator
            WHEN 'input-length-exceeds' THEN format('PD prefill node {}: {:,} prompt(s) rejected by the scheduler ({} to {}; limit {:,} tokens){}',
                b.node, b.n, strftime(b.first_ts, '%Y-%m-%d %H:%M UTC'), strftime(b.last_ts, '%Y-%m-%d %H:%M UTC'), b.limit_tokens,
                CASE WHEN NOT coalesce(b.fixed_build, false) THEN '; on this build each one was handed to decode as a 1-token placeholder: check those responses with kvir triage' ELSE '' END)
            WHEN 'exceeds-max-tokens' THEN format('PD {} node {}: {:,} request(s) exceeded the KV pool at admission ({} to {})',
                b.role, b.node, b.n, strftime(b.first_ts, '%Y-%m-%d %H:%M UTC'), strftime(b.last_ts, '%Y-%m-%d %H:%M UTC'))
            WHEN 'kv-checksum-mismatch' THEN format('node {}: {:,} KV checksum mismatch(es) ({} to {}): KV arrived corrupted or from another request',
                b.node, b.n, strftime(b.first_ts, '%Y-%m-%d %H:%M UTC'), strftime(b.last_ts, '%Y-%m-%d %H:%M UTC'))
            ELSE format('node {}: {:,} KV canary violation(s) ({} to {}): a request read KV it did not write',
                b.node, b.n, strftime(b.first_ts, '%Y-%m-%d %H:%M UTC'), strftime(b.last_ts, '%Y-%m-%d %H:%M UTC'))
        END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM ind_build AS b
),
allf AS (
    SELECT s.rule_id, s.status, s.severity, s.node, s.role, s.ts, s.engine, s.version, s.deployment, s.config_id,
        s.is_current, s.evidence_file, s.evidence_line, s.message, s.related_node, s.related_evidence
    FROM starts AS s
    UNION ALL BY NAME
    SELECT r.rule_id, r.status, r.severity, r.node, r.role, r.ts, r.engine, r.version, r.deployment, r.config_id,
        r.is_current, r.evidence_file, r.evidence_line, r.message, r.related_node, r.related_evidence
    FROM r011 AS r
)
SELECT f.rule_id, f.severity, f.node, f.role, f.ts, ru.title, f.message, ru.fix, f.evidence_file, f.evidence_line,
    f.status, ru.name AS rule_name, f.engine, f.version, f.deployment, f.config_id, f.is_current,
    f.related_node, f.related_evidence,
    CASE f.severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 END AS severity_rank
FROM allf AS f JOIN audit_rules AS ru USING (rule_id)
ORDER BY severity_rank DESC, f.status, f.rule_id, f.node, f.ts NULLS FIRST;
