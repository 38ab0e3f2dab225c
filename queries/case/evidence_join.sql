-- evidence_join: join a group of sources' requests to the requests other sources hold, by id or time, and merge the matches.
-- Params: none
-- Inputs: __join__ (one row: source_ids, pass, tolerance_s, engine_ids, keys; written by toolkit/ingest/joins.py with
--         bound values; the files of one format go in one pass: each pass rewrites `requests`; keys: id and/or
--         time, the keys a declared gateway allows, [[sources]] join)
--
-- Runs after case/requests_merged has merged what shares a request id or a bootstrap_room. Two passes:
--   candidate  the source's requests without a prompt length (router, vLLM INFO, Logpush, nginx, ...)
--              are matched to requests of other sources that have one, and (engine_ids: a client-facing
--              source) to every request an engine log holds, with or without one;
--   identity   the source's requests that name a customer (a gateway, with counts) are matched to
--              engine-log requests that name none, requiring the same prompt length as well.
-- Keys, strongest first:
--   id    the partner's id is the gateway's id under vLLM's OpenAI-server prefix: `chatcmpl-<id>` or
--         `cmpl-<id>` (vLLM takes a request's X-Request-Id header as its base id: serving.py
--         _base_request_id; nginx logs it as $upstream_http_x_request_id when it or the client sent one)
--   time  start times within ±tolerance_s, each side widened by its resolution (ts_granularity_s: nginx
--         $time_iso8601 is to the second; sources known only to the hour do not join by time); the same
--         node when both sides name one; the same prompt length when both have one.
-- A request the source already shares with another source by id is reported as matched by id. Otherwise:
--   matched    exactly one partner, and no other request of this source claims that partner
--   ambiguous  two or more partners, or a partner that other requests of this source also claim
--   unmatched  no partner
-- Matched pairs become one request: the partner's row (its id, counts and evidence line) with the
-- earliest exact start, the client-facing side's account, model and outcome (what the client got),
-- n_records and source_ids summed, conflict set when the two outcomes disagree, join_method and
-- joined_ids filled. An unmatched record stays a request of its own (no other source holds it).
-- An ambiguous record is one of the requests its partners are, so it is not a request of its own
-- (`counted` false), except where a group of ambiguous records (an island: records whose partners'
-- times overlap) outnumbers the partners it has: then g - e of them cannot be any partner, and that
-- many stay requests (those the gateway refused or failed first: an engine logs no line for a request
-- it refused at the door; then by time and id). The distinct-request count is thus the least the
-- evidence allows. Every joined record gets a row in evidence_joins, with its candidates; nothing is
-- dropped (the records stay in `records`).
CREATE OR REPLACE TEMP TABLE ej_a AS
SELECT r.*, coalesce(r.decode_node, r.prefill_node) AS a_node,
       r.prefill_node IS NULL AND r.decode_node IS NULL AS a_client_side,
       r.source_ids[1] AS a_source_id, coalesce(r.ts_granularity_s, 0) AS a_gran,
       -- the latest partner start: each side's bounds on one side of the join, so DuckDB plans a range join
       r.ts + to_microseconds(CAST(round((coalesce(r.ts_granularity_s, 0) + j.tolerance_s) * 1e6) AS BIGINT)) AS a_hi
FROM requests AS r, __join__ AS j
WHERE list_has_any(r.source_ids, j.source_ids) AND len(r.source_ids) = 1 AND r.ts IS NOT NULL
  AND coalesce(r.ts_granularity_s, 0) < 60
  AND CASE WHEN j.pass = 'candidate' THEN r.prompt_tokens IS NULL
           ELSE r.prompt_tokens IS NOT NULL AND r.account_id IS NOT NULL
                AND r.prefill_node IS NULL AND r.decode_node IS NULL END;

CREATE OR REPLACE TEMP TABLE ej_b AS
SELECT r.*, coalesce(r.ts_granularity_s, 0) AS b_gran,
       r.ts + to_microseconds(CAST(round((coalesce(r.ts_granularity_s, 0) + j.tolerance_s) * 1e6) AS BIGINT)) AS b_hi
FROM requests AS r, __join__ AS j
WHERE NOT list_has_any(r.source_ids, j.source_ids) AND r.ts IS NOT NULL
  AND coalesce(r.ts_granularity_s, 0) < 60
  AND CASE WHEN j.pass = 'candidate'
           THEN r.prompt_tokens IS NOT NULL OR list_has_any(r.source_ids, coalesce(j.engine_ids, []))
           ELSE r.prompt_tokens IS NOT NULL AND r.account_id IS NULL
                AND (r.prefill_node IS NOT NULL OR r.decode_node IS NOT NULL) END;

-- time buckets as wide as the widest window: a record's partners lie in its bucket range (a hash join on the
-- bucket, then the exact bounds), which is far cheaper than a range join over two large logs
CREATE OR REPLACE TEMP TABLE ej_width AS
SELECT greatest(coalesce(max(epoch_us(b_hi) - epoch_us(ts)), 0), 1000000) AS w_us FROM ej_b;

CREATE OR REPLACE TEMP TABLE ej_pairs AS
WITH id_keys AS (   -- an equi-join (a hash join), not an IN list per pair
    SELECT a.request_id AS a_id, a.ts AS a_ts, unnest(['chatcmpl-' || a.request_id, 'cmpl-' || a.request_id]) AS key
    FROM ej_a AS a
),
by_id AS (
    SELECT k.a_id, b.request_id AS b_id, epoch(b.ts) - epoch(k.a_ts) AS delta_s, 'id' AS method
    FROM id_keys AS k JOIN ej_b AS b ON b.request_id = k.key
    WHERE list_contains((SELECT keys FROM __join__), 'id')
)
SELECT * FROM by_id
UNION ALL
SELECT a.request_id, b.request_id, epoch(b.ts) - epoch(a.ts),
       CASE WHEN a.a_node IS NOT NULL AND (b.prefill_node IS NOT NULL OR b.decode_node IS NOT NULL) THEN 'time+node'
            WHEN a.prompt_tokens IS NOT NULL THEN 'time+tokens'
            ELSE 'time' END
FROM (SELECT a.*, unnest(range(epoch_us(a.ts) // k.w_us - 1, epoch_us(a.a_hi) // k.w_us + 1)) AS bucket
      FROM ej_a AS a, ej_width AS k) AS a
JOIN (SELECT b.*, epoch_us(b.ts) // k.w_us AS bucket FROM ej_b AS b, ej_width AS k) AS b
  ON b.bucket = a.bucket AND b.b_hi >= a.ts AND b.ts <= a.a_hi
WHERE list_contains((SELECT keys FROM __join__), 'time')
  AND (a.a_node IS NULL OR (b.prefill_node IS NULL AND b.decode_node IS NULL)
       OR a.a_node = b.prefill_node OR a.a_node = b.decode_node)
  AND (a.prompt_tokens IS NULL OR b.prompt_tokens = a.prompt_tokens)
  AND a.request_id NOT IN (SELECT a_id FROM by_id)
  AND b.request_id NOT IN (SELECT b_id FROM by_id);

CREATE OR REPLACE TEMP TABLE ej_result AS
WITH per_a AS (
    SELECT a.request_id AS a_id, a.a_source_id, a.ts, a.account_id, a.outcome, count(p.b_id) AS partners,
           any_value(p.b_id) AS b_id, any_value(p.delta_s) AS delta_s, any_value(p.method) AS method,
           list_sort(list(p.b_id) FILTER (WHERE p.b_id IS NOT NULL)) AS candidate_ids
    FROM ej_a AS a LEFT JOIN ej_pairs AS p ON p.a_id = a.request_id
    GROUP BY a.request_id, a.a_source_id, a.ts, a.account_id, a.outcome
),
claims AS (
    SELECT b_id, count(*) AS claimants FROM ej_pairs GROUP BY b_id
)
SELECT pa.a_id, pa.a_source_id, pa.ts, pa.account_id, pa.outcome, pa.partners, pa.candidate_ids,
    CASE WHEN pa.partners = 0 THEN 'unmatched'
         WHEN pa.partners = 1 AND c.claimants = 1 THEN 'matched'
         ELSE 'ambiguous' END AS status,
    CASE WHEN pa.partners = 1 AND c.claimants = 1 THEN pa.b_id END AS b_id,
    CASE WHEN pa.partners = 1 AND c.claimants = 1 THEN pa.delta_s END AS delta_s,
    pa.method,
    CASE WHEN pa.partners > 1 THEN pa.partners || ' requests within the tolerance'
         WHEN pa.partners = 1 AND c.claimants > 1 THEN 'its only partner is also the only match of ' || (c.claimants - 1) || ' other request(s)'
    END AS note
FROM per_a AS pa LEFT JOIN claims AS c ON c.b_id = pa.b_id;

-- islands of ambiguous records: records whose partners' time spans overlap (every record sharing a
-- partner with another is in its island); g records over e partners leave max(g - e, 0) of them that
-- no partner can be
CREATE OR REPLACE TEMP TABLE ej_counted AS
WITH spans AS (
    SELECT x.a_id, x.ts, x.outcome, min(b.ts) AS lo, max(b.ts) AS hi
    FROM ej_result AS x JOIN ej_pairs AS p ON p.a_id = x.a_id JOIN ej_b AS b ON b.request_id = p.b_id
    WHERE x.status = 'ambiguous'
    GROUP BY x.a_id, x.ts, x.outcome
),
starts AS (
    SELECT s.*, CASE WHEN s.lo <= max(s.hi) OVER (ORDER BY s.lo, s.a_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                     THEN 0 ELSE 1 END AS new_island
    FROM spans AS s
),
islands AS (
    SELECT s.*, sum(s.new_island) OVER (ORDER BY s.lo, s.a_id ROWS UNBOUNDED PRECEDING) AS island FROM starts AS s
),
sizes AS (
    SELECT i.island, count(DISTINCT i.a_id) AS g, count(DISTINCT p.b_id) AS e
    FROM islands AS i JOIN ej_pairs AS p ON p.a_id = i.a_id GROUP BY i.island
)
SELECT i.a_id, z.g, z.e,
    row_number() OVER (PARTITION BY i.island ORDER BY coalesce(i.outcome IN ('rejected', 'failed'), false) DESC,
                                                      i.ts, i.a_id) <= greatest(z.g - z.e, 0) AS counted
FROM islands AS i JOIN sizes AS z USING (island);

INSERT INTO evidence_joins BY NAME
SELECT list_intersect(r.source_ids, j.source_ids)[1] AS source_id, j.pass, r.request_id, r.ts, 'matched' AS status,
       1 AS partners, r.request_id AS partner_request_id, 'id' AS method, j.tolerance_s, 0.0 AS delta_s,
       CASE WHEN j.pass = 'identity' OR r.account_id IS NOT NULL THEN r.account_id END AS account_id,
       'shares its request id (or bootstrap_room) with ' || (len(r.source_ids) - 1) || ' other source(s)' AS note,
       [r.request_id] AS candidate_ids, false AS counted
FROM requests AS r, __join__ AS j
WHERE list_has_any(r.source_ids, j.source_ids) AND len(r.source_ids) > 1 AND r.join_method IS NULL
  AND NOT EXISTS (SELECT 1 FROM evidence_joins AS e
                  WHERE list_contains(j.source_ids, e.source_id) AND e.request_id = r.request_id)
  AND (j.pass = 'candidate' OR r.account_id IS NOT NULL)
UNION ALL BY NAME
SELECT x.a_source_id AS source_id, j.pass, x.a_id AS request_id, x.ts, x.status, x.partners,
       x.b_id AS partner_request_id, x.method, j.tolerance_s, x.delta_s, x.account_id,
       CASE WHEN k.counted THEN concat_ws('; ', x.note, k.g || ' ambiguous records over ' || k.e
                                          || ' requests: counted as a request of its own')
            WHEN k.a_id IS NOT NULL THEN concat_ws('; ', x.note, 'one of its candidates: not a request of its own')
            ELSE x.note END AS note,
       x.candidate_ids, CASE x.status WHEN 'matched' THEN false WHEN 'unmatched' THEN true ELSE k.counted END AS counted
FROM ej_result AS x CROSS JOIN __join__ AS j LEFT JOIN ej_counted AS k ON k.a_id = x.a_id;

CREATE OR REPLACE TEMP TABLE ej_merged AS
SELECT b.* REPLACE (
        -- the earliest start known exactly: a start known to the second does not move an exact one
        CASE WHEN a.a_gran > 0 AND coalesce(b.ts_granularity_s, 0) = 0 THEN b.ts
             WHEN coalesce(b.ts_granularity_s, 0) > 0 AND a.a_gran = 0 THEN a.ts
             ELSE least(a.ts, b.ts) END AS ts,
        CASE WHEN a.a_gran > 0 AND coalesce(b.ts_granularity_s, 0) = 0 THEN b.ts_extra_ns
             WHEN coalesce(b.ts_granularity_s, 0) > 0 AND a.a_gran = 0 THEN a.ts_extra_ns
             WHEN (a.ts, coalesce(a.ts_extra_ns, 0)) < (b.ts, coalesce(b.ts_extra_ns, 0)) THEN a.ts_extra_ns
             ELSE b.ts_extra_ns END AS ts_extra_ns,
        least(a.a_gran, coalesce(b.ts_granularity_s, 0)) AS ts_granularity_s,
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
  AND r.request_id NOT IN (SELECT a_id FROM ej_counted WHERE NOT counted)
UNION ALL BY NAME
SELECT * FROM ej_merged;

DROP TABLE ej_a;
DROP TABLE ej_b;
DROP TABLE ej_pairs;
DROP TABLE ej_width;
DROP TABLE ej_result;
DROP TABLE ej_counted;
DROP TABLE ej_merged;
