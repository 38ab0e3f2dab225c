-- openai_response: OpenAI-compatible response bodies saved one per line (JSONL) as request records.
-- Params: none
-- Inputs: __input__ (records: source_id, line_no, line, line_bytes, repaired, problem), __settings__ (one row per source_id: its settings)
--
-- chat.completion / text_completion bodies (and the last chat.completion.chunk of a stream, the one that
-- carries usage): id (the engine's request id: SGLang's rid, vLLM's chatcmpl-<request id>), created (Unix
-- *seconds*), model (the served name), choices[].finish_reason, usage.prompt_tokens (cached tokens
-- included), usage.completion_tokens, usage.prompt_tokens_details.cached_tokens. A body exists only
-- for a response the client received (HTTP 200): outcome served, or aborted for finish_reason abort.
-- Error bodies ({"object":"error", ... "code":400}) carry no id and no time: counted, not requests;
-- stream chunks without usage likewise.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND i.line_bytes <= s.max_line_bytes AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"id":"VARCHAR","object":"VARCHAR","created":"VARCHAR","model":"VARCHAR",
                  "choices":[{"finish_reason":"VARCHAR"}],"usage":{"prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "prompt_tokens_details":{"cached_tokens":"VARCHAR"}},"type":"VARCHAR","code":"VARCHAR",
                  "error":"JSON"}')) END AS j,
        s.max_line_bytes
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
fields AS (
    SELECT p.*,
        kvir_text(p.j.id) AS rid,
        kvir_parse_ts(p.j.created, NULL, 0) AS ts0,
        kvir_count(p.j.usage.prompt_tokens) AS n_prompt,
        kvir_count(p.j.usage.completion_tokens) AS n_completion,
        kvir_count(p.j.usage.prompt_tokens_details.cached_tokens) AS n_cached,
        kvir_text(p.j.choices[1].finish_reason) AS freason,
        p.j.object = 'error' OR (p.j.error IS NOT NULL AND p.j.id IS NULL) AS is_error,
        p.j.object = 'chat.completion.chunk' AND p.j.usage IS NULL AS is_chunk
    FROM parsed AS p
),
judged AS (
    SELECT f.*,
        CASE
            WHEN f.problem IS NOT NULL OR f.line_bytes > f.max_line_bytes THEN 'bad'
            WHEN f.j IS NULL AND trim(f.text) = '' THEN 'skip'
            WHEN f.j IS NULL THEN 'bad'
            WHEN f.is_error OR f.is_chunk THEN 'skip'
            WHEN f.rid IS NULL OR NOT kvir_in_range(f.ts0) OR kvir_text(f.j.model) IS NULL OR f.n_prompt IS NULL THEN 'bad'
            ELSE 'request' END AS kind,
        CASE
            WHEN f.problem IS NOT NULL THEN f.problem
            WHEN f.j IS NULL THEN kvir_json_problem(f.text, f.line_bytes, f.max_line_bytes)
            WHEN f.is_error THEN 'error body (no id, no time): ' || coalesce(left(coalesce(f.j.type, f.j.error ->> '$.type'), 40), '?')
                 || ' ' || coalesce(left(coalesce(f.j.code, f.j.error ->> '$.code'), 10), '')
            WHEN f.is_chunk THEN 'stream chunk without usage'
            WHEN f.rid IS NULL THEN 'missing field: id'
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_ts_problem(f.j.created, f.ts0, NULL, 0)
            WHEN kvir_text(f.j.model) IS NULL THEN 'missing field: model'
            WHEN f.j.usage.prompt_tokens IS NULL THEN 'missing field: usage.prompt_tokens'
            WHEN f.n_prompt IS NULL THEN 'usage.prompt_tokens is not a non-negative integer'
        END AS reason
    FROM fields AS f
)
SELECT
    j.source_id::INTEGER AS source_id,
    j.line_no AS source_line,
    j.kind,
    CASE WHEN j.kind <> 'request' THEN j.reason END AS reason,
    CASE WHEN j.kind = 'request' THEN j.rid END AS request_id,
    NULL::VARCHAR AS bootstrap_room,
    CASE WHEN j.kind = 'request' THEN j.ts0 END AS ts,
    NULL::TIMESTAMPTZ AS ts_end,
    0 AS ts_granularity_s,
    NULL::VARCHAR AS account_id,
    CASE WHEN j.kind = 'request' THEN kvir_text(j.j.model) END AS model,
    CASE WHEN j.kind = 'request' THEN j.n_prompt END AS prompt_tokens,
    CASE WHEN j.kind = 'request' THEN j.n_cached END AS cached_tokens,
    CASE WHEN j.kind = 'request' THEN j.n_completion END AS completion_tokens,
    CASE WHEN j.kind = 'request' THEN 200 END AS http_status,
    CASE WHEN j.kind <> 'request' THEN NULL
         WHEN lower(j.freason) = 'abort' THEN 'aborted'
         ELSE 'served' END AS outcome,
    CASE WHEN j.kind = 'request' THEN j.freason END AS finish_reason,
    'gateway' AS role,
    s.node AS node,
    NULL::VARCHAR AS prefill_node,
    NULL::VARCHAR AS decode_node,
    NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
