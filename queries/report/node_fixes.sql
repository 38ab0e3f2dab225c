-- node_fixes: per node (audit's node_configs), when it first started with a KV pool smaller than the
-- context length and served (vulnerable: a start the engine refused, as vLLM refuses such a pool, is not)
-- and the first start after its last vulnerable one whose pool holds the whole context (the restart onto
-- the fixed config), with the start-up log line of each. Starts are taken in the node's start order
-- (start_index: UTC time, else the host's clock and the log's sequence), so a restart is found even when
-- no zone is known (its time is then NULL).
-- Params: none
WITH c AS (
    SELECT node, role, ts, start_index, version, pool_tokens, context_len, evidence_file, evidence_line,
           pool_tokens < context_len AND NOT coalesce(refused, false) AS vulnerable
    FROM node_configs
    WHERE pool_tokens IS NOT NULL AND context_len IS NOT NULL AND node IS NOT NULL
),
v AS (
    SELECT node, min_by(ts, start_index) AS vulnerable_from, max(start_index) AS last_vulnerable,
           min_by(evidence_file, start_index) AS vulnerable_file, min_by(evidence_line, start_index) AS vulnerable_line,
           min_by(pool_tokens, start_index) AS vulnerable_pool, min_by(context_len, start_index) AS vulnerable_context
    FROM c WHERE vulnerable GROUP BY node
),
f AS (
    SELECT c.node, min_by(c.ts, c.start_index) AS fixed_at,
           min_by(c.version, c.start_index) AS fixed_version, min_by(c.pool_tokens, c.start_index) AS fixed_pool,
           min_by(c.context_len, c.start_index) AS fixed_context,
           min_by(c.evidence_file, c.start_index) AS fixed_file, min_by(c.evidence_line, c.start_index) AS fixed_line,
           true AS fixed
    FROM c JOIN v ON v.node = c.node
    WHERE NOT c.vulnerable AND c.start_index > v.last_vulnerable
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
