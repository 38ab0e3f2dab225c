-- requests_merged: one row per request as served, merging the records several sources (or lines) hold of it.
-- Params: $any_room (does any record have a bootstrap_room: without one, nothing is adopted or merged by room)
--
-- 1. PD copies: prefill and decode log one request under different rids and the same bootstrap_room;
--    they are one request, and the decode side's outcome wins (the client's stream came from decode).
--    The group's id is the decode side's rid (ties: the greatest rid, so no line order decides).
--    A record without a room joins the room of a record with its request id (an SGLang scheduler's
--    rejection line names only the rid): `request_adopted`, and `pd_room` below is the room either way.
-- 2. The same request seen by several sources (a gateway log and the engine log), or logged twice,
--    shares a request id: one request. Each field comes from the most authoritative record that has it:
--      outcome, http_status, model: gateway (what the client got) > decode > mixed > prefill
--      prompt_tokens:        decode > mixed > gateway > prefill (a prefill placeholder logs 1 token)
--      http_status:          the status of the record the outcome comes from (an abort on decode has
--                            none, whatever prefill said)
--      account_id:           gateway > anything else
--    and, between records of the same authority that disagree, the MOST EXPOSING reading: the largest
--    prompt length, a served outcome before failed > aborted > rejected, one of the incident's models
--    (the `incident` table) before another; then the greatest value. The answer depends on the records
--    a request has, never on the order of the lines or files that hold them (an exposure cannot vanish
--    because a log was reversed or a page re-fetched).
--    ts is the earliest start any record gives that knows its time exactly (ts_granularity_s 0): a
--    record known only to the hour (metrics export) widens nothing when an exact one exists; if all are
--    hour-granular, the earliest lower bound with the widest granularity.
-- 3. A conflict: the request's non-prefill records disagree on prompt_tokens, outcome or model (the
--    incident's aliases count as one model), or its records name different accounts (a prefill-side
--    abort next to a served decode is the incident's signature, not a conflict: kept in prefill_outcome).
--    Conflicts set conflict = true and are listed, with every value seen, in `conflicts`
--    (queries/case/conflicts.sql); nothing is dropped.
--
-- Only what has to be merged is grouped: records with a bootstrap_room, and records whose id another
-- record shares (found by a one-column hash aggregate, `request_multi`). Every other record is one
-- request as it stands, so `requests` is a view: those records as they are, plus the merged groups
-- (`requests_grouped`). A log of unique ids costs one hash aggregate, not a copy of every record.

-- a record without a room that shares its request id with a record logged with a room (the build side of
-- the semi-join is the roomless ids, usually few next to a PD log's rooms)
CREATE OR REPLACE TABLE request_adopted AS
SELECT r.request_id, min(r.bootstrap_room) AS room
FROM records AS r
WHERE $any_room AND r.bootstrap_room IS NOT NULL
  AND r.request_id IN (SELECT q.request_id FROM records AS q WHERE q.bootstrap_room IS NULL AND q.request_id IS NOT NULL)
GROUP BY r.request_id;

CREATE OR REPLACE VIEW records_pd AS          -- records with the PD room they belong to (own or adopted)
SELECT r.*, coalesce(r.bootstrap_room, a.room) AS pd_room
FROM records AS r LEFT JOIN request_adopted AS a ON r.bootstrap_room IS NULL AND a.request_id = r.request_id;

CREATE OR REPLACE TABLE request_multi AS      -- hash(merged id) of each request that needs merging
SELECT k FROM (
    SELECT hash(r.request_id) AS k, false AS roomed FROM records_pd AS r
    WHERE r.pd_room IS NULL AND r.request_id IS NOT NULL
    UNION ALL
    SELECT hash(coalesce(max_by(r.request_id, (CASE r.role WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END, r.request_id))
                             OVER (PARTITION BY r.pd_room), r.request_id)), true
    FROM records_pd AS r WHERE $any_room AND r.pd_room IS NOT NULL
)
GROUP BY k HAVING count(*) > 1 OR bool_or(roomed);

-- every record that is merged, with the id of its request and its ranks (read again by case/conflicts)
CREATE OR REPLACE VIEW request_members AS
WITH incident_models AS (
    SELECT unnest(coalesce(TRY_CAST(TRY(json(value)) AS VARCHAR[]), [])) AS model FROM incident WHERE key = 'models'
),
r AS (
    SELECT r.*,
        CASE r.role WHEN 'gateway' THEN 4 WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END AS p_outcome,
        CASE r.role WHEN 'decode' THEN 4 WHEN 'mixed' THEN 3 WHEN 'gateway' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END AS p_tokens,
        CASE r.role WHEN 'gateway' THEN 4 ELSE 1 END AS p_account,
        CASE r.outcome WHEN 'served' THEN 4 WHEN 'failed' THEN 3 WHEN 'aborted' THEN 2 WHEN 'rejected' THEN 1 ELSE 0 END AS x_outcome,
        coalesce(r.model IN (SELECT model FROM incident_models), false) AS x_model,
        CASE WHEN r.model IN (SELECT model FROM incident_models) THEN '' ELSE r.model END AS model_key  -- aliases are one model
    FROM records_pd AS r
)
SELECT r.*,
    coalesce(max_by(r.request_id, (CASE r.role WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END, r.request_id))
                 OVER (PARTITION BY r.pd_room), r.request_id) AS merged_id
FROM r WHERE r.pd_room IS NOT NULL
UNION ALL
SELECT r.*, r.request_id AS merged_id FROM r
WHERE r.pd_room IS NULL AND hash(r.request_id) IN (SELECT k FROM request_multi);

CREATE OR REPLACE TABLE requests_grouped AS
WITH grouped AS (
    SELECT
        merged_id AS request_id,
        coalesce(min(ts) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0), min(ts)) AS ts,
        max(ts_end) AS ts_end,
        CASE WHEN count(*) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0) > 0 THEN 0
             ELSE max(ts_granularity_s) END AS ts_granularity_s,
        max_by(account_id, (p_account, account_id)) FILTER (WHERE account_id IS NOT NULL) AS account_id,
        max_by(model, (p_outcome, x_model, model)) FILTER (WHERE model IS NOT NULL) AS model,
        max_by(prompt_tokens, (p_tokens, prompt_tokens)) FILTER (WHERE prompt_tokens IS NOT NULL) AS prompt_tokens,
        max_by(cached_tokens, (p_tokens, cached_tokens)) FILTER (WHERE cached_tokens IS NOT NULL) AS cached_tokens,
        max_by(completion_tokens, (p_outcome, x_outcome, completion_tokens)) FILTER (WHERE completion_tokens IS NOT NULL) AS completion_tokens,
        arg_max_null(http_status, CASE WHEN outcome IS NOT NULL OR http_status IS NOT NULL
                                       THEN (p_outcome, x_outcome, coalesce(http_status, -1)) END) AS http_status,
        max_by(outcome, (p_outcome, x_outcome)) FILTER (WHERE outcome IS NOT NULL) AS outcome,
        max_by(finish_reason, (p_outcome, x_outcome, finish_reason)) FILTER (WHERE finish_reason IS NOT NULL) AS finish_reason,
        coalesce(max(prefill_node), max(CASE WHEN role = 'prefill' THEN node END)) AS prefill_node,
        coalesce(max(decode_node), max(CASE WHEN role = 'decode' THEN node END)) AS decode_node,
        coalesce(max(prefill_tokens), max(CASE WHEN role = 'prefill' THEN prompt_tokens END)) AS prefill_tokens,
        max(CASE WHEN role = 'prefill' THEN outcome END) AS prefill_outcome,
        max(pd_room) AS bootstrap_room,
        -- the evidence: the first line of the first source among the records that gave the outcome
        max_by(source_id, (p_outcome, x_outcome, -source_id, -source_line)) AS source_id,
        max_by(source_line, (p_outcome, x_outcome, -source_id, -source_line)) AS source_line,
        max_by(source_path, (p_outcome, x_outcome, -source_id, -source_line)) AS source_path,
        count(*) AS n_records,
        coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN prompt_tokens END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN prompt_tokens END), false)
            OR coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN outcome END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN outcome END), false)
            OR coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN model_key END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN model_key END), false)
            OR coalesce(min(account_id) <> max(account_id), false) AS conflict,
        list_sort(list_distinct(list(source_id))) AS source_ids
    FROM request_members
    WHERE merged_id IS NOT NULL
    GROUP BY merged_id
)
SELECT g.request_id, g.ts, g.ts_end, g.ts_granularity_s, g.account_id, g.model, g.prompt_tokens,
       g.cached_tokens, g.completion_tokens, g.http_status, g.outcome, g.finish_reason,
       g.prefill_node, g.decode_node, g.prefill_tokens, g.bootstrap_room,
       s.format AS source_format, coalesce(g.source_path, s.label) AS source_file, g.source_line, g.source_id,
       g.n_records, g.conflict, g.prefill_outcome, g.source_ids,
       NULL::VARCHAR AS join_method, NULL::VARCHAR[] AS joined_ids   -- filled by case/evidence_join
FROM grouped AS g JOIN sources AS s USING (source_id);

CREATE OR REPLACE VIEW requests AS
SELECT r.request_id, r.ts, r.ts_end, CASE WHEN coalesce(r.ts_granularity_s, 0) = 0 THEN 0 ELSE r.ts_granularity_s END AS ts_granularity_s,
       r.account_id, r.model, r.prompt_tokens, r.cached_tokens, r.completion_tokens, r.http_status, r.outcome,
       r.finish_reason,
       coalesce(r.prefill_node, CASE WHEN r.role = 'prefill' THEN r.node END) AS prefill_node,
       coalesce(r.decode_node, CASE WHEN r.role = 'decode' THEN r.node END) AS decode_node,
       coalesce(r.prefill_tokens, CASE WHEN r.role = 'prefill' THEN r.prompt_tokens END) AS prefill_tokens,
       r.bootstrap_room,
       s.format AS source_format, coalesce(r.source_path, s.label) AS source_file, r.source_line, r.source_id,
       1::BIGINT AS n_records, false AS conflict, CASE WHEN r.role = 'prefill' THEN r.outcome END AS prefill_outcome,
       [r.source_id] AS source_ids, NULL::VARCHAR AS join_method, NULL::VARCHAR[] AS joined_ids
FROM records_pd AS r JOIN sources AS s USING (source_id)
WHERE r.pd_room IS NULL AND r.request_id IS NOT NULL
  AND hash(r.request_id) NOT IN (SELECT m.k FROM request_multi AS m)   -- k is never NULL; NOT EXISTS here cost 10x (a
                                                                    -- correlated subquery: a duplicate-eliminating join)
UNION ALL
SELECT * FROM requests_grouped;
