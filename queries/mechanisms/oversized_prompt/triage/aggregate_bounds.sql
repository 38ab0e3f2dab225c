-- aggregate_bounds: what Prometheus prompt-token histograms imply about requests above the threshold: bounds, never requests.
-- Params: $models, $window_start, $window_end, $pool_tokens, $context_tokens, $rule, $engine, $condition_text
--
-- An aggregate finding, one row per histogram series (source, family, label set without le). Buckets
-- are cumulative: c(le) requests had a prompt of at most le tokens, c(+Inf) is the total. Requests
-- of the rule's threshold (kvir_rule_threshold) or more, i.e. above T = threshold - 1,
-- number at least total - c(smallest bound >= T) and at most total - c(largest bound <= T) (exact when T
-- is a bound). Counts are per process since it started. With two or more timestamped scrapes the
-- increase between the last scrape at or before the window start and the first at or after its end is
-- used (a value that drops means the process restarted: the new value counts whole), so the interval
-- can be wider than the window and both bounds say so; with one scrape, or scrapes without timestamps,
-- the counts cover the process's whole life up to the scrape. Series whose model_name label is not one
-- of the incident's models are left out. In PD deployments prefill and decode both count a request.
CREATE OR REPLACE TABLE aggregate_findings AS
WITH thr AS (
    SELECT CAST(kvir_rule_threshold($rule, $engine, $pool_tokens, $context_tokens) AS DOUBLE) - 1 AS t,
           'prompts of ' || $condition_text AS t_text
),
b AS (
    SELECT m.source_id, m.metric, m.labels, m.model, m.le, m.value, m.ts, m.source_line
    FROM metric_samples AS m
    WHERE m.sample = 'bucket' AND m.le IS NOT NULL AND m.value IS NOT NULL
      AND (m.model IS NULL OR list_contains($models, m.model))
),
series AS (
    SELECT source_id, metric, labels, any_value(model) AS model,
        count(DISTINCT ts) AS n_timed,
        max(ts) FILTER (WHERE ts <= $window_start) AS before_start,
        min(ts) FILTER (WHERE ts >= $window_end) AS after_end,
        min(ts) AS first_ts, max(ts) AS last_ts,
        min(source_line) AS first_line
    FROM b GROUP BY source_id, metric, labels
),
spans AS (
    SELECT s.*,
        CASE WHEN s.n_timed >= 2 THEN coalesce(s.before_start, s.first_ts) END AS t0,
        CASE WHEN s.n_timed >= 2 THEN coalesce(s.after_end, s.last_ts) END AS t1
    FROM series AS s
),
steps AS (
    SELECT b.*, lag(b.value) OVER (PARTITION BY b.source_id, b.metric, b.labels, b.le ORDER BY b.ts) AS prev
    FROM b
),
per_le AS (
    SELECT st.source_id, st.metric, st.labels, st.le,
        CASE WHEN any_value(sp.n_timed) >= 2
             THEN coalesce(sum(CASE WHEN st.ts > sp.t0 AND st.ts <= sp.t1
                                    THEN CASE WHEN st.prev IS NULL OR st.value >= st.prev THEN st.value - coalesce(st.prev, 0)
                                              ELSE st.value END END), 0)
             ELSE max(st.value) END AS n_le
    FROM steps AS st JOIN spans AS sp USING (source_id, metric, labels)
    GROUP BY st.source_id, st.metric, st.labels, st.le
),
bounded AS (
    SELECT p.source_id, p.metric, p.labels,
        max(p.n_le) FILTER (WHERE isinf(p.le)) AS total,
        arg_min(p.n_le, p.le) FILTER (WHERE p.le >= thr.t) AS c_hi,
        min(p.le) FILTER (WHERE p.le >= thr.t) AS le_hi,
        arg_max(p.n_le, p.le) FILTER (WHERE p.le <= thr.t) AS c_lo,
        max(p.le) FILTER (WHERE p.le <= thr.t) AS le_lo
    FROM per_le AS p, thr
    GROUP BY p.source_id, p.metric, p.labels
)
SELECT
    bd.source_id, src.label AS source_file, sp.first_line AS source_line, bd.metric, bd.labels, sp.model,
    sp.t0 AS interval_start, sp.t1 AS interval_end,
    CASE WHEN sp.n_timed >= 2 THEN
             'increase between scrapes at ' || strftime(sp.t0, '%Y-%m-%dT%H:%M:%SZ') || ' and ' || strftime(sp.t1, '%Y-%m-%dT%H:%M:%SZ')
             || CASE WHEN sp.before_start IS NULL THEN '; no scrape at or before the window start' ELSE '' END
             || CASE WHEN sp.after_end IS NULL THEN '; no scrape at or after the window end' ELSE '' END
         WHEN sp.n_timed = 1 THEN 'cumulative since the process started, up to the scrape at ' || strftime(sp.last_ts, '%Y-%m-%dT%H:%M:%SZ')
         ELSE 'cumulative since the process started (scrape time not recorded)' END AS basis,
    thr.t_text AS threshold,
    CAST(greatest(bd.total - coalesce(bd.c_hi, bd.total), 0) AS BIGINT) AS lower,
    CAST(greatest(bd.total - coalesce(bd.c_lo, 0), 0) AS BIGINT) AS upper,
    CAST(bd.total AS BIGINT) AS total,
    bd.le_lo AS bucket_below, bd.le_hi AS bucket_above,
    'aggregate (Prometheus histogram, not request-level evidence): between '
        || CAST(greatest(bd.total - coalesce(bd.c_hi, bd.total), 0) AS BIGINT) || ' and '
        || CAST(greatest(bd.total - coalesce(bd.c_lo, 0), 0) AS BIGINT) || ' requests with ' || thr.t_text AS finding
FROM bounded AS bd
JOIN spans AS sp USING (source_id, metric, labels)
JOIN sources AS src ON src.source_id = bd.source_id
CROSS JOIN thr
WHERE bd.total IS NOT NULL
  AND thr.t IS NOT NULL      -- no threshold (the engine rule, the engine unknown): histograms bound nothing
ORDER BY bd.source_id, bd.metric, bd.labels;
