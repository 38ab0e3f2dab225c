-- vllm: the prompts and chat responses a vLLM API-server log holds, from RequestLogger's own lines.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- Line forms (toolkit/rules/vllm.toml; the prefix as queries/adapters/vllm.sql reads it):
--   Request <id> details: prompt: %r, prompt_token_ids: ...         DEBUG, 0.11.1+ (prompt None: token ids only)
--   Received request <id>: prompt: %r, params: ...                   INFO, up to 0.11.0
--   Generated response <id>[ (streaming complete)]: output: %r, finish_reason: ...   --enable-log-outputs
--     (0.32.0 logs it for chat completions: one line per choice, all under the request's id; a stream's
--     complete text once; `(streaming delta)` lines repeat parts of it and are skipped)
-- vLLM cuts prompt and output to --max-log-len characters when that is set: the logged text is then a prefix.
-- Ids as the vllm adapter reads them: `cmpl-X-<i>` is prompt i of request cmpl-X; chat ids stand as they are.
-- /tokenize and other non-generation requests (tokenize-, detokenize-, embd-, pool-, score-, classify-,
-- rerank-) are skipped, as are all other lines.
WITH p AS (
    SELECT i.source_id, i.line_no, i.problem,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?(?:INFO|WARNING|DEBUG|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)? (?:\[[^\]]*\]|\S+\]) ?(.*)$', 1) AS msg
    FROM __input__ AS i
),
e AS (
    SELECT p.*,
        regexp_extract(p.msg, '^Request (\S+) details: prompt: (''(?:[^''\\]|\\.)*''|"(?:[^"\\]|\\.)*"|None), prompt_token_ids: ', ['rid', 'lit']) AS d,
        regexp_extract(p.msg, '^Received request (\S+?): prompt: (''(?:[^''\\]|\\.)*''|"(?:[^"\\]|\\.)*"|None), params: ', ['rid', 'lit']) AS r,
        regexp_extract(p.msg, '^Generated response (\S+?)( \(streaming (?:delta|complete)\))?: output: (''(?:[^''\\]|\\.)*''|"(?:[^"\\]|\\.)*"|None), finish_reason: ', ['rid', 'stream', 'lit']) AS g
    FROM p
),
k AS (
    SELECT e.*,
        CASE WHEN e.d.rid <> '' THEN 'prompt' WHEN e.r.rid <> '' THEN 'prompt' WHEN e.g.rid <> '' THEN 'response' END AS part,
        coalesce(nullif(e.d.rid, ''), nullif(e.r.rid, ''), nullif(e.g.rid, '')) AS rid,
        coalesce(nullif(e.d.lit, ''), nullif(e.r.lit, ''), nullif(e.g.lit, '')) AS lit
    FROM e
)
SELECT k.source_id, k.line_no,
    CASE WHEN k.problem IS NOT NULL THEN 'bad: ' || k.problem
         WHEN k.part IS NULL THEN 'skip: not a prompt or output line'
         WHEN regexp_matches(k.rid, '^(?:tokenize|detokenize|embd|pool|pooling|score|classify|rerank)-')
              THEN 'skip: not a generation request'
         WHEN k.g.stream = ' (streaming delta)' THEN 'skip: streaming delta (the complete text is logged apart)' END AS status,
    CASE WHEN regexp_matches(k.rid, '^cmpl-.+-[0-9]+$') THEN regexp_extract(k.rid, '^(cmpl-.+)-[0-9]+$', 1) ELSE k.rid END AS request_id,
    CASE WHEN k.lit IS NULL OR k.lit = 'None' THEN []
         ELSE [{'part': k.part,
                'choice': CASE WHEN k.part = 'prompt' AND regexp_matches(k.rid, '^cmpl-.+-[0-9]+$')
                               THEN TRY_CAST(regexp_extract(k.rid, '-([0-9]+)$', 1) AS INTEGER) END,
                'text': confirm_pyrepr(k.lit), 'done': true}] END AS pieces
FROM k;
