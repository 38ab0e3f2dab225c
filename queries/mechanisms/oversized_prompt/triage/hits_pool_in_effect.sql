-- hits_pool_in_effect: like triage/hits, but each request is judged against the KV pool and context in effect on its prefill node at its start time (node_configs from start-up logs).
-- Params: $models, $window_start, $window_end, $pool_tokens, $context_tokens, $rule, $engine
--
-- Per request, the config in effect is the latest start of its prefill node at or before the request's
-- ts (a start at the same second counts). This is an ASOF join written as a window function so the
-- query stays portable (Spark SQL has no ASOF JOIN; kvir.triage.transpile refuses one): configs (k = 0) and requests (k = 1) are
-- interleaved per node in time order and each request takes the last config id seen. The rules then use
-- that start's numbers and engine (node_configs.engine, else $engine) through kvir_rule_threshold (for
-- SGLang the engine limit is pool - 6 when the start did not show its context). A request without a prefill node, on a node
-- without start-up evidence, before its node's first start, or on a start whose pool is unknown falls
-- back to the global spec threshold ($pool_tokens, $context_tokens) and says so in threshold_source.
-- Coarse (hour-granular) times and the possibly-affected category work exactly as in triage/hits.
-- Output: the columns of triage/hits plus pool_in_effect, context_in_effect, engine_limit_in_effect,
-- config_ts, config_evidence (file:line) and threshold_source.
CREATE OR REPLACE TABLE triage_hits AS
WITH cfg AS (
    SELECT n.config_id, n.node, n.ts, n.pool_tokens, n.context_len, coalesce(n.engine, $engine) AS engine,
           n.evidence_file, n.evidence_line
    FROM node_configs AS n
),
floor_ AS (   -- the lowest threshold any node or the spec applies: requests below it cannot be hits
    SELECT least(g.public_lo, g.engine_lo,
                 coalesce(min(kvir_rule_threshold('public', cfg.engine, cfg.pool_tokens, cfg.context_len)), g.engine_lo),
                 coalesce(min(kvir_rule_threshold('engine', cfg.engine, cfg.pool_tokens, cfg.context_len)), g.engine_lo)) AS lo
    FROM cfg, (SELECT kvir_rule_threshold('public', $engine, $pool_tokens, $context_tokens) AS public_lo,
                      coalesce(kvir_rule_threshold('engine', $engine, $pool_tokens, $context_tokens),
                               kvir_rule_threshold('public', $engine, $pool_tokens, $context_tokens)) AS engine_lo) AS g
    GROUP BY g.public_lo, g.engine_lo
),
scoped AS (
    SELECT r.*, row_number() OVER (ORDER BY r.request_id, r.ts) AS k_row,
        CASE WHEN list_contains($models, r.model) THEN r.model ELSE r.model_other END AS matched_name
    FROM requests AS r, floor_ AS f
    WHERE (r.model IN (SELECT unnest($models)) OR r.model_other IN (SELECT unnest($models)))
      AND r.ts <= $window_end AND NOT (r.ts = $window_end AND coalesce(r.ts_extra_ns, 0) > 0)   -- kvir_in_window
      AND r.ts > $window_start - INTERVAL 1 DAY     -- as in triage/hits: a plain bound reaches the scan
      AND (r.ts >= $window_start
           OR (coalesce(r.ts_granularity_s, 0) > 0 AND r.ts + r.ts_granularity_s * INTERVAL 1 SECOND > $window_start))
      AND (r.prompt_tokens IS NULL OR r.prompt_tokens >= f.lo)
),
interleaved AS (
    SELECT c.node, c.ts, 0 AS k, c.config_id, NULL::BIGINT AS k_row
    FROM cfg AS c WHERE c.ts IS NOT NULL
    UNION ALL
    SELECT s.prefill_node, s.ts, 1 AS k, NULL::BIGINT, s.k_row
    FROM scoped AS s WHERE s.prefill_node IS NOT NULL
),
latest AS (
    SELECT i.k_row, i.k,
        last_value(i.config_id IGNORE NULLS) OVER (PARTITION BY i.node ORDER BY i.ts, i.k
                                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS config_id
    FROM interleaved AS i
),
matched AS (
    SELECT s.*, c.config_id, c.ts AS config_ts, c.pool_tokens AS cfg_pool, c.context_len AS cfg_context, c.engine AS cfg_engine,
        c.evidence_file || ':' || c.evidence_line AS config_evidence,
        s.prefill_node IN (SELECT DISTINCT node FROM cfg) AS node_known
    FROM scoped AS s
    LEFT JOIN (SELECT k_row, config_id FROM latest WHERE k = 1) AS a ON a.k_row = s.k_row
    LEFT JOIN cfg AS c ON c.config_id = a.config_id
),
ruled AS (
    SELECT m.*,
        coalesce(m.cfg_pool, $pool_tokens) AS pool_in_effect,
        CASE WHEN m.cfg_pool IS NOT NULL THEN m.cfg_context END AS context_in_effect,
        CASE WHEN m.cfg_pool IS NOT NULL THEN m.cfg_context ELSE $context_tokens END AS context_for_rule,
        coalesce(m.cfg_engine, $engine) AS engine_for_rule,
        CASE
            WHEN m.cfg_pool IS NOT NULL AND m.cfg_context IS NULL THEN 'node start (context not shown: SGLang limit = pool - 6)'
            WHEN m.cfg_pool IS NOT NULL THEN 'node start'
            WHEN m.prefill_node IS NULL THEN 'global: the request names no prefill node'
            WHEN NOT coalesce(m.node_known, false) THEN 'global: no start-up log for node ' || m.prefill_node
            WHEN m.config_id IS NULL THEN 'global: request before the first start of ' || m.prefill_node
            ELSE 'global: the pool is not in the start-up evidence of ' || m.prefill_node
        END AS threshold_source
    FROM matched AS m
),
judged AS (
    SELECT r.*,
        kvir_engine_limit(r.engine_for_rule, r.context_for_rule, r.pool_in_effect) AS engine_limit_in_effect,
        r.prompt_tokens >= kvir_rule_threshold('public', r.engine_for_rule, r.pool_in_effect, r.context_for_rule) AS public_hit,
        r.prompt_tokens >= kvir_rule_threshold('engine', r.engine_for_rule, r.pool_in_effect, r.context_for_rule) AS engine_hit
    FROM ruled AS r
),
decided AS (
    SELECT j.*,
        CASE WHEN $rule = 'public' THEN j.public_hit ELSE j.engine_hit END AS hit,
        CASE WHEN $rule = 'public' THEN j.engine_hit ELSE j.public_hit END AS other_hit
    FROM judged AS j
    WHERE j.prompt_tokens IS NULL OR j.public_hit OR j.engine_hit
)
SELECT d.* EXCLUDE (k_row, config_id, cfg_pool, cfg_context, cfg_engine, context_for_rule, engine_for_rule, node_known, pool_in_effect, context_in_effect,
                    engine_limit_in_effect, config_ts, config_evidence, threshold_source, public_hit, engine_hit, hit, other_hit),
    d.public_hit, d.engine_hit, d.hit, d.other_hit,
    kvir_parts_category(kvir_triage_category(d.prompt_tokens, d.hit, d.outcome, d.ts, d.ts_granularity_s, $window_start, $window_end),
                        d.prompt_tokens, d.prompt_parts, kvir_rule_threshold($rule, d.engine_for_rule, d.pool_in_effect, d.context_for_rule)) AS category,
    coalesce(kvir_parts_reason(d.prompt_tokens, d.prompt_parts, kvir_rule_threshold($rule, d.engine_for_rule, d.pool_in_effect, d.context_for_rule)),
             kvir_undecidable_reason(d.prompt_tokens, d.hit, d.outcome)) AS undecidable_reason,
    kvir_time_note(d.ts, d.ts_granularity_s, $window_start, $window_end) AS time_note,
    d.pool_in_effect, d.context_in_effect, d.engine_limit_in_effect, d.config_ts, d.config_evidence, d.threshold_source
FROM decided AS d;
