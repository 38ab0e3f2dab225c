-- matches: for each affected or possibly affected response, the earlier texts of other tenants whose salted
-- fingerprints it shares, with a score; an inverted-index join, never a comparison of every pair.
-- Params: $window_s, $any_instance, $max_df, $w, $k
--
-- Targets: triage_hits of category affected / possibly-affected (every mechanism's triage writes them).
-- A text belongs to the case's request of its id (`requests`): its time, tenant (account_id) and nodes; a
-- text whose request names no tenant is never a source (that tenant may be the response's own).
-- A fingerprint (window) of a target response counts towards a source when
--   * no prompt of the response's own tenant up to its start holds it (the model echoes what its tenant sent:
--     the response's own prompt, the system prompt its tenant uses, a document it pasted before);
--   * at most $max_df tenants hold it in texts other than the targets' responses: boilerplate shared by
--     design (system prompts, templates, a model's stock answers) is dropped, and the join stays bounded;
--   * the source is a text of another tenant's request that started before the response, on one of its
--     nodes (or on no known node: instance unknown; --instance any: any node), within $window_s seconds
--     before it (NULL: any time before). Per window, tenant, node and part the latest such text is the
--     source (the last writer); texts of one start time are ties, and every tied one is kept;
--     A target's response is never a source (what an affected response holds may be anyone's: two that
--     decoded the same stale page share it, and neither owns it), nor does it count as a holder;
--   * a prompt is preferred: a window some other tenant's prompt holds is that tenant's, and a response
--     (the previous answer returned for a new prompt) is the source only of windows no prompt explains.
-- Weight of a window: 1 / (tenants holding it outside the targets' responses): a window two other tenants
-- hold counts half for each. Score of (response, source request): the sum of the weights of
-- the response's distinct windows matched to it.
CREATE OR REPLACE TABLE confirm_meta AS
SELECT d.doc_id, d.request_id, d.part, r.ts, r.account_id AS tenant,
       list_distinct(list_filter([r.prefill_node, r.decode_node], lambda n: n IS NOT NULL)) AS nodes,
       coalesce(r.decode_node, r.prefill_node) AS instance,
       d.part = 'response' AND d.request_id IN (SELECT request_id FROM triage_hits
                                                WHERE category IN ('affected', 'possibly-affected')) AS is_target
FROM confirm_docs AS d JOIN requests AS r ON r.request_id = d.request_id;

CREATE OR REPLACE TEMP TABLE confirm_post AS
SELECT f.fp, f.pos, f.doc_id, m.request_id, m.part, m.ts, m.tenant, m.nodes, m.is_target
FROM confirm_fingerprints AS f JOIN confirm_meta AS m ON m.doc_id = f.doc_id
WHERE m.tenant IS NOT NULL;

-- who holds each window outside the targets' responses: an affected response is never a source (what it
-- holds may be anyone's: two responses that decoded the same stale page share it, and neither owns it)
CREATE OR REPLACE TEMP TABLE confirm_fp_tenants AS
SELECT fp, tenant, min(ts) FILTER (WHERE part = 'prompt') AS first_prompt_ts
FROM confirm_post WHERE NOT is_target GROUP BY fp, tenant;

CREATE OR REPLACE TEMP TABLE confirm_df AS
SELECT fp, count(*) AS df FROM confirm_fp_tenants GROUP BY fp;

CREATE OR REPLACE TEMP TABLE confirm_tfp AS
SELECT p.doc_id AS tdoc, p.request_id AS treq, p.tenant AS ttenant, p.ts AS tts, p.fp, p.pos, d.df,
       CASE WHEN $any_instance OR len(p.nodes) = 0 THEN ['*'] ELSE list_append(p.nodes, '?') END AS tkeys
FROM confirm_post AS p
JOIN confirm_df AS d ON d.fp = p.fp
LEFT JOIN confirm_fp_tenants AS own ON own.fp = p.fp AND own.tenant = p.tenant
WHERE p.is_target AND d.df <= $max_df
  AND (own.first_prompt_ts IS NULL OR own.first_prompt_ts > p.ts);

-- the postings of the fingerprints targets hold, under each node key a source can be found by
CREATE OR REPLACE TEMP TABLE confirm_spost AS
SELECT p.fp, p.tenant, p.part, k.skey, p.ts, p.doc_id, p.request_id, p.pos
FROM confirm_post AS p,
     unnest(list_append(CASE WHEN len(p.nodes) = 0 THEN ['?'] ELSE p.nodes END, '*')) AS k(skey)
WHERE NOT p.is_target AND p.fp IN (SELECT fp FROM confirm_tfp);

CREATE OR REPLACE TEMP TABLE confirm_cand AS
SELECT t.tdoc, t.treq, t.ttenant, t.tts, t.fp, t.pos, t.df, ft.tenant AS stenant, k.key.tkey, k.key.spart
FROM confirm_tfp AS t
JOIN confirm_fp_tenants AS ft ON ft.fp = t.fp AND ft.tenant <> t.ttenant,
     unnest(list_concat(list_transform(t.tkeys, lambda x: {'tkey': x, 'spart': 'prompt'}),
                        list_transform(t.tkeys, lambda x: {'tkey': x, 'spart': 'response'}))) AS k(key);

CREATE OR REPLACE TEMP TABLE confirm_latest AS
SELECT c.*, s.ts AS sts
FROM confirm_cand AS c
ASOF JOIN confirm_spost AS s
  ON s.fp = c.fp AND s.tenant = c.stenant AND s.skey = c.tkey AND s.part = c.spart AND s.ts < c.tts;

CREATE OR REPLACE TABLE confirm_matches AS
WITH found AS (
    SELECT l.tdoc, l.treq, l.ttenant, l.pos, l.df, 1.0 / greatest(l.df, 1) AS weight, l.stenant,
           s.request_id AS sreq, s.doc_id AS sdoc, s.part AS spart, s.pos AS spos, s.ts AS sts,
           (l.tkey IN ('*', '?')) AS instance_unknown
    FROM confirm_latest AS l
    JOIN confirm_spost AS s
      ON s.fp = l.fp AND s.tenant = l.stenant AND s.skey = l.tkey AND s.part = l.spart AND s.ts = l.sts
    WHERE $window_s IS NULL OR l.sts >= l.tts - to_microseconds(CAST($window_s * 1e6 AS BIGINT))
)
SELECT f.* EXCLUDE (by_prompt)
FROM (SELECT *, bool_or(spart = 'prompt') OVER (PARTITION BY tdoc, pos) AS by_prompt FROM found) AS f
WHERE f.spart = 'prompt' OR NOT f.by_prompt;

-- per response text and source request: its matched windows, merged into spans (a gap of more than w
-- windows starts a new one) for the bytes they cover
CREATE OR REPLACE TABLE confirm_pair_scores AS
WITH per_pos AS (
    SELECT tdoc, treq, ttenant, sreq, stenant, pos, any_value(weight) AS weight, bool_and(instance_unknown) AS iu,
           min(spos) AS spos, list_distinct(list(spart)) AS sparts, max(sts) AS sts
    FROM confirm_matches GROUP BY tdoc, treq, ttenant, sreq, stenant, pos
),
runs AS (
    SELECT p.*, sum(CASE WHEN p.pos - coalesce(p.prev, -1000000000) > $w THEN 1 ELSE 0 END)
               OVER (PARTITION BY p.tdoc, p.sreq ORDER BY p.pos ROWS UNBOUNDED PRECEDING) AS run
    FROM (SELECT *, lag(pos) OVER (PARTITION BY tdoc, sreq ORDER BY pos) AS prev FROM per_pos) AS p
),
spans AS (
    SELECT tdoc, sreq, run, max(pos) - min(pos) + $k AS bytes FROM runs GROUP BY tdoc, sreq, run
),
span_bytes AS (SELECT tdoc, sreq, sum(bytes) AS matched_bytes FROM spans GROUP BY tdoc, sreq),
agg AS (
    SELECT r.tdoc, any_value(r.treq) AS treq, any_value(r.ttenant) AS ttenant, r.sreq, any_value(r.stenant) AS stenant,
           count(*) AS matched, sum(r.weight) AS score, min(r.pos) AS first_pos, max(r.pos) AS last_pos,
           min(r.spos) AS source_first_pos, max(r.spos) AS source_last_pos, bool_and(r.iu) AS instance_unknown,
           list_sort(list_distinct(flatten(list(r.sparts)))) AS source_parts, max(r.sts) AS source_ts
    FROM runs AS r GROUP BY r.tdoc, r.sreq
)
SELECT a.*, b.matched_bytes FROM agg AS a JOIN span_bytes AS b ON b.tdoc = a.tdoc AND b.sreq = a.sreq;
