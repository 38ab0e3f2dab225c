-- prometheus: Prometheus text-format scrapes (/metrics) line by line: counted, never requests.
-- Params: none
-- Inputs: __input__ (numbered text lines: source_id, line_no, line, line_bytes), __settings__ (one row per source_id: its settings)
--
-- A scrape cannot name a request: its prompt-token histograms (sglang:prompt_tokens_histogram,
-- vllm:request_prompt_tokens) only bound how many requests were longer than a threshold. Each line is
-- accounted for here (comments, samples, blank lines: skip; a line that is not a sample: quarantined);
-- the histogram samples themselves go to metric_samples (adapters/prometheus_samples) and triage turns
-- them into an aggregate finding (triage/aggregate_bounds).
WITH lines AS (
    SELECT i.source_id, i.line_no, i.line_bytes, i.line AS text, s.max_line_bytes
    FROM __input__ AS i JOIN __settings__ AS s ON s.source_id = i.source_id
),
judged AS (
    SELECT l.*,
        CASE
            WHEN l.line_bytes > l.max_line_bytes THEN 'bad'
            WHEN trim(l.text) = '' THEN 'skip'
            WHEN starts_with(ltrim(l.text), '#') THEN 'skip'
            WHEN regexp_full_match(trim(l.text), '[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+[-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN)(\s+-?[0-9]+)?')
                THEN 'skip'
            ELSE 'bad' END AS kind,
        CASE
            WHEN l.line_bytes > l.max_line_bytes THEN 'line longer than ' || l.max_line_bytes || ' bytes'
            WHEN trim(l.text) = '' THEN 'blank line'
            WHEN starts_with(ltrim(l.text), '#') THEN 'comment (HELP / TYPE / EOF)'
            WHEN regexp_full_match(trim(l.text), '[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+[-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN)(\s+-?[0-9]+)?')
                THEN 'metric sample (an aggregate: names no request)'
            ELSE 'not a Prometheus sample line' END AS reason
    FROM lines AS l
)
SELECT
    j.source_id::INTEGER AS source_id, j.line_no AS source_line, j.kind, j.reason,
    NULL::VARCHAR AS request_id, NULL::VARCHAR AS bootstrap_room, NULL::TIMESTAMPTZ AS ts, NULL::TIMESTAMPTZ AS ts_end,
    0 AS ts_granularity_s, NULL::VARCHAR AS account_id, NULL::VARCHAR AS model, NULL::BIGINT AS prompt_tokens,
    NULL::BIGINT AS cached_tokens, NULL::BIGINT AS completion_tokens, NULL::INTEGER AS http_status,
    NULL::VARCHAR AS outcome, NULL::VARCHAR AS finish_reason, s.role AS role, s.node AS node,
    NULL::VARCHAR AS prefill_node, NULL::VARCHAR AS decode_node, NULL::BIGINT AS prefill_tokens,
    CASE WHEN j.kind = 'bad' AND s.keep_raw THEN j.text END AS raw
FROM judged AS j JOIN __settings__ AS s ON s.source_id = j.source_id
