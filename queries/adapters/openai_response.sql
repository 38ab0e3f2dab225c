-- openai_response: OpenAI-compatible response bodies saved one per line (JSONL) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
--
-- Example: {"id":"cmpl-a7609c3b623d7e8e","object":"text_completion","created":1796114769,"model":"tiny-llama","choices":[{"index":0,"text":"...","logprobs":null,"finish_reason":"length","stop_reason":null}],"service_tier":null,"system_fingerprint":"vllm-0.32.0-35f2b258","usage":{"prompt_tokens":3,"total_tokens":11,"completion_tokens":8,"prompt_tokens_details":null}}
-- Required: id, created, model
-- Optional: object, choices, usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details.cached_tokens
--
-- chat.completion / text_completion bodies and stream chunks (chat.completion.chunk, or text_completion
-- objects without usage): id (the engine's request id: SGLang's rid; vLLM's cmpl-<id> / chatcmpl-<id>,
-- its logs' ids without the -<prompt index>), created (Unix *seconds*), model (the served name),
-- choices[].finish_reason, usage.prompt_tokens (cached tokens included), usage.completion_tokens,
-- usage.prompt_tokens_details.cached_tokens. A text_completion with k > 1 choices may answer k prompts (vLLM
-- sums their tokens into usage.prompt_tokens) or one prompt sampled k times: prompt_parts = k, and triage
-- decides such a request only where the sum settles it. The chunks of one stream share its id (one request; only the
-- last, with stream_options.include_usage, carries usage: without it the length is unknown). A body
-- exists only for a response the client received (HTTP 200): outcome served, aborted for finish_reason
-- abort, unknown for content_filter (a filter stopped it: not known to be served). Error bodies
-- ({"object":"error", ... "code":400}, or {"error": {...}}) carry no id and no time: counted, not requests;
-- other objects (a model list) likewise.
WITH parsed AS (
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{')
             THEN TRY(from_json(i.line, '{"id":"JSON","object":"VARCHAR","created":"VARCHAR","model":"VARCHAR",
                  "choices":[{"index":"VARCHAR","finish_reason":"VARCHAR"}],"usage":{"prompt_tokens":"VARCHAR","completion_tokens":"VARCHAR",
                  "prompt_tokens_details":{"cached_tokens":"VARCHAR"}},"type":"VARCHAR","code":"VARCHAR",
                  "error":"JSON"}')) END AS j
    FROM __input__ AS i
),
fields AS (
    SELECT p.*,
        kvir_text((p.j.id ->> '$')) AS rid,
        kvir_parse_ts(p.j.created, NULL, 0) AS ts0,
        kvir_count(p.j.usage.prompt_tokens) AS n_prompt,
        kvir_count(p.j.usage.completion_tokens) AS n_completion,
        kvir_count(p.j.usage.prompt_tokens_details.cached_tokens) AS n_cached,
        kvir_text(p.j.choices[1].finish_reason) AS freason,
        -- a completion answers several prompts with one choice each (or one prompt with n samples): choices
        -- 0..k-1 (a stream's chunks carry their choice's index) mean usage.prompt_tokens may add up k prompts
        CASE WHEN p.j.object = 'text_completion'
             THEN greatest(len(p.j.choices), list_max(list_transform(p.j.choices, lambda c: TRY_CAST(c.index AS INTEGER) + 1))) END AS n_choices,
        p.j.object = 'error' OR (p.j.error IS NOT NULL AND (p.j.id ->> '$') IS NULL) AS is_error,
        p.j.object IS NOT NULL AND p.j.object NOT IN ('chat.completion', 'chat.completion.chunk', 'text_completion', 'response')
            AS not_completion
    FROM parsed AS p
)
SELECT
    f.source_id,
    f.line_no AS source_line,
    coalesce(kvir_reader_verdict(f.problem, f.text, f.j), CASE
        WHEN f.is_error THEN kvir_skip('error body (no id, no time): ' || coalesce(left(coalesce(f.j.type, f.j.error ->> '$.type'), 40), '?')
                                       || ' ' || coalesce(left(coalesce(f.j.code, f.j.error ->> '$.code'), 10), ''))
        WHEN f.not_completion THEN kvir_skip('not a completion: object ' || left(f.j.object, 40))
        WHEN f.rid IS NULL THEN kvir_bad('missing field: id')
        WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_bad(kvir_ts_problem(f.j.created, f.ts0, NULL, 0))
        WHEN kvir_text(f.j.model) IS NULL THEN kvir_bad('missing field: model')
        WHEN f.j.usage.prompt_tokens IS NOT NULL AND f.n_prompt IS NULL
            THEN kvir_bad('usage.prompt_tokens is not a non-negative integer')
    END) AS verdict,
    f.text AS raw,
    f.rid AS request_id,
    f.ts0 AS ts,
    kvir_text(f.j.model) AS model,
    f.n_prompt AS prompt_tokens,
    f.n_cached AS cached_tokens,
    f.n_completion AS completion_tokens,
    200 AS http_status,
    CASE WHEN lower(f.freason) = 'abort' THEN 'aborted'
         WHEN lower(f.freason) = 'content_filter' THEN NULL      -- filtered: not known to be served
         ELSE 'served' END AS outcome,
    f.freason AS finish_reason,
    CASE WHEN f.n_choices > 1 THEN f.n_choices::INTEGER END AS prompt_parts,
    'gateway' AS role
FROM fields AS f
