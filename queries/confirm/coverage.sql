-- coverage: per affected or possibly affected response, how many earlier requests of other tenants could
-- have been its source (on its instance, inside the window) and how many of them have text in the sources.
-- Params: $window_s, $any_instance
-- A response that matched nothing is "not confirmed": what could not be compared is said with it. Instance =
-- the request's decode node, else its prefill node; a response on no known instance (or --instance any)
-- counts every request. A request without an account counts as another tenant's, and its text as none (an
-- unknown tenant may be the response's own, so it cannot confirm). Counts are differences of running counts found by as-of joins (no pairs).
CREATE OR REPLACE TEMP TABLE confirm_targets AS
SELECT DISTINCT h.request_id, r.ts, r.account_id AS tenant,
       CASE WHEN $any_instance THEN '*' ELSE coalesce(r.decode_node, r.prefill_node, '*') END AS ikey
FROM triage_hits AS h JOIN requests AS r ON r.request_id = h.request_id
WHERE h.category IN ('affected', 'possibly-affected');

CREATE OR REPLACE TEMP TABLE confirm_events AS
SELECT k.ikey, r.ts, r.account_id AS tenant,
       r.account_id IS NOT NULL AND r.request_id IN (SELECT request_id FROM confirm_meta) AS has_text
FROM requests AS r, unnest([coalesce(r.decode_node, r.prefill_node, '?'), '*']) AS k(ikey);

CREATE OR REPLACE TEMP TABLE confirm_run_all AS
SELECT ikey, ts, count(*) OVER w AS n, sum(has_text::INTEGER) OVER w AS n_text
FROM confirm_events WINDOW w AS (PARTITION BY ikey ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

CREATE OR REPLACE TEMP TABLE confirm_run_tenant AS
SELECT ikey, tenant, ts, count(*) OVER w AS n, sum(has_text::INTEGER) OVER w AS n_text
FROM confirm_events WINDOW w AS (PARTITION BY ikey, tenant ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

CREATE OR REPLACE TABLE confirm_coverage AS
WITH b AS (
    SELECT t.*, CASE WHEN $window_s IS NULL THEN NULL
                     ELSE t.ts - to_microseconds(CAST($window_s * 1e6 AS BIGINT)) END AS since
    FROM confirm_targets AS t
),
a1 AS (SELECT b.request_id, coalesce(x.n, 0) AS n, coalesce(x.n_text, 0) AS n_text FROM b
       ASOF LEFT JOIN confirm_run_all AS x ON x.ikey = b.ikey AND x.ts < b.ts),
a0 AS (SELECT b.request_id, coalesce(x.n, 0) AS n, coalesce(x.n_text, 0) AS n_text FROM b
       ASOF LEFT JOIN confirm_run_all AS x ON x.ikey = b.ikey AND x.ts < b.since),
t1 AS (SELECT b.request_id, coalesce(x.n, 0) AS n, coalesce(x.n_text, 0) AS n_text FROM b
       ASOF LEFT JOIN confirm_run_tenant AS x ON x.ikey = b.ikey AND x.tenant = b.tenant AND x.ts < b.ts),
t0 AS (SELECT b.request_id, coalesce(x.n, 0) AS n, coalesce(x.n_text, 0) AS n_text FROM b
       ASOF LEFT JOIN confirm_run_tenant AS x ON x.ikey = b.ikey AND x.tenant = b.tenant AND x.ts < b.since)
SELECT b.request_id, b.ikey = '*' AS any_instance,
       (a1.n - a0.n) - (t1.n - t0.n) AS candidates,
       (a1.n_text - a0.n_text) - (t1.n_text - t0.n_text) AS candidates_with_text
FROM b JOIN a1 USING (request_id) JOIN a0 USING (request_id) JOIN t1 USING (request_id) JOIN t0 USING (request_id);
