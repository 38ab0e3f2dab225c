-- requests_merged: one row per request as served, merging the records several sources (or lines) hold of it.
-- Params: $any_room (does any record have a bootstrap_room: without one, nothing is adopted or merged by room)
--
-- 1. PD copies: prefill and decode log one request under different rids and the same bootstrap_room;
--    they are one request, and the decode side's outcome wins (the client's stream came from decode).
--    The group's id is the decode side's rid (ties: the greatest rid, so no line order decides).
--    A record without a room joins the room of a record with its request id (an SGLang scheduler's
--    rejection line names only the rid): `request_adopted`, and `pd_room` below is the room either way.
--    A room is a random number per request, but rooms repeat (across days, across decode nodes), and a join
--    key never merges what the rids say differ: a room whose prefill side or whose other side holds more
--    than one rid is *reused* (`room_keys`). Each non-prefill rid in it is then a request of its own, and
--    each prefill rid joins the non-prefill rid nearest to it in time (each of those keeps the nearest
--    prefill rid that chose it; a prefill rid left over, or one equally near two of them, is a request of
--    its own: a tie is never broken by the rids' names). `pd_key` is the group:
--    the room, or room/rid in a reused room. Requests of a reused room are conflicts (listed, with the room).
-- 2. The same request seen by several sources (a gateway log and the engine log), or logged twice,
--    shares a request id: one request. Each field comes from the most authoritative record that has it:
--      outcome, http_status, model: gateway (what the client got) > decode > mixed > prefill
--      prompt_tokens:        decode > mixed > gateway > prefill (a prefill placeholder logs 1 token)
--      http_status:          the status of the record the outcome comes from (an abort on decode has
--                            none, whatever prefill said)
--      account_id:           gateway > anything else
--    and, between records of the same authority that disagree, the MOST EXPOSING reading: the largest
--    prompt length, a served outcome before failed > aborted > rejected, one of the incident's models
--    (the `incident` table) before another; then the greatest value. The account is the one of the most
--    exposing record (an incident model, then served, then the longest prompt), never the one whose name
--    sorts first: renaming an account cannot change who is notified. Records exposing alike that name
--    different accounts are a tie: no account is chosen (account_id NULL: unknown) and every tied account is
--    a candidate (conflicts.account_candidates, the view account_candidates: each to be notified as possibly
--    affected). Likewise the prefill and decode node: the node of the record the outcome comes from, and
--    none where records of equal authority name different nodes (a conflict either way).
--    The answer depends on the records a request has, never on the order of the lines or files that hold
--    them (an exposure cannot vanish because a log was reversed or a page re-fetched).
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

CREATE OR REPLACE VIEW records_roomed AS     -- records with the PD room they belong to (own or adopted)
SELECT r.*, coalesce(r.bootstrap_room, a.room) AS pd_room
FROM records AS r LEFT JOIN request_adopted AS a ON r.bootstrap_room IS NULL AND a.request_id = r.request_id;

-- the rids of each room, per side (prefill / any other role), with the earliest time each gives
CREATE OR REPLACE TABLE room_rids AS
SELECT r.pd_room, r.request_id, coalesce(r.role = 'prefill', false) AS is_prefill, min(r.ts) AS t
FROM records_roomed AS r
WHERE $any_room AND r.pd_room IS NOT NULL AND r.request_id IS NOT NULL
GROUP BY ALL;

-- every rid of a reused room, with its group key (see 1. above)
CREATE OR REPLACE TABLE room_keys AS
WITH reused AS (
    SELECT DISTINCT pd_room FROM room_rids GROUP BY pd_room, is_prefill HAVING count(*) > 1
),
s AS (SELECT x.* FROM room_rids AS x WHERE x.pd_room IN (SELECT pd_room FROM reused)),
gaps AS (
    SELECT p.pd_room, p.request_id AS p_rid, d.request_id AS d_rid, abs(epoch(d.t) - epoch(p.t)) AS gap
    FROM s AS p JOIN s AS d ON d.pd_room = p.pd_room AND p.is_prefill AND NOT d.is_prefill
    WHERE p.t IS NOT NULL AND d.t IS NOT NULL
),
-- the nearest partner on each side, and none when two are equally near (a name would decide: a tie)
nearest AS (SELECT pd_room, p_rid, min(gap) AS gap,
                   CASE WHEN arg_min(d_rid, (gap, d_rid)) = max_by(d_rid, (-gap, d_rid)) THEN arg_min(d_rid, (gap, d_rid)) END AS d_rid
            FROM gaps GROUP BY ALL),
pairs AS (SELECT pd_room, d_rid,
                 CASE WHEN arg_min(p_rid, (gap, p_rid)) = max_by(p_rid, (-gap, p_rid)) THEN arg_min(p_rid, (gap, p_rid)) END AS p_rid
          FROM nearest WHERE d_rid IS NOT NULL GROUP BY ALL)
SELECT s.pd_room, s.request_id, s.is_prefill,
       s.pd_room || '/' || CASE WHEN s.is_prefill THEN coalesce(p.d_rid, s.request_id) ELSE s.request_id END AS pd_key
FROM s LEFT JOIN pairs AS p ON s.is_prefill AND p.pd_room = s.pd_room AND p.p_rid = s.request_id;

CREATE OR REPLACE VIEW records_pd AS          -- records with their room and their group in it (pd_key)
SELECT r.*, coalesce(k.pd_key, r.pd_room) AS pd_key, k.pd_key IS NOT NULL AS room_reused
FROM records_roomed AS r
LEFT JOIN room_keys AS k ON r.pd_room IS NOT NULL AND k.pd_room = r.pd_room AND k.request_id = r.request_id
     AND k.is_prefill = coalesce(r.role = 'prefill', false);

CREATE OR REPLACE TABLE request_multi AS      -- hash(merged id) of each request that needs merging
SELECT k FROM (
    SELECT hash(r.request_id) AS k, false AS roomed FROM records_pd AS r
    WHERE r.pd_room IS NULL AND r.request_id IS NOT NULL
    UNION ALL
    SELECT hash(coalesce(max_by(r.request_id, (CASE r.role WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END, r.request_id))
                             OVER (PARTITION BY r.pd_key), r.request_id)), true
    FROM records_pd AS r WHERE $any_room AND r.pd_room IS NOT NULL
)
GROUP BY k HAVING count(*) > 1 OR bool_or(roomed);

-- every record that is merged, with the id of its request and its ranks (read again by case/conflicts)
CREATE OR REPLACE VIEW request_members AS
WITH incident_models AS (
    SELECT unnest(coalesce(TRY_CAST(TRY(json(value)) AS VARCHAR[]), [])) AS model FROM incident WHERE key IN ('models', 'model_names')
),
r AS (
    SELECT r.*,
        CASE r.role WHEN 'gateway' THEN 4 WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END AS p_outcome,
        CASE r.role WHEN 'decode' THEN 4 WHEN 'mixed' THEN 3 WHEN 'gateway' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END AS p_tokens,
        CASE r.role WHEN 'gateway' THEN 4 ELSE 1 END AS p_account,
        CASE r.outcome WHEN 'served' THEN 4 WHEN 'failed' THEN 3 WHEN 'aborted' THEN 2 WHEN 'rejected' THEN 1 ELSE 0 END AS x_outcome,
        coalesce(r.model IN (SELECT model FROM incident_models) OR r.model_other IN (SELECT model FROM incident_models), false) AS x_model,
        CASE WHEN r.model IN (SELECT model FROM incident_models) OR r.model_other IN (SELECT model FROM incident_models)
             THEN '' ELSE r.model END AS model_key  -- aliases are one model
    FROM records_pd AS r
)
SELECT r.*,
    coalesce(max_by(r.request_id, (CASE r.role WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END, r.request_id))
                 OVER (PARTITION BY r.pd_key), r.request_id) AS merged_id
FROM r WHERE r.pd_room IS NOT NULL
UNION ALL
SELECT r.*, r.request_id AS merged_id FROM r
WHERE r.pd_room IS NULL AND hash(r.request_id) IN (SELECT k FROM request_multi);

CREATE OR REPLACE TABLE requests_grouped AS
WITH grouped AS (
    SELECT
        merged_id AS request_id,
        coalesce(min(ts) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0), min(ts)) AS ts,
        arg_min(ts_extra_ns, (ts, coalesce(ts_extra_ns, 0))) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0) AS ts_extra_ns,
        max(ts_end) AS ts_end,
        CASE WHEN count(*) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0) > 0 THEN 0
             ELSE max(ts_granularity_s) END AS ts_granularity_s,
        -- the account of the most exposing record; the name takes part only to find a tie: the top account with
        -- the greatest and with the least name differ when records exposing alike name different accounts
        max_by(account_id, (p_account, x_model, x_outcome, coalesce(prompt_tokens, -1), account_id))
            FILTER (WHERE account_id IS NOT NULL) AS account_hi,
        min_by(account_id, (-p_account, NOT x_model, -x_outcome, -coalesce(prompt_tokens, -1), account_id))
            FILTER (WHERE account_id IS NOT NULL) AS account_lo,
        max_by(model, (p_outcome, x_model, model)) FILTER (WHERE model IS NOT NULL) AS model,
        max_by(model_other, (p_outcome, x_model, model_other)) FILTER (WHERE model_other IS NOT NULL) AS model_other0,
        min(model) AS model_lo, max(model) AS model_hi,
        max_by(prompt_tokens, (p_tokens, prompt_tokens)) FILTER (WHERE prompt_tokens IS NOT NULL) AS prompt_tokens,
        -- a body's count that may add up several prompts (prompt_parts) stands only where no engine record
        -- gives the prompts one by one (vLLM's <id>-<i> lines: the largest of them is the request's)
        max_by(p_tokens, (p_tokens, prompt_tokens)) FILTER (WHERE prompt_tokens IS NOT NULL) AS p_tokens_won,
        max(prompt_parts) FILTER (WHERE role = 'gateway') AS gateway_parts,
        count(DISTINCT prompt_index) AS prompts,
        max_by(cached_tokens, (p_tokens, cached_tokens)) FILTER (WHERE cached_tokens IS NOT NULL) AS cached_tokens,
        max_by(completion_tokens, (p_outcome, x_outcome, completion_tokens)) FILTER (WHERE completion_tokens IS NOT NULL) AS completion_tokens,
        arg_max_null(http_status, CASE WHEN outcome IS NOT NULL OR http_status IS NOT NULL
                                       THEN (p_outcome, x_outcome, coalesce(http_status, -1)) END) AS http_status,
        max_by(outcome, (p_outcome, x_outcome)) FILTER (WHERE outcome IS NOT NULL) AS outcome,
        max_by(finish_reason, (p_outcome, x_outcome, finish_reason)) FILTER (WHERE finish_reason IS NOT NULL) AS finish_reason,
        -- the node of the record the outcome comes from; records of equal authority naming different nodes: a tie
        max_by(pn, (p_outcome, x_outcome, pn)) FILTER (WHERE pn IS NOT NULL) AS prefill_hi,
        min_by(pn, (-p_outcome, -x_outcome, pn)) FILTER (WHERE pn IS NOT NULL) AS prefill_lo,
        max_by(dn, (p_outcome, x_outcome, dn)) FILTER (WHERE dn IS NOT NULL) AS decode_hi,
        min_by(dn, (-p_outcome, -x_outcome, dn)) FILTER (WHERE dn IS NOT NULL) AS decode_lo,
        coalesce(max(prefill_tokens), max(CASE WHEN role = 'prefill' THEN prompt_tokens END)) AS prefill_tokens,
        max(CASE WHEN role = 'prefill' THEN outcome END) AS prefill_outcome,
        max(pd_room) AS bootstrap_room,
        -- the evidence: the first line of the first source among the records that gave the outcome
        max_by(source_id, (p_outcome, x_outcome, -source_id, -source_line)) AS source_id,
        max_by(source_line, (p_outcome, x_outcome, -source_id, -source_line)) AS source_line,
        max_by(source_path, (p_outcome, x_outcome, -source_id, -source_line)) AS source_path,
        count(*) AS n_records,
        -- prompt lengths disagree within one prompt (the prompts of a several-prompt call differ by right; a
        -- body's sum over several prompts is no prompt's length)
        coalesce(count(DISTINCT (coalesce(prompt_index, 0), prompt_tokens)) FILTER (WHERE role IS DISTINCT FROM 'prefill'
                       AND prompt_tokens IS NOT NULL AND prompt_parts IS NULL)
                 > count(DISTINCT coalesce(prompt_index, 0)) FILTER (WHERE role IS DISTINCT FROM 'prefill'
                       AND prompt_tokens IS NOT NULL AND prompt_parts IS NULL), false)
            OR coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN outcome END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN outcome END), false)
            OR coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN model_key END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN model_key END), false)
            OR coalesce(min(account_id) <> max(account_id), false)
            OR coalesce(min(pn) <> max(pn), false) OR coalesce(min(dn) <> max(dn), false)
            OR bool_or(room_reused) AS conflict,
        list_sort(list_distinct(list(source_id))) AS source_ids
    FROM (SELECT m.*, coalesce(m.prefill_node, CASE WHEN m.role = 'prefill' THEN m.node END) AS pn,
                 coalesce(m.decode_node, CASE WHEN m.role = 'decode' THEN m.node END) AS dn
          FROM request_members AS m) AS request_members
    WHERE merged_id IS NOT NULL
    GROUP BY merged_id
)
SELECT g.request_id, g.ts, g.ts_extra_ns, g.ts_end, g.ts_granularity_s,
       CASE WHEN g.account_hi = g.account_lo THEN g.account_hi END AS account_id,   -- a tie names none
       g.model,
       -- the other name: a record's own second name, else another record's different name for it
       coalesce(g.model_other0, CASE WHEN g.model_lo <> g.model THEN g.model_lo WHEN g.model_hi <> g.model THEN g.model_hi END)
           AS model_other,
       g.prompt_tokens,
       g.cached_tokens, g.completion_tokens, g.http_status, g.outcome, g.finish_reason,
       CASE WHEN g.prefill_hi = g.prefill_lo THEN g.prefill_hi END AS prefill_node,
       CASE WHEN g.decode_hi = g.decode_lo THEN g.decode_hi END AS decode_node,
       g.prefill_tokens, g.bootstrap_room,
       s.format AS source_format, coalesce(g.source_path, s.label) AS source_file, g.source_line, g.source_id,
       g.n_records, g.conflict, g.prefill_outcome, g.source_ids,
       NULL::VARCHAR AS join_method, NULL::VARCHAR[] AS joined_ids,  -- filled by case/evidence_join
       CASE WHEN g.p_tokens_won = 2 THEN g.gateway_parts END AS prompt_parts, nullif(g.prompts, 0) AS prompts
FROM grouped AS g JOIN sources AS s USING (source_id);

CREATE OR REPLACE VIEW requests AS
SELECT r.request_id, r.ts, r.ts_extra_ns, r.ts_end, CASE WHEN coalesce(r.ts_granularity_s, 0) = 0 THEN 0 ELSE r.ts_granularity_s END AS ts_granularity_s,
       r.account_id, r.model, r.model_other, r.prompt_tokens, r.cached_tokens, r.completion_tokens, r.http_status, r.outcome,
       r.finish_reason,
       coalesce(r.prefill_node, CASE WHEN r.role = 'prefill' THEN r.node END) AS prefill_node,
       coalesce(r.decode_node, CASE WHEN r.role = 'decode' THEN r.node END) AS decode_node,
       coalesce(r.prefill_tokens, CASE WHEN r.role = 'prefill' THEN r.prompt_tokens END) AS prefill_tokens,
       r.bootstrap_room,
       s.format AS source_format, coalesce(r.source_path, s.label) AS source_file, r.source_line, r.source_id,
       1::BIGINT AS n_records, false AS conflict, CASE WHEN r.role = 'prefill' THEN r.outcome END AS prefill_outcome,
       [r.source_id] AS source_ids, NULL::VARCHAR AS join_method, NULL::VARCHAR[] AS joined_ids,
       r.prompt_parts, CASE WHEN r.prompt_index IS NOT NULL THEN 1 END AS prompts
FROM records_pd AS r JOIN sources AS s USING (source_id)
WHERE r.pd_room IS NULL AND r.request_id IS NOT NULL
  AND hash(r.request_id) NOT IN (SELECT m.k FROM request_multi AS m)   -- k is never NULL; NOT EXISTS here cost 10x (a
                                                                    -- correlated subquery: a duplicate-eliminating join)
UNION ALL
SELECT * FROM requests_grouped;
