-- evidence_join: join a group of sources' requests to the requests other sources hold, by time, and merge the matches.
-- Params: none
-- Inputs: __join__ (one row: source_ids, pass, tolerance_s; written by toolkit/ingest/joins.py with bound values;
--         the files of one format go in one pass: each pass rewrites `requests`)
--
-- Runs after case/requests_merged has merged what shares a request id or a bootstrap_room. Two passes:
--   candidate  the source's requests without a prompt length (router, vLLM INFO, Logpush, nginx, ...)
--              are matched to requests of other sources that have one;
--   identity   the source's requests that name a customer (a gateway, with counts) are matched to
--              engine-log requests that name none, requiring the same prompt length as well.
-- Keys: start times within ±tolerance_s; the same node when both sides name one (an engine-side
-- candidate such as a vLLM node's log); the same prompt length when both have one. A request the
-- source already shares with another source by id is reported as matched by id. Otherwise:
--   matched    exactly one partner, and no other request of this source claims that partner
--   ambiguous  two or more partners, or a partner that other requests of this source also claim
--   missed     no partner
-- Matched pairs become one request: the partner's row (its id, counts and evidence line) with the
-- earliest start, the client-facing side's account, model and outcome (what the client got), n_records
-- and source_ids summed, conflict set when the two outcomes disagree, join_method and joined_ids filled.
-- Every joined request gets a row in evidence_joins; nothing is dropped.
CREATE OR REPLACE TEMP TABLE ej_a AS
SELECT r.*, coalesce(r.decode_node, r.prefill_node) AS a_node,
       r.prefill_node IS NULL AND r.decode_node IS NULL AS a_client_side,
       r.source_ids[1] AS a_source_id
FROM requests AS r, __join__ AS j
WHERE list_has_any(r.source_ids, j.source_ids) AND len(r.source_ids) = 1 AND r.ts IS NOT NULL
  AND coalesce(r.ts_granularity_s, 0) = 0
  AND CASE WHEN j.pass = 'candidate' THEN r.prompt_tokens IS NULL
           ELSE r.prompt_tokens IS NOT NULL AND r.account_id IS NOT NULL
                AND r.prefill_node IS NULL AND r.decode_node IS NULL END;

CREATE OR REPLACE TEMP TABLE ej_b AS
SELECT r.*
FROM requests AS r, __join__ AS j
WHERE NOT list_has_any(r.source_ids, j.source_ids) AND r.prompt_tokens IS NOT NULL AND r.ts IS NOT NULL
  AND coalesce(r.ts_granularity_s, 0) = 0
  AND (j.pass = 'candidate' OR (r.account_id IS NULL AND (r.prefill_node IS NOT NULL OR r.decode_node IS NOT NULL)));

CREATE OR REPLACE TEMP TABLE ej_pairs AS
SELECT a.request_id AS a_id, b.request_id AS b_id,
       epoch(b.ts) - epoch(a.ts) AS delta_s,
       CASE WHEN a.a_node IS NOT NULL AND (b.prefill_node IS NOT NULL OR b.decode_node IS NOT NULL) THEN 'time+node'
            WHEN a.prompt_tokens IS NOT NULL THEN 'time+tokens'
            ELSE 'time' END AS method
FROM ej_a AS a, __join__ AS j, ej_b AS b
WHERE b.ts >= a.ts - to_microseconds(CAST(round(j.tolerance_s * 1e6) AS BIGINT))
  AND b.ts <= a.ts + to_microseconds(CAST(round(j.tolerance_s * 1e6) AS BIGINT))
  AND (a.a_node IS NULL OR (b.prefill_node IS NULL AND b.decode_node IS NULL)
       OR a.a_node = b.prefill_node OR a.a_node = b.decode_node)
  AND (a.prompt_tokens IS NULL OR b.prompt_tokens = a.prompt_tokens);

CREATE OR REPLACE TEMP TABLE ej_result AS
WITH per_a AS (
    SELECT a.request_id AS a_id, a.a_source_id, a.ts, a.account_id, count(p.b_id) AS partners,
           any_value(p.b_id) AS b_id, any_value(p.delta_s) AS delta_s, any_value(p.method) AS method
    FROM ej_a AS a LEFT JOIN ej_pairs AS p ON p.a_id = a.request_id
    GROUP BY a.request_id, a.a_source_id, a.ts, a.account_id
),
claims AS (
    SELECT b_id, count(*) AS claimants FROM ej_pairs GROUP BY b_id
)
SELECT pa.a_id, pa.a_source_id, pa.ts, pa.account_id, pa.partners,
    CASE WHEN pa.partners = 0 THEN 'missed'
         WHEN pa.partners = 1 AND c.claimants = 1 THEN 'matched'
         ELSE 'ambiguous' END AS status,
    CASE WHEN pa.partners = 1 AND c.claimants = 1 THEN pa.b_id END AS b_id,
    CASE WHEN pa.partners = 1 AND c.claimants = 1 THEN pa.delta_s END AS delta_s,
    pa.method,
    CASE WHEN pa.partners > 1 THEN pa.partners || ' requests within the tolerance'
         WHEN pa.partners = 1 AND c.claimants > 1 THEN 'its only partner is also the only match of ' || (c.claimants - 1) || ' other request(s)'
    END AS note
FROM per_a AS pa LEFT JOIN claims AS c ON c.b_id = pa.b_id;

INSERT INTO evidence_joins
SELECT list_intersect(r.source_ids, j.source_ids)[1], j.pass, r.request_id, r.ts, 'matched', 1, r.request_id, 'id',
       j.tolerance_s, 0.0,
       CASE WHEN j.pass = 'identity' OR r.account_id IS NOT NULL THEN r.account_id END,
       'shares its request id (or bootstrap_room) with ' || (len(r.source_ids) - 1) || ' other source(s)'
FROM requests AS r, __join__ AS j
WHERE list_has_any(r.source_ids, j.source_ids) AND len(r.source_ids) > 1 AND r.join_method IS NULL
  AND NOT EXISTS (SELECT 1 FROM evidence_joins AS e
                  WHERE list_contains(j.source_ids, e.source_id) AND e.request_id = r.request_id)
  AND (j.pass = 'candidate' OR r.account_id IS NOT NULL)
UNION ALL
SELECT x.a_source_id, j.pass, x.a_id, x.ts, x.status, x.partners, x.b_id, x.method, j.tolerance_s, x.delta_s,
       x.account_id, x.note
FROM ej_result AS x, __join__ AS j;

CREATE OR REPLACE TEMP TABLE ej_merged AS
SELECT b.* REPLACE (
        least(a.ts, b.ts) AS ts,
        CASE WHEN (a.ts, coalesce(a.ts_extra_ns, 0)) < (b.ts, coalesce(b.ts_extra_ns, 0)) THEN a.ts_extra_ns
             ELSE b.ts_extra_ns END AS ts_extra_ns,
        greatest(a.ts_end, b.ts_end) AS ts_end,
        CASE WHEN a.a_client_side THEN coalesce(a.account_id, b.account_id) ELSE coalesce(b.account_id, a.account_id) END AS account_id,
        CASE WHEN a.a_client_side THEN coalesce(a.model, b.model) ELSE coalesce(b.model, a.model) END AS model,
        coalesce(CASE WHEN a.model <> b.model THEN (CASE WHEN a.a_client_side THEN b.model ELSE a.model END) END,
                 b.model_other, a.model_other) AS model_other,
        coalesce(b.prompt_tokens, a.prompt_tokens) AS prompt_tokens,
        coalesce(b.cached_tokens, a.cached_tokens) AS cached_tokens,
        coalesce(b.completion_tokens, a.completion_tokens) AS completion_tokens,
        CASE WHEN a.a_client_side THEN coalesce(a.http_status, b.http_status) ELSE coalesce(b.http_status, a.http_status) END AS http_status,
        CASE WHEN a.a_client_side THEN coalesce(a.outcome, b.outcome) ELSE coalesce(b.outcome, a.outcome) END AS outcome,
        coalesce(b.finish_reason, a.finish_reason) AS finish_reason,
        b.n_records + a.n_records AS n_records,
        b.conflict OR a.conflict OR coalesce(a.outcome <> b.outcome, false) AS conflict,
        list_sort(list_distinct(list_concat(b.source_ids, a.source_ids))) AS source_ids,
        concat_ws(',', b.join_method, x.method) AS join_method,
        list_concat(coalesce(b.joined_ids, []), [a.request_id]) AS joined_ids)
FROM ej_result AS x
JOIN ej_a AS a ON a.request_id = x.a_id
JOIN requests AS b ON b.request_id = x.b_id
WHERE x.status = 'matched';

CREATE OR REPLACE TABLE requests AS
SELECT r.* FROM requests AS r
WHERE r.request_id NOT IN (SELECT a_id FROM ej_result WHERE status = 'matched')
  AND r.request_id NOT IN (SELECT b_id FROM ej_result WHERE status = 'matched')
UNION ALL BY NAME
SELECT * FROM ej_merged;

DROP TABLE ej_a;
DROP TABLE ej_b;
DROP TABLE ej_pairs;
DROP TABLE ej_result;
DROP TABLE ej_merged;
