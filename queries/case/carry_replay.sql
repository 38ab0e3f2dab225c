-- carry_replay: which replayed responses of the previous state of a case (attached as `prior`) still hold
-- for the requests of this triage, and why the others do not.
-- Params: $configs_changed (node_configs differ between the two states: compared by case/carry)
-- Inputs: __prior__ (the attached previous case database)
--
-- A replay re-runs a response on the history of its decode node: every request the logs show on that node up
-- to the response's start (queries/replay/node_history.sql), under the incident's facts and the node's
-- start-ups (queries/replay/incident_facts.sql, node_configs.sql). Its result still holds when all of that
-- is unchanged: the response is still affected with the same record (times, account, lengths, nodes), the
-- node's history up to it is the same (a sum of the row hashes of exactly the columns node_history reads,
-- and their count), and the incident table (but for the spec's path) and node_configs are the same sets of rows. Run after triage has
-- written `affected` and `requests`; case/carry copies the rows that hold (why_not IS NULL).
CREATE OR REPLACE TEMP TABLE replay_carry AS
WITH targets AS (
    SELECT DISTINCT request_id FROM __prior__.replay_results
),
was AS (
    SELECT a.request_id, a.ts, a.ts_end, a.account_id, a.prompt_tokens, a.completion_tokens, a.prefill_node, a.decode_node
    FROM __prior__.affected AS a JOIN targets USING (request_id)
),
now AS (
    SELECT a.request_id, a.ts, a.ts_end, a.account_id, a.prompt_tokens, a.completion_tokens, a.prefill_node, a.decode_node
    FROM affected AS a JOIN targets USING (request_id)
),
history AS (       -- both states' requests on the targets' decode nodes, each target's prefix signature
    SELECT h.side, h.request_id, h.decode_node, h.sig, h.n FROM (
        SELECT r.side, r.request_id, r.decode_node,
               sum(hash(r.request_id, r.account_id, r.ts, r.ts_end, r.prompt_tokens, r.completion_tokens, r.prefill_node,
                        r.outcome, r.http_status)::HUGEINT) OVER w AS sig,
               count(*) OVER w AS n
        FROM (SELECT 'was' AS side, request_id, account_id, ts, ts_end, prompt_tokens, completion_tokens, prefill_node,
                     outcome, http_status, decode_node
              FROM __prior__.requests WHERE decode_node IN (SELECT decode_node FROM was)
              UNION ALL
              SELECT 'now', request_id, account_id, ts, ts_end, prompt_tokens, completion_tokens, prefill_node,
                     outcome, http_status, decode_node
              FROM requests WHERE decode_node IN (SELECT decode_node FROM now)) AS r
        WINDOW w AS (PARTITION BY r.side, r.decode_node ORDER BY r.ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    ) AS h JOIN targets USING (request_id)
),
history_was AS (
    SELECT h.request_id, h.sig, h.n FROM history AS h JOIN was AS t USING (request_id)
    WHERE h.side = 'was' AND h.decode_node IS NOT DISTINCT FROM t.decode_node
),
history_now AS (
    SELECT h.request_id, h.sig, h.n FROM history AS h JOIN now AS t USING (request_id)
    WHERE h.side = 'now' AND h.decode_node IS NOT DISTINCT FROM t.decode_node
),
facts AS (   -- where the spec file lies is no fact the replay reads
    SELECT count(*) AS changed FROM (
        (SELECT * FROM __prior__.incident WHERE key <> 'spec_path' EXCEPT SELECT * FROM incident WHERE key <> 'spec_path')
        UNION ALL
        (SELECT * FROM incident WHERE key <> 'spec_path' EXCEPT SELECT * FROM __prior__.incident WHERE key <> 'spec_path'))
)
SELECT t.request_id,
    CASE WHEN (SELECT changed FROM facts) > 0 THEN 'the incident spec changed (the facts the replay read)'
         WHEN $configs_changed THEN 'the node start-ups (node_configs) changed'
         WHEN n.request_id IS NULL THEN 'no longer an affected response'
         WHEN w.request_id IS NULL THEN 'not in the previous affected table'
         WHEN (w.ts, w.ts_end, w.account_id, w.prompt_tokens, w.completion_tokens, w.prefill_node, w.decode_node)
              IS DISTINCT FROM (n.ts, n.ts_end, n.account_id, n.prompt_tokens, n.completion_tokens, n.prefill_node, n.decode_node)
            THEN 'its record changed (time, account, lengths or nodes)'
         WHEN (hw.sig, hw.n) IS DISTINCT FROM (hn.sig, hn.n)
            THEN 'the history of its decode node up to it changed (requests the replay rebuilt)'
    END AS why_not
FROM targets AS t
LEFT JOIN was AS w USING (request_id)
LEFT JOIN now AS n USING (request_id)
LEFT JOIN history_was AS hw USING (request_id)
LEFT JOIN history_now AS hn USING (request_id);
