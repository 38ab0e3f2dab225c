-- node_exposure: per prefill node, each stretch of time in which it was exposed (pool below context on a build without the fix), and when that ended.
-- Params: none
--
-- Derived from node_configs alone. A start is 'exposed' when it is an SGLang PD prefill start whose pool
-- is below its context (holds_context = false) on a build that transfers the over-long stub, or whose
-- build is unknown (node_configs.stub_transferred, from kvir.rules.builds; `build` says which);
-- 'unknown' when pool or context is not in the evidence; otherwise 'not exposed'. Consecutive
-- starts in one state form one stretch, in the node's start order (start_index: by UTC time, else by the
-- host's own clock and the log's sequence, so a restart ends a stretch even when no zone is known):
-- exposed_from = its first start, exposed_until = the time of the next start in another state (NULL when
-- unknown), ended = whether such a next start exists (false: still so at the last start seen). A prefill
-- node never exposed gets one row with state 'never exposed'.
CREATE OR REPLACE TABLE node_exposure AS
WITH c AS (
    SELECT n.*,
        CASE WHEN n.holds_context IS NULL THEN 'unknown'
             WHEN NOT n.holds_context AND n.engine = 'sglang'
                  AND NOT coalesce(NOT n.stub_transferred, false) THEN 'exposed'
             ELSE 'not exposed' END AS state
    FROM node_configs AS n
    WHERE n.role = 'prefill'
),
g AS (
    SELECT c.*,
        row_number() OVER (PARTITION BY c.node ORDER BY c.start_index)
        - row_number() OVER (PARTITION BY c.node, c.state ORDER BY c.start_index) AS grp
    FROM c
),
runs AS (
    SELECT g.node, g.state, g.grp,
        min(g.ts) AS exposed_from,
        arg_max(g.ts_end, g.start_index) AS exposed_until,
        count(*) AS starts,
        min(g.pool_tokens) AS pool_tokens, max(g.context_len) AS context_len, min(g.max_req_input_len) AS max_req_input_len,
        arg_min(coalesce(g.version, g.build), g.start_index) AS version,
        arg_min(g.evidence_file || ':' || g.evidence_line, g.start_index) AS from_evidence,
        max(g.start_index) AS last_index
    FROM g GROUP BY g.node, g.state, g.grp
),
nxt AS (   -- the start that ended each stretch
    SELECT r.*, n.pool_tokens AS next_pool, n.context_len AS next_context, n.build AS next_version,
        n.stub_transferred AS next_transfers,
        n.evidence_file || ':' || n.evidence_line AS until_evidence, n.node IS NOT NULL AS ended
    FROM runs AS r
    LEFT JOIN node_configs AS n ON n.node = r.node AND n.start_index = r.last_index + 1
)
SELECT node, 'prefill' AS role, exposed_from, exposed_until, ended, state, starts, pool_tokens, context_len, max_req_input_len,
    version, from_evidence, until_evidence,
    CASE WHEN NOT ended THEN NULL
         WHEN next_pool IS NOT NULL AND next_context IS NOT NULL AND next_pool >= next_context
             THEN format('restart with pool {:,} >= context {:,}', next_pool, next_context)
         WHEN NOT next_transfers THEN format('restart on build {}', next_version)
         ELSE 'restart' END AS ended_by
FROM nxt WHERE state <> 'not exposed'
UNION ALL BY NAME
SELECT node, 'prefill' AS role, NULL AS exposed_from, NULL AS exposed_until, NULL AS ended, 'never exposed' AS state,
    count(*) AS starts, min(pool_tokens) AS pool_tokens, max(context_len) AS context_len,
    min(max_req_input_len) AS max_req_input_len, arg_max(coalesce(version, build), start_index) AS version,
    NULL AS from_evidence, NULL AS until_evidence, NULL AS ended_by
FROM c GROUP BY node HAVING bool_and(state = 'not exposed')
ORDER BY node, exposed_from NULLS LAST;
