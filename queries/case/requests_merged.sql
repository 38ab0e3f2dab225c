-- requests_merged: one row per request as served, merging the records several sources hold of it.
-- Params: none
--
-- 1. PD copies: prefill and decode log one request under different rids and the same bootstrap_room;
--    they are one request, and the decode side's outcome wins (the client's stream came from decode).
--    A record without a room joins the room of a record with its request id (an SGLang scheduler's
--    rejection line names only the rid).
-- 2. The same request seen by several sources (a gateway log and the engine log) shares a request id:
--    one request. Each field comes from the most authoritative record that has it:
--      outcome, http_status: gateway (what the client got) > decode > mixed > prefill
--      prompt_tokens:        decode > mixed > gateway > prefill (a prefill placeholder logs 1 token); among
--                            equally authoritative records the larger (an engine's rejection line states the
--                            real length, the rejected request's own Finish line the 1-token stub)
--      account_id:           gateway > anything else
--    ts is the earliest start any record gives that knows its time exactly (ts_granularity_s 0): a
--    record known only to the hour (metrics export) widens nothing when an exact one exists; if all are
--    hour-granular, the earliest lower bound with the widest granularity. Disagreeing prompt_tokens or outcomes (prefill
--    excepted: a prefill-side abort next to a served decode is the incident's signature, kept in
--    prefill_outcome) set conflict = true; nothing is dropped.
CREATE OR REPLACE TABLE requests AS
WITH r0 AS (
    SELECT r.*,
        CASE r.role WHEN 'gateway' THEN 4 WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END AS p_outcome,
        CASE r.role WHEN 'decode' THEN 4 WHEN 'mixed' THEN 3 WHEN 'gateway' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END AS p_tokens,
        CASE r.role WHEN 'gateway' THEN 4 ELSE 1 END AS p_account
    FROM records AS r
),
-- a record without a room (an engine's rejection line, a gateway record) that shares its request id with a
-- record logged with a room belongs to that room's request (the semi-join keeps the build side small)
adopted AS (
    SELECT r0.request_id, min(r0.bootstrap_room) AS room
    FROM r0
    WHERE r0.bootstrap_room IS NOT NULL
      AND r0.request_id IN (SELECT request_id FROM r0 WHERE bootstrap_room IS NULL)
    GROUP BY r0.request_id
),
r AS (
    SELECT r0.*, coalesce(r0.bootstrap_room, a.room) AS pd_room
    FROM r0 LEFT JOIN adopted AS a ON r0.bootstrap_room IS NULL AND a.request_id = r0.request_id
),
-- stage 1: PD pairs by bootstrap_room; the group's id is the decode side's rid
rooms AS (
    SELECT r.*,
        coalesce(max_by(r.request_id, CASE r.role WHEN 'decode' THEN 3 WHEN 'mixed' THEN 2 WHEN 'prefill' THEN 0 ELSE 1 END)
                     OVER (PARTITION BY r.pd_room), r.request_id) AS merged_id
    FROM r WHERE r.pd_room IS NOT NULL
    UNION ALL
    SELECT r.*, r.request_id AS merged_id FROM r WHERE r.pd_room IS NULL
),
grouped AS (
    SELECT
        merged_id AS request_id,
        coalesce(min(ts) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0), min(ts)) AS ts,
        max(ts_end) AS ts_end,
        CASE WHEN count(*) FILTER (WHERE coalesce(ts_granularity_s, 0) = 0) > 0 THEN 0
             ELSE max(ts_granularity_s) END AS ts_granularity_s,
        max_by(account_id, CASE WHEN account_id IS NOT NULL THEN p_account END) AS account_id,
        max_by(model, CASE WHEN model IS NOT NULL THEN p_outcome END) AS model,
        max_by(prompt_tokens, CASE WHEN prompt_tokens IS NOT NULL THEN p_tokens * 1000000000000 + prompt_tokens END) AS prompt_tokens,
        max_by(cached_tokens, CASE WHEN cached_tokens IS NOT NULL THEN p_tokens END) AS cached_tokens,
        max_by(completion_tokens, CASE WHEN completion_tokens IS NOT NULL THEN p_outcome END) AS completion_tokens,
        -- the status of the record the outcome comes from (an abort on decode has none, whatever prefill said)
        arg_max_null(http_status, CASE WHEN outcome IS NOT NULL OR http_status IS NOT NULL THEN p_outcome END) AS http_status,
        max_by(outcome, CASE WHEN outcome IS NOT NULL THEN p_outcome END) AS outcome,
        max_by(finish_reason, CASE WHEN finish_reason IS NOT NULL THEN p_outcome END) AS finish_reason,
        coalesce(max(prefill_node), max(CASE WHEN role = 'prefill' THEN node END)) AS prefill_node,
        coalesce(max(decode_node), max(CASE WHEN role = 'decode' THEN node END)) AS decode_node,
        coalesce(max(prefill_tokens), max(CASE WHEN role = 'prefill' THEN prompt_tokens END)) AS prefill_tokens,
        max(CASE WHEN role = 'prefill' THEN outcome END) AS prefill_outcome,
        max(pd_room) AS bootstrap_room,
        max_by(source_id, p_outcome * 1000000000000 - source_line) AS source_id,
        max_by(source_line, p_outcome * 1000000000000 - source_line) AS source_line,
        max_by(source_path, p_outcome * 1000000000000 - source_line) AS source_path,
        count(*) AS n_records,
        coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN prompt_tokens END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN prompt_tokens END), false)
            OR coalesce(min(CASE WHEN role IS DISTINCT FROM 'prefill' THEN outcome END)
                 <> max(CASE WHEN role IS DISTINCT FROM 'prefill' THEN outcome END), false) AS conflict,
        list_sort(list_distinct(list(source_id))) AS source_ids
    FROM rooms
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
