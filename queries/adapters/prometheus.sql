-- prometheus: Prometheus text-format scrapes (/metrics) line by line: counted, never requests.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
-- Example: sglang:prompt_tokens_histogram_bucket{engine_type="prefill",le="800000.0",model_name="zai-org/GLM-5.3"} 47.0
-- Required: <family>_bucket{le="..."} samples of a prompt-token histogram (sglang:prompt_tokens_histogram, vllm:request_prompt_tokens)
-- Optional: model_name label, a sample timestamp (ms)
--
-- A scrape cannot name a request: its prompt-token histograms (sglang:prompt_tokens_histogram,
-- vllm:request_prompt_tokens) only bound how many requests were longer than a threshold. Each line is
-- accounted for here (comments, samples, blank lines: skip; a line that is not a sample: quarantined);
-- the histogram samples themselves go to metric_samples (adapters/prometheus_samples) and triage turns
-- them into an aggregate finding (triage/aggregate_bounds).
SELECT
    i.source_id,
    i.line_no AS source_line,
    CASE
        WHEN i.problem IS NOT NULL THEN kvir_bad(i.problem)
        WHEN trim(i.line) = '' THEN kvir_skip('blank line')
        WHEN starts_with(ltrim(i.line), '#') THEN kvir_skip('comment (HELP / TYPE / EOF)')
        WHEN regexp_full_match(trim(i.line), '[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+[-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN)(\s+-?[0-9]+)?')
            THEN kvir_skip('metric sample (an aggregate: names no request)')
        ELSE kvir_bad('not a Prometheus sample line') END AS verdict,
    i.line AS raw
FROM __input__ AS i
