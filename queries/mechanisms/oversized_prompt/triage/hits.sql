-- hits: every request of the incident's model inside the window that either rule flags, or that no
-- rule can decide (prompt length unknown), with its category. Small: the 10^8-row scan ends here.
-- Params: $models, $window_start, $window_end, $pool_tokens, $context_tokens, $rule, $engine
--
-- Model: any name the request carries (model, or model_other: a gateway's deployment beside its model
-- group, a requested beside a served name) equals one of the incident's aliases exactly; matched_name says
-- which. A near-spelling is another model (triage lists the names the logs carry: kvir.triage.models).
-- Window: inclusive at both ends, at the source's precision (ts_extra_ns: 1 ns after the end is outside). A request whose start is only known to lie in [ts, ts +
-- ts_granularity_s) (the SGLang metrics export: an hour) is in scope when that span meets the window, and
-- -- counts as affected only when the whole span lies inside it; otherwise "possibly-affected". Rules: the
-- macro kvir_rule_threshold (public = more than the pool; engine = the engine's own limit, NULL when
-- the engine is unknown: then only the public rule is judged).
-- Categories, under the chosen rule:
--   affected     the rule holds and the client got a served response (HTTP 2xx, finish stop/length)
--   possibly-affected  as affected, but its start is only known to a span that crosses a window edge, or
--                its prompt length is a body's sum over several choices that does not settle the rule
--                (kvir_parts_category: undecidable_reason says why)
--   rejected     the rule holds and the engine refused it (HTTP 4xx / abort with 400): correct behaviour
--   failed       the rule holds and the request failed (HTTP 5xx, e.g. a transfer failure)
--   aborted      the rule holds and the client went away (abort without a status, HTTP 499)
--                (each of these three also when the prompt length is unknown: nothing was served)
--   undecidable  a needed field is missing: the prompt length, or the outcome when the rule holds
--   other-rule   only the other rule holds (reported so the two thresholds can be compared)
CREATE OR REPLACE TABLE triage_hits AS
WITH scoped AS (
    SELECT r.*,
        CASE WHEN list_contains($models, r.model) THEN r.model ELSE r.model_other END AS matched_name,
        r.prompt_tokens >= kvir_rule_threshold('public', $engine, $pool_tokens, $context_tokens) AS public_hit,
        r.prompt_tokens >= kvir_rule_threshold('engine', $engine, $pool_tokens, $context_tokens) AS engine_hit
    FROM requests AS r
    WHERE (r.model IN (SELECT unnest($models)) OR r.model_other IN (SELECT unnest($models)))
      AND r.ts <= $window_end AND NOT (r.ts = $window_end AND coalesce(r.ts_extra_ns, 0) > 0)   -- kvir_in_window
      -- a plain bound first (coarse times are at most a day wide), so DuckDB pushes it into a Parquet
      -- scan and skips row groups; the exact test for coarse times follows
      AND r.ts > $window_start - INTERVAL 1 DAY
      AND (r.ts >= $window_start
           OR (coalesce(r.ts_granularity_s, 0) > 0 AND r.ts + r.ts_granularity_s * INTERVAL 1 SECOND > $window_start))
      AND (r.prompt_tokens IS NULL OR r.prompt_tokens >= least(kvir_rule_threshold('public', $engine, $pool_tokens, $context_tokens),
                                                                 kvir_rule_threshold('engine', $engine, $pool_tokens, $context_tokens)))
),
judged AS (
    SELECT s.*,
        CASE WHEN $rule = 'public' THEN s.public_hit ELSE s.engine_hit END AS hit,
        CASE WHEN $rule = 'public' THEN s.engine_hit ELSE s.public_hit END AS other_hit
    FROM scoped AS s
)
SELECT j.*,
    kvir_parts_category(kvir_triage_category(j.prompt_tokens, j.hit, j.outcome, j.ts, j.ts_granularity_s, $window_start, $window_end),
                        j.prompt_tokens, j.prompt_parts, kvir_rule_threshold($rule, $engine, $pool_tokens, $context_tokens)) AS category,
    coalesce(kvir_parts_reason(j.prompt_tokens, j.prompt_parts, kvir_rule_threshold($rule, $engine, $pool_tokens, $context_tokens)),
             kvir_undecidable_reason(j.prompt_tokens, j.hit, j.outcome)) AS undecidable_reason,
    kvir_time_note(j.ts, j.ts_granularity_s, $window_start, $window_end) AS time_note
FROM judged AS j;
