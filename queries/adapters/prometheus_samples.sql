-- prometheus_samples: the prompt-token histogram samples of Prometheus scrapes, into metric_samples.
-- Params: none
-- Inputs: __input__ (numbered records: source_id, line_no, line, line_bytes, repaired, problem)
--
-- Families read: sglang:prompt_tokens_histogram and vllm:request_prompt_tokens (and any other
-- *prompt_tokens* histogram; uncached_prompt_tokens excluded), their _bucket, _count and _sum samples.
-- Buckets are cumulative (le = "less than or equal"); +Inf is the total. A sample's optional timestamp
-- is in Unix milliseconds; without one the scrape's time is unknown (ts NULL).
INSERT INTO metric_samples
WITH samples AS (
    SELECT i.source_id, i.line_no,
        regexp_extract(trim(i.line), '^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?[0-9]+))?$',
                       ['name', 'labels', 'value', 'ts']) AS m
    FROM __input__ AS i
    WHERE NOT starts_with(ltrim(i.line), '#')
),
prompt AS (
    SELECT s.source_id, s.line_no, s.m.name AS name, s.m.labels AS labels, s.m.value AS value, nullif(s.m.ts, '') AS ts_text,
        regexp_extract(s.m.name, '^(.*)_(bucket|count|sum)$', 1) AS family,
        regexp_extract(s.m.name, '_(bucket|count|sum)$', 1) AS sample
    FROM samples AS s
    WHERE s.m.name <> '' AND regexp_matches(s.m.name, 'prompt_tokens.*_(bucket|count|sum)$')
      AND NOT regexp_matches(s.m.name, 'uncached')
)
SELECT
    p.source_id, p.line_no AS source_line, p.family AS metric, p.sample,
    array_to_string(list_sort(list_filter(
        list_transform(regexp_extract_all(coalesce(p.labels, ''), '([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")'), lambda x: x),
        lambda x: NOT starts_with(x, 'le='))), ',') AS labels,
    nullif(regexp_extract(coalesce(p.labels, ''), 'model_name="((?:[^"\\]|\\.)*)"', 1), '') AS model,
    CASE WHEN p.sample = 'bucket' THEN
        CASE WHEN regexp_extract(p.labels, 'le="([^"]*)"', 1) IN ('+Inf', 'Inf', 'inf', '+inf') THEN 'infinity'::DOUBLE
             ELSE TRY_CAST(regexp_extract(p.labels, 'le="([^"]*)"', 1) AS DOUBLE) END END AS le,
    TRY_CAST(p.value AS DOUBLE) AS value,
    kvir_parse_ts(p.ts_text, NULL, 0) AS ts
FROM prompt AS p
