-- probe_tables: the case tables of live probe runs (kvir probe --case): one row per run, per request sent, per finding.
-- Params: none
-- Idempotent: a case gains the tables empty; kvir.case.probe_tables appends one run's rows (values bound).
-- Text is never stored: prompts and outputs appear only as SHA-256 prefixes and lengths.
--   probe_runs      run id, UTC times, endpoint (no credentials or query), model, engine, version, verdict
--   probe_events    every generation request: check, purpose, tenant, ids, token counts (cached ones too), status,
--                   timings, hashes
--   probe_findings  rule, severity, message (ids, lengths, hashes), request ids, evidence (JSON text)
CREATE TABLE IF NOT EXISTS probe_runs (
    run_id VARCHAR PRIMARY KEY, started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, endpoint VARCHAR, model VARCHAR,
    engine VARCHAR, version VARCHAR, verdict VARCHAR, reason VARCHAR, requests_sent INTEGER, checks VARCHAR
);
CREATE TABLE IF NOT EXISTS probe_events (
    run_id VARCHAR, seq INTEGER, ts TIMESTAMPTZ, check_name VARCHAR, purpose VARCHAR, label VARCHAR, tenant VARCHAR,
    request_id VARCHAR, response_id VARCHAR, path VARCHAR, stream BOOLEAN, target_tokens BIGINT, sent_tokens BIGINT,
    exact BOOLEAN, max_tokens INTEGER, http_status INTEGER, attempts INTEGER, error VARCHAR, error_kind VARCHAR,
    prompt_tokens BIGINT, completion_tokens BIGINT, latency_s DOUBLE, prompt_sha256 VARCHAR, output_sha256 VARCHAR,
    output_chars INTEGER, cached_tokens BIGINT
);
-- cached_tokens (usage.prompt_tokens_details.cached_tokens, the prefix-isolation check's evidence) came later:
-- a case made before it gains the column, empty for its earlier runs.
ALTER TABLE probe_events ADD COLUMN IF NOT EXISTS cached_tokens BIGINT;
CREATE TABLE IF NOT EXISTS probe_findings (
    run_id VARCHAR, seq INTEGER, check_name VARCHAR, rule_id VARCHAR, severity VARCHAR, message VARCHAR,
    request_ids VARCHAR[], evidence VARCHAR
);
