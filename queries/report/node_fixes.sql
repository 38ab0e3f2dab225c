-- node_fixes: per node (audit's node_configs), when it first started with a KV pool smaller than the
-- context length (vulnerable) and the first start after its last vulnerable one whose pool holds the
-- whole context (the restart onto the fixed config), with the start-up log line of each.
-- Params: none
WITH c AS (
    SELECT node, role, ts, version, pool_tokens, context_len, evidence_file, evidence_line,
           pool_tokens < context_len AS vulnerable
    FROM node_configs
    WHERE pool_tokens IS NOT NULL AND context_len IS NOT NULL AND node IS NOT NULL
),
v AS (
    SELECT node, min(ts) AS vulnerable_from, max(ts) AS last_vulnerable,
           min_by(evidence_file, ts) AS vulnerable_file, min_by(evidence_line, ts) AS vulnerable_line,
           min_by(pool_tokens, ts) AS vulnerable_pool, min_by(context_len, ts) AS vulnerable_context
    FROM c WHERE vulnerable GROUP BY node
),
f AS (
    SELECT c.node, min(c.ts) AS fixed_at,
           min_by(c.version, c.ts) AS fixed_version, min_by(c.pool_tokens, c.ts) AS fixed_pool,
           min_by(c.context_len, c.ts) AS fixed_context,
           min_by(c.evidence_file, c.ts) AS fixed_file, min_by(c.evidence_line, c.ts) AS fixed_line
    FROM c JOIN v ON v.node = c.node
    WHERE NOT c.vulnerable AND c.ts > v.last_vulnerable
    GROUP BY c.node
),
n AS (SELECT node, max(role) AS role, count(*) AS starts FROM c GROUP BY node)
SELECT n.node, n.role, n.starts, v.vulnerable_from, v.vulnerable_pool, v.vulnerable_context,
       v.vulnerable_file, v.vulnerable_line, f.fixed_at, f.fixed_version, f.fixed_pool, f.fixed_context,
       f.fixed_file, f.fixed_line,
       v.node IS NOT NULL AND f.node IS NULL AS still_vulnerable
FROM n
LEFT JOIN v ON v.node = n.node
LEFT JOIN f ON f.node = n.node
ORDER BY n.role, n.node
