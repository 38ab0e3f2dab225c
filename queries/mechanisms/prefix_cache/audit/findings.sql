-- findings: the prefix-cache mechanism's audit rules over every node start, added to findings (one row per failed or undecidable check).
-- Params: $isolation, $salt_field
-- ($isolation: incident.toml [prefix_cache] isolation, salt | gateway-salt | none | unknown; $salt_field: the
-- request field that carries the salt)
--
-- node_configs.prefix_caching / salt_* come from kvir.mechanisms.prefix_cache.audit_starts (the start-up
-- log's setting, the build's code in its releases table); NULL there is unknown, reported as such, never passed.
--   KVA013  prefix caching on (or not shown off) and the build or its cache connector does not keep the salt
--           in the key of every tier: fail when the code says so, unknown when the build is not known.
--   KVA014  prefix caching on and what isolates tenants is the caller's own salt (isolation "salt": a
--           tenant can send another's salt), nothing ("none"), or not stated ("unknown"); a gateway that sets
--           the salt per tenant ("gateway-salt") passes.
--   KVA015  vLLM with prefix caching on names its blocks with a hash that is not collision resistant (builtin,
--           64-bit SHA-256, xxHash; high when PYTHONHASHSEED puts the seed in the environment or the hash is
--           builtin); unknown when neither the flag nor the release is in the evidence.
--   KVA016  the engine and its LMCache connector are a release pair known to restore the wrong KV; unknown
--           when the LMCache release is not in the evidence (whether or not vLLM's own prefix cache is on).
INSERT INTO findings BY NAME
WITH c AS (
    SELECT n.* REPLACE (coalesce(n.pc_flag_line, n.evidence_line) AS evidence_line),
        CASE WHEN n.prefix_caching THEN format('prefix caching is on ({})', n.prefix_caching_source)
             WHEN n.prefix_caching IS NULL THEN format('prefix caching on or off: {}', n.prefix_caching_source) END AS pc_text
    FROM node_configs AS n WHERE n.prefix_caching IS DISTINCT FROM false
),
r013 AS (
    SELECT 'KVA013' AS rule_id, CASE WHEN c.salt_honoured = false AND c.prefix_caching THEN 'fail' ELSE 'unknown' END AS status,
        'high' AS severity, c.*,
        CASE WHEN c.salt_honoured = false AND NOT coalesce(c.salt_accepted, true)
                  THEN format('{} node {}: {}; this build takes no {} on the routes that reach the cache: every tenant''s prompts share one cache ({})', c.engine, c.node, c.pc_text, $salt_field, c.salt_basis)
             WHEN c.salt_honoured = false
                  THEN format('{} node {}: {}; the salt does not reach the key of every cache tier{}: a salted tenant can be served another tenant''s cached prefix ({})', c.engine, c.node, c.pc_text,
                              CASE WHEN c.cache_connector IS NOT NULL THEN format(' (connector {})', c.cache_connector) ELSE '' END, c.salt_basis)
             ELSE format('{} node {}: {}; whether this build keeps tenants'' salts apart in every cache tier is {}', c.engine, c.node, c.pc_text, c.salt_basis) END AS message
    FROM c WHERE c.salt_honoured IS DISTINCT FROM true
),
r014 AS (
    SELECT 'KVA014' AS rule_id, CASE WHEN $isolation IN ('salt', 'none') AND c.prefix_caching THEN 'fail' ELSE 'unknown' END AS status,
        CASE WHEN $isolation = 'none' THEN 'critical' ELSE 'high' END AS severity, c.*,
        CASE $isolation
            WHEN 'salt' THEN format('{} node {}: {}; tenants are isolated by the {} each caller sends (incident.toml [prefix_cache] isolation = "salt"): a tenant that sends another tenant''s salt is served that tenant''s cached prefix', c.engine, c.node, c.pc_text, $salt_field)
            WHEN 'none' THEN format('{} node {}: {}; nothing isolates tenants (incident.toml [prefix_cache] isolation = "none"): every tenant''s prompts share one cache', c.engine, c.node, c.pc_text)
            ELSE format('{} node {}: {}; what isolates tenants is not stated (incident.toml [prefix_cache] isolation = "unknown" or no spec): unknown whether a gateway sets the {} per tenant', c.engine, c.node, c.pc_text, $salt_field) END AS message
    FROM c WHERE $isolation <> 'gateway-salt'
),
r015 AS (
    SELECT 'KVA015' AS rule_id, CASE WHEN c.block_hash_weak AND c.prefix_caching THEN 'fail' ELSE 'unknown' END AS status,
        CASE WHEN c.block_hash_seed_known OR c.block_hash = 'builtin' THEN 'high' ELSE 'medium' END AS severity,
        c.* REPLACE (coalesce(c.hash_algo_line, c.evidence_line) AS evidence_line),
        CASE WHEN c.block_hash_weak THEN format('{} node {}: {}; blocks are named by {}: a tenant who makes a prompt collide with another''s cached block is served that block''s KV', c.engine, c.node, c.pc_text, c.block_hash_basis)
             ELSE format('{} node {}: {}; the block hash is {}', c.engine, c.node, c.pc_text, c.block_hash_basis) END AS message
    FROM c WHERE c.engine = 'vllm' AND c.block_hash_weak IS DISTINCT FROM false
),
r016 AS (
    SELECT 'KVA016' AS rule_id, CASE WHEN n.connector_pair_corrupts THEN 'fail' ELSE 'unknown' END AS status,
        'high' AS severity, n.* REPLACE (coalesce(n.lmcache_version_line, n.evidence_line) AS evidence_line),
        format('{} node {}: connector {}: {}', n.engine, n.node, n.pc_connector, n.connector_pair_basis) AS message
    FROM node_configs AS n WHERE n.connector_pair_basis IS NOT NULL AND n.connector_pair_corrupts IS DISTINCT FROM false
),
allf AS (SELECT * FROM r013 UNION ALL BY NAME SELECT * FROM r014 UNION ALL BY NAME SELECT * FROM r015
         UNION ALL BY NAME SELECT * FROM r016)
SELECT f.rule_id, f.severity, f.node, f.role, f.ts, ru.title, f.message, ru.fix, f.evidence_file, f.evidence_line,
    f.status, ru.name AS rule_name, f.engine, f.version, f.deployment, f.config_id, f.is_current,
    NULL AS related_node, NULL AS related_evidence,
    CASE f.severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 END AS severity_rank
FROM allf AS f JOIN audit_rules AS ru USING (rule_id);
