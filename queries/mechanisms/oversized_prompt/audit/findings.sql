-- findings: the oversized-prompt mechanism's audit rules checked against every node start (and the runtime indicators), added to findings: one row per failed or undecidable check.
-- Params: $first_fixed, $first_door, $checksum_first, $canary_first
--
-- status 'fail': the evidence shows the problem. status 'unknown': the evidence needed to decide is not
-- in the logs or the inventory; an unknown is reported, never counted as passed. Titles, fixes and
-- default severities come from audit_rules (kvir.mechanisms.oversized_prompt.audit_rules); severity can
-- depend on the node's role.
-- PD = the node runs with --disaggregation-mode prefill or decode. What a build does comes from
-- node_configs.build / over_long_outcome / stub_transferred (kvir.rules.builds, the wheels' facts):
-- $first_fixed is the first build whose code never transfers the over-long stub, $first_door the first
-- that rejects it at the bootstrap door, $checksum_first / $canary_first where the flags first exist.
INSERT INTO findings BY NAME
WITH c AS (
    SELECT n.*,
        n.role IN ('prefill', 'decode') OR n.disaggregation_mode IN ('prefill', 'decode') AS pd,
        NOT n.stub_transferred AS fixed_build,
        -- the build cannot have a flag: a whole dump without it, or every build it can be predates it
        (n.kv_checksum_in_build = false AND NOT coalesce(n.server_args_truncated, true))
            OR (kva_version_key(n.build_hi) < kva_version_key($checksum_first) AND NOT coalesce(n.build_open, false)) AS checksum_absent,
        (n.kv_canary_in_build = false AND NOT coalesce(n.server_args_truncated, true))
            OR (kva_version_key(n.build_hi) < kva_version_key($canary_first) AND NOT coalesce(n.build_open, false)) AS canary_absent,
        coalesce(n.kv_canary IN ('log', 'raise'), false) OR n.canary_installed_line IS NOT NULL OR coalesce(n.canary_stats_lines, 0) > 0 AS canary_on,
        CASE WHEN n.stub_transferred THEN format('on this build ({}) each one becomes a 1-token stub whose decode serves KV pages nobody wrote, with HTTP 200', n.build)
             WHEN NOT n.stub_transferred THEN format('this build ({}) answers them with HTTP 400 ({})', n.build, n.over_long_outcome)
             ELSE format('whether they reach decode depends on the build, which is {}', n.build) END AS stub_text
    FROM node_configs AS n
),
r001 AS (   -- pool below context
    SELECT 'KVA001' AS rule_id,
        CASE WHEN c.holds_context IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        CASE WHEN c.engine = 'vllm' THEN 'medium'
             WHEN c.role = 'prefill' AND c.fixed_build THEN 'medium'
             WHEN c.role = 'prefill' THEN 'critical' WHEN c.role = 'mixed' THEN 'medium' ELSE 'high' END AS severity,
        c.*,
        CASE
            WHEN c.holds_context IS NULL AND c.capacity_basis IS NOT NULL THEN format('{} node {}: {}', c.engine, c.node, c.capacity_basis)
            WHEN c.holds_context IS NULL THEN format('{} node {}: {} not in the start-up evidence, so pool vs context cannot be checked',
                coalesce(c.role, 'unknown-role'), c.node,
                concat_ws(' and ', CASE WHEN c.pool_tokens IS NULL THEN 'the KV pool size' END,
                                   CASE WHEN c.context_len IS NULL THEN 'the context length' END))
            WHEN c.pool_tokens IS NULL AND c.pool_bound_tokens IS NOT NULL THEN format('{} node {}: KV pool at most {:,} tokens ({}) < context {:,} tokens: one full-length request cannot fit; the scheduler rejects prompts of {:,} tokens and more at the latest (the exact pool is not in the evidence){}',
                coalesce(c.role, 'unknown-role'), c.node, c.pool_bound_tokens, c.pool_bound_source, c.context_len,
                kvir_max_req_input_len(c.context_len, c.pool_bound_tokens),
                CASE WHEN c.role = 'prefill' THEN '; ' || c.stub_text ELSE '' END)
            WHEN c.engine = 'vllm' AND c.max_concurrency IS NOT NULL THEN format('vLLM node {}: maximum concurrency {}x < 1.00x for {:,} tokens per request: one full-length request does not fit the KV cache',
                c.node, c.max_concurrency, c.context_len)
            WHEN c.engine = 'vllm' THEN format('vLLM node {}: KV cache {:,} tokens < max model len {:,}: one full-length request does not fit',
                c.node, c.pool_tokens, c.context_len)
            ELSE format('{} node {}: KV pool {:,} tokens < context {:,} tokens; the scheduler rejects prompts of {:,} tokens and more (max_req_input_len), {:,} token lengths below what the context admits{}',
                coalesce(c.role, 'unknown-role'), c.node, c.pool_tokens, c.context_len, c.max_req_input_len,
                c.context_len - 1 - c.max_req_input_len,
                CASE WHEN c.role = 'prefill' THEN '; ' || c.stub_text ELSE '' END)
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
r004 AS (   -- PD build whose code transfers the over-long stub (kvir.rules.builds over_long_pd)
    SELECT 'KVA004' AS rule_id, CASE WHEN c.stub_transferred IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'high' AS severity, c.*,
        CASE WHEN c.stub_transferred IS NULL THEN format('PD {} node {}: SGLang build {} ({}){}: whether it transfers the 1-token stub of an over-long prompt is unknown (builds before {} do; {} retires it after its forward, {} and later reject it at the bootstrap door)',
                 c.role, c.node, c.build, coalesce(c.build_evidence, 'no evidence'), coalesce('; ' || c.build_note, ''), $first_fixed, $first_fixed, $first_door)
             ELSE format('PD {} node {}: SGLang {} ({}){} forwards the 1-token stub of an over-long prompt and transfers its first KV page: decode serves pages nobody wrote for it, with HTTP 200 (builds from {} do not transfer it; from {} it is rejected at the bootstrap door)',
                 c.role, c.node, c.build, c.build_evidence, coalesce('; ' || c.build_note, ''), $first_fixed, $first_door) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd AND NOT coalesce(c.fixed_build, false)
),
r005 AS (   -- PD KV checksum (--disaggregation-enable-kv-checksum, from $checksum_first)
    SELECT 'KVA005' AS rule_id, CASE WHEN c.kv_checksum IS NULL AND NOT coalesce(c.checksum_absent, false) THEN 'unknown' ELSE 'fail' END AS status,
        'medium' AS severity, c.*,
        CASE WHEN c.kv_checksum IS NOT NULL THEN format('PD {} node {}: disaggregation_enable_kv_checksum is off ({}): KV landing in reused decode pages is not verified', c.role, c.node, c.kv_checksum_source)
             WHEN c.checksum_absent THEN format('PD {} node {}: build {} has no --disaggregation-enable-kv-checksum (it first appears in {}): transfers cannot be verified', c.role, c.node, c.build, $checksum_first)
             ELSE format('PD {} node {}: disaggregation_enable_kv_checksum is not in the evidence (no whole server_args dump naming it; build {}): whether transfers are verified is unknown', c.role, c.node, c.build) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd AND NOT coalesce(c.kv_checksum, false)
),
r006 AS (   -- KV canary (--kv-canary none|log|raise, from $canary_first)
    SELECT 'KVA006' AS rule_id, CASE WHEN c.kv_canary IS NULL AND NOT coalesce(c.canary_absent, false) THEN 'unknown' ELSE 'fail' END AS status,
        'low' AS severity, c.*,
        CASE WHEN c.kv_canary IS NOT NULL THEN format('PD {} node {}: kv_canary=''{}'' (line {}): cross-request KV reads are not detected', c.role, c.node, c.kv_canary, c.kv_canary_line)
             WHEN c.canary_absent THEN format('PD {} node {}: build {} has no --kv-canary (it first appears in {})', c.role, c.node, c.build, $canary_first)
             ELSE format('PD {} node {}: the --kv-canary setting is not in the evidence (no server_args dump naming it, no install_canary or [canary] line)', c.role, c.node) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd AND NOT c.canary_on
),
r012 AS (   -- the logs show requests verified (the operator recommendation), on evidence, not on a flag
    SELECT 'KVA012' AS rule_id,
        CASE WHEN coalesce(c.checksum_skipped_lines, 0) > 0 THEN 'fail'
             WHEN (NOT coalesce(c.kv_checksum, false)) AND (c.kv_checksum = false OR c.checksum_absent)
                  AND (c.kv_canary = 'none' OR c.canary_absent) AND NOT c.canary_on THEN 'fail'
             ELSE 'unknown' END AS status,
        CASE WHEN coalesce(c.checksum_skipped_lines, 0) > 0 THEN 'high' ELSE 'medium' END AS severity, c.*,
        CASE WHEN coalesce(c.checksum_skipped_lines, 0) > 0 THEN format('PD {} node {}: {} KV checksum skipped line(s) from line {}: requests of a prefill whose KV layout differs were admitted unverified',
                 c.role, c.node, c.checksum_skipped_lines, c.checksum_skipped_line)
             WHEN (NOT coalesce(c.kv_checksum, false)) AND (c.kv_checksum = false OR c.checksum_absent)
                  AND (c.kv_canary = 'none' OR c.canary_absent) AND NOT c.canary_on
                 THEN format('PD {} node {}: nothing verifies requests here (KV checksum off or absent, canary off or absent): no line can show a verified request', c.role, c.node)
             WHEN c.canary_on THEN format('PD {} node {}: the canary is on but no [canary] step=... line with protected_tokens > 0 shows it verifying requests in this start{}', c.role, c.node,
                 CASE WHEN coalesce(c.canary_stats_lines, 0) > 0 THEN format(' ({} statistics line(s), all with protected_tokens=0)', c.canary_stats_lines) ELSE '' END)
             WHEN c.kv_checksum THEN format('PD {} node {}: the KV checksum is on ({}), but SGLang prints nothing when a transfer verifies, and decode admits a request unchecked when its prefill sent digest 0: no line shows a verified request (run the canary, whose [canary] line counts protected_tokens)', c.role, c.node, c.kv_checksum_source)
             ELSE format('PD {} node {}: no line shows a verified request, and the checksum and canary settings are not in the evidence', c.role, c.node) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.pd AND (c.canary_verified_line IS NULL OR coalesce(c.checksum_skipped_lines, 0) > 0)
),
r007 AS (   -- deferred decode KV release (decode side); the build's default when the environment is not shown
    SELECT 'KVA007' AS rule_id,
        CASE WHEN c.deferred_release IS NOT NULL OR coalesce(c.deferred_release_default = 'absent', false) THEN 'fail' ELSE 'unknown' END AS status,
        'medium' AS severity, c.*,
        CASE WHEN c.deferred_release_default = 'absent' THEN format('PD decode node {}: build {} has no deferred decode KV release (SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE is read from 0.5.19, on by default from 0.5.21){}: aborted requests free pages an in-flight transfer may still write', c.node, c.build,
                 CASE WHEN c.deferred_release IS NOT NULL THEN format('; it is set ({}), but this build does not read it', c.env_source) ELSE '' END)
             WHEN c.deferred_release IS NOT NULL THEN format('PD decode node {}: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE is off ({}): aborted requests free pages an in-flight transfer may still write', c.node, c.env_source)
             WHEN c.deferred_release_default IS NOT NULL THEN format('PD decode node {}: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE is not in the evidence (no environment dump in the log, none in the inventory); build {} defaults it to {}', c.node, c.build, c.deferred_release_default)
             ELSE format('PD decode node {}: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE is not in the evidence (no environment dump in the log, none in the inventory) and the build ({}) does not say its default: unknown, not assumed on', c.node, c.build) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.role = 'decode'
      AND (coalesce(c.deferred_release_default = 'absent', false)
           OR (NOT coalesce(c.deferred_release, false)
               AND NOT (c.deferred_release IS NULL AND coalesce(c.deferred_release_default = 'True', false))))
),
r008 AS (   -- Mooncake transfer batch cap (prefill side issues the transfers)
    SELECT 'KVA008' AS rule_id,
        CASE WHEN c.transfer_batch_cap IS NOT NULL OR coalesce(c.batch_cap_default = 'absent', false) THEN 'fail' ELSE 'unknown' END AS status,
        'medium' AS severity, c.*,
        CASE WHEN c.batch_cap_default = 'absent' THEN format('PD prefill node {}: build {} has no SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES (read from 0.5.20){}: each transfer is one unbounded all-layer batch', c.node, c.build,
                 CASE WHEN c.transfer_batch_cap IS NOT NULL THEN format('; it is set to {} ({}), but this build does not read it', c.transfer_batch_cap, c.env_source) ELSE '' END)
             WHEN c.transfer_batch_cap IS NOT NULL THEN format('PD prefill node {}: SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES={} ({}): each transfer is one unbounded all-layer batch', c.node, c.transfer_batch_cap, c.env_source)
             WHEN c.batch_cap_default IS NOT NULL THEN format('PD prefill node {}: SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES is not in the evidence; build {} defaults it to {} (one unbounded all-layer batch; a cap counts KV pages, not tokens)', c.node, c.build, c.batch_cap_default)
             ELSE format('PD prefill node {}: SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES is not in the evidence: unknown, not assumed set', c.node) END AS message,
        NULL AS related_node, NULL AS related_evidence
    FROM c WHERE c.engine = 'sglang' AND c.role = 'prefill' AND coalesce(c.transfer_backend, 'mooncake') LIKE 'mooncake%'
      AND (coalesce(c.batch_cap_default = 'absent', false) OR NOT coalesce(c.transfer_batch_cap > 0, false))
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
    UNION ALL BY NAME SELECT * FROM r010 UNION ALL BY NAME SELECT * FROM r012
),
ind AS (   -- runtime indicators of exposure, per node and indicator
    SELECT i.node, i.role, i.indicator,
        CASE WHEN i.indicator = 'canary-violations-counted' THEN max(i.count) ELSE sum(i.count) END AS n,
        min(i.first_ts) AS first_ts, max(i.last_ts) AS last_ts, min(i.first_ts_host) AS first_host, max(i.last_ts_host) AS last_host,
        arg_min(i.evidence_file, i.evidence_line) AS evidence_file, min(i.evidence_line) AS evidence_line,
        max(i.limit_tokens) AS limit_tokens
    FROM runtime_indicators AS i WHERE i.incident_signal
    GROUP BY i.node, i.role, i.indicator
),
ind_build AS (
    SELECT ind.*, cur.version, cur.engine, cur.deployment, cur.fixed_build, cur.build, cur.over_long_outcome,
        coalesce(strftime(ind.first_ts, '%Y-%m-%d %H:%M UTC'), strftime(ind.first_host, '%Y-%m-%d %H:%M host-local (zone unknown)'), 'time unknown') AS t0,
        coalesce(strftime(ind.last_ts, '%Y-%m-%d %H:%M UTC'), strftime(ind.last_host, '%Y-%m-%d %H:%M host-local (zone unknown)'), 'time unknown') AS t1
    FROM ind LEFT JOIN (SELECT node, version, engine, deployment, fixed_build, build, over_long_outcome FROM c WHERE is_current) AS cur USING (node)
),
r011 AS (
    SELECT 'KVA011' AS rule_id, 'fail' AS status,
        CASE WHEN b.indicator = 'input-length-exceeds' AND b.fixed_build THEN 'low'
             WHEN b.indicator = 'input-length-exceeds' AND NOT coalesce(b.fixed_build, true) THEN 'critical'
             ELSE 'high' END AS severity,
        b.node, b.role, b.first_ts AS ts, b.engine, b.version, b.deployment, NULL::BIGINT AS config_id, NULL::BOOLEAN AS is_current,
        b.evidence_file, b.evidence_line,
        CASE b.indicator
            WHEN 'input-length-exceeds' THEN format('PD prefill node {}: {:,} prompt(s) rejected by the scheduler ({} to {}; {}); {}',
                b.node, b.n, b.t0, b.t1, coalesce(format('limit {:,} tokens', b.limit_tokens), 'no limit printed'),
                CASE WHEN b.fixed_build THEN format('on this build ({}: {}) each one was answered with HTTP 400 and never transferred: not an exposure here, but clients send prompts the pool cannot hold', b.build, b.over_long_outcome)
                     WHEN b.fixed_build = false THEN format('on this build ({}) each one was handed to decode as a 1-token stub over pages nobody wrote: check those responses with kvir triage', b.build)
                     ELSE format('whether each one reached decode depends on the build, which is {}: check those responses with kvir triage', coalesce(b.build, 'unknown')) END)
            WHEN 'exceeds-max-tokens' THEN format('PD {} node {}: {:,} request(s) exceeded the KV pool at admission ({} to {})',
                b.role, b.node, b.n, b.t0, b.t1)
            WHEN 'kv-checksum-mismatch' THEN format('node {}: {:,} KV checksum mismatch(es) ({} to {}): KV arrived corrupted or from another request (decode aborted them with HTTP 500)',
                b.node, b.n, b.t0, b.t1)
            WHEN 'context-corruption' THEN format('node {}: {:,} context corruption line(s) ({} to {}): decode received the metadata of another bootstrap_room',
                b.node, b.n, b.t0, b.t1)
            WHEN 'canary-violations-counted' THEN format('node {}: the canary counted {:,} violation(s) ([canary] ... violations=, {} to {}): a request read KV it did not write',
                b.node, b.n, b.t0, b.t1)
            ELSE format('node {}: {:,} KV canary violation(s) (kv_canary violation: lines, {} to {}): a request read KV it did not write',
                b.node, b.n, b.t0, b.t1)
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
