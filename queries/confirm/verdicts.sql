-- verdicts: the case tables `confirmation_sources` (each source request whose text an affected response shares
-- beyond the threshold) and `confirmations` (one verdict per affected or possibly affected response).
-- Params: $threshold, $k, $fffd_min, $fffd_share, $symbol_share, $repeat_kept, $repeat_share, $script_letters, $script_share
--
-- confirmation_sources: one row per (response, source request) scoring at least $threshold; `rank` 1 is the best
-- score (ties share it). `overlap` is the share of the response's fingerprints matched.
-- confirmations.verdict:
--   confirmed foreign content           a source scores at least $threshold
--   corruption without foreign content  no source does, and a detector fires on the response:
--       replacement  at least $fffd_min U+FFFD, and at least $fffd_share of its characters
--       noise        a control character, or symbols (neither letter, digit nor space) are at least
--                    $symbol_share of at least 16 characters
--       repetition   at least $repeat_kept winnowed windows, of which at most $repeat_share are distinct
--       script shift at least $script_letters letters, mostly in another script than its own prompt's (which
--                    has as many), or no script holding $script_share of them
--   not confirmed                       neither: no text of another tenant matched. Not proof of absence:
--                                       `candidates` / `candidates_with_text` say what could be compared
--   cannot decide                       the sources hold no text of the response, or it names no tenant
CREATE OR REPLACE TABLE confirmation_sources AS
WITH best_doc AS (   -- a response with several texts (choices, or two sources of one text): its best one
    SELECT p.*, row_number() OVER (PARTITION BY p.treq, p.sreq ORDER BY p.score DESC, p.matched DESC, p.tdoc) AS pick
    FROM confirm_pair_scores AS p
)
SELECT b.treq AS request_id, b.sreq AS source_request_id, b.stenant AS source_tenant, b.source_parts,
       b.source_ts, b.matched AS matched_fingerprints, round(b.score, 6) AS score,
       round(b.matched / greatest(d.fingerprints, 1), 6) AS overlap, b.matched_bytes,
       b.first_pos AS response_first_offset, b.last_pos + $k AS response_last_offset,
       b.source_first_pos AS source_first_offset, b.source_last_pos + $k AS source_last_offset,
       CASE WHEN b.instance_unknown THEN 'unknown' ELSE 'same' END AS instance,
       dense_rank() OVER (PARTITION BY b.treq ORDER BY round(b.score, 6) DESC) AS rank
FROM best_doc AS b JOIN confirm_docs AS d ON d.doc_id = b.tdoc
WHERE b.pick = 1 AND b.score >= $threshold
ORDER BY request_id, rank, source_request_id;

CREATE OR REPLACE TABLE confirmations AS
WITH targets AS (
    SELECT DISTINCT h.request_id, replace(h.category, '-', ' ') AS triage_verdict
    FROM triage_hits AS h WHERE h.category IN ('affected', 'possibly-affected')
),
resp AS (
    SELECT d.request_id, count(*) AS texts, sum(d.chars) AS chars, max(d.norm_bytes) AS norm_bytes,
        bool_or(d.replacement_chars >= $fffd_min AND d.replacement_chars >= $fffd_share * d.chars) AS replacement,
        bool_or(d.control_chars > 0 OR (d.chars >= 16 AND d.symbol_chars >= $symbol_share * d.chars)) AS noise,
        bool_or(CASE WHEN d.kept >= $repeat_kept THEN d.fingerprints <= $repeat_share * d.kept END) AS repetition,
        bool_or(CASE WHEN d.letters >= $script_letters THEN
                     d.script_share < $script_share OR (p.letters >= $script_letters AND p.script <> d.script) END) AS script_shift
    FROM confirm_docs AS d
    LEFT JOIN (SELECT request_id, arg_max(script, letters) AS script, max(letters) AS letters
               FROM confirm_docs WHERE part = 'prompt' GROUP BY request_id) AS p ON p.request_id = d.request_id
    WHERE d.part = 'response' AND d.request_id IN (SELECT request_id FROM targets)
    GROUP BY d.request_id
),
src AS (
    SELECT request_id, count(*) AS sources, list_sort(list_distinct(list(source_tenant))) AS source_tenants,
           list_sort(list(source_request_id) FILTER (WHERE rank = 1)) AS best_source_request_ids,
           max(score) AS best_score, max(overlap) FILTER (WHERE rank = 1) AS best_overlap,
           max(matched_bytes) FILTER (WHERE rank = 1) AS best_matched_bytes
    FROM confirmation_sources GROUP BY request_id
),
near AS (    -- the best score below the threshold, for a response that matched too little
    SELECT treq AS request_id, max(score) AS best_score FROM confirm_pair_scores GROUP BY treq
)
SELECT t.request_id, r.ts, r.account_id, coalesce(r.decode_node, r.prefill_node) AS instance, t.triage_verdict,
    CASE WHEN resp.request_id IS NULL OR r.account_id IS NULL THEN 'cannot decide'
         WHEN src.sources > 0 THEN 'confirmed foreign content'
         WHEN resp.replacement OR resp.noise OR resp.repetition OR resp.script_shift THEN 'corruption without foreign content'
         ELSE 'not confirmed' END AS verdict,
    CASE WHEN resp.request_id IS NULL THEN 'the sources hold no text of this response'
         WHEN r.account_id IS NULL THEN 'the response names no tenant: its own content cannot be told from another''s'
         WHEN src.sources > 0 THEN src.sources || ' source request(s) of ' || len(src.source_tenants) || ' other tenant(s)'
         WHEN resp.replacement OR resp.noise OR resp.repetition OR resp.script_shift
              THEN 'corruption detected; no text of another tenant matched (not proof of absence: '
                   || coalesce(c.candidates_with_text, 0) || ' of ' || coalesce(c.candidates, 0)
                   || ' candidate requests have text in the sources)'
         WHEN resp.norm_bytes < $k THEN 'the response is shorter than one ' || $k || '-byte window: too short to compare'
         ELSE 'no text of another tenant matched: not proof of absence (' || coalesce(c.candidates_with_text, 0) || ' of '
              || coalesce(c.candidates, 0) || ' candidate requests have text in the sources)' END AS reason,
    coalesce(src.sources, 0) AS sources, coalesce(src.source_tenants, []) AS source_tenants,
    coalesce(src.best_source_request_ids, []) AS best_source_request_ids,
    src.best_score, src.best_overlap, src.best_matched_bytes, near.best_score AS best_score_any,
    list_filter([CASE WHEN resp.replacement THEN 'replacement' END, CASE WHEN resp.noise THEN 'noise' END,
                 CASE WHEN resp.repetition THEN 'repetition' END, CASE WHEN resp.script_shift THEN 'script shift' END],
                lambda x: x IS NOT NULL) AS corruption,
    resp.replacement, resp.noise, resp.repetition, resp.script_shift,
    coalesce(resp.texts, 0) AS response_texts, resp.chars AS response_chars,
    c.candidates, c.candidates_with_text, c.any_instance
FROM targets AS t
JOIN requests AS r ON r.request_id = t.request_id
LEFT JOIN resp ON resp.request_id = t.request_id
LEFT JOIN src ON src.request_id = t.request_id
LEFT JOIN near ON near.request_id = t.request_id
LEFT JOIN confirm_coverage AS c ON c.request_id = t.request_id
ORDER BY r.ts, t.request_id;
