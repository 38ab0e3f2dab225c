-- openai_response: OpenAI-compatible response bodies saved one per line (JSONL) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
--
-- chat.completion / text_completion bodies (and the last chat.completion.chunk of a stream, the one that
-- carries usage): id (the engine's request id: SGLang's rid, vLLM's chatcmpl-<request id>), created (Unix
-- *seconds*), model (the served name), choices[].finish_reason, usage.prompt_tokens (cached tokens
-- included), usage.completion_tokens, usage.prompt_tokens_details.cached_tokens. A body exists only
-- for a response the client received (HTTP 200): outcome served, or aborted for finish_reason abort.
-- Error bodies ({"object":"error", ... "code":400}) carry no id and no time: counted, not requests;
-- stream chunks without usage likewise.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"id":"VARCHAR","object":"VARCHAR","created":"VARCHAR","model":"VARCHAR",
                  "choices":[{"finish_reason":"VARCHAR"}],"usage":{"prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "prompt_tokens_details":{"cached_tokens":"VARCHAR"}},"type":"VARCHAR","code":"VARCHAR",
                  "error":"JSON"}')) END AS j
    FROM __input__ AS i
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
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN f.is_error THEN kvir_skip('error body (no id, no time): ' || coalesce(left(coalesce(f.j.type, f.j.error ->> '$.type'), 40), '?')
                                       || ' ' || coalesce(left(coalesce(f.j.code, f.j.error ->> '$.code'), 10), ''))
        WHEN f.is_chunk THEN kvir_skip('stream chunk without usage')
        WHEN f.rid IS NULL THEN kvir_bad('missing field: id')
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_bad(kvir_ts_problem(f.j.created, f.ts0, NULL, 0))
        WHEN kvir_text(f.j.model) IS NULL THEN kvir_bad('missing field: model')
        WHEN f.j.usage.prompt_tokens IS NULL THEN kvir_bad('missing field: usage.prompt_tokens')
        WHEN f.n_prompt IS NULL THEN kvir_bad('usage.prompt_tokens is not a non-negative integer')
    END) AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.ts0 AS ts,
    kvir_text(f.j.model) AS model,
    f.n_prompt AS prompt_tokens,
    f.n_cached AS cached_tokens,
    f.n_completion AS completion_tokens,
    200 AS http_status,
    CASE WHEN lower(f.freason) = 'abort' THEN 'aborted' ELSE 'served' END AS outcome,
    f.freason AS finish_reason,
    'gateway' AS role
FROM fields AS f
