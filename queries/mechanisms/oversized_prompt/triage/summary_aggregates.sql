-- summary_aggregates: the aggregate finding (triage/aggregate_bounds: bounds from Prometheus prompt-token
-- histograms, never requests) added to the headline (triage_summary, made by triage/summary).
-- Params: none
CREATE OR REPLACE TABLE triage_summary AS
SELECT t.*,
    (SELECT count(*) FROM aggregate_findings) AS aggregate_series,
    (SELECT sum(lower) FROM aggregate_findings) AS aggregate_lower,
    (SELECT sum(upper) FROM aggregate_findings) AS aggregate_upper
FROM triage_summary AS t;
