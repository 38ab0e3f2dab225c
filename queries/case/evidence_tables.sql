-- evidence_tables: what the format adapters and the evidence join add to a case (idempotent).
-- Params: none
--
-- source_settings gains the columns some formats need to place their times (toolkit/ingest/settings.py);
-- evidence_joins records how candidates (sources without prompt lengths) and gateway identities were
-- joined to requests with counts (queries/case/evidence_join.sql); metric_samples holds the prompt-token
-- histogram samples of Prometheus scrapes (queries/adapters/prometheus_samples.sql).
ALTER TABLE source_settings ADD COLUMN IF NOT EXISTS file_name VARCHAR;
ALTER TABLE source_settings ADD COLUMN IF NOT EXISTS window_start TIMESTAMPTZ;
ALTER TABLE source_settings ADD COLUMN IF NOT EXISTS window_end TIMESTAMPTZ;
-- vLLM's --max-log-len from the log's start-up arguments: logged token-id lists are cut to it
ALTER TABLE source_settings ADD COLUMN IF NOT EXISTS max_log_len INTEGER;
-- spans of local time with one UTC offset, around the window (queries/macros.sql: kvir_local_ts_to_utc)
ALTER TABLE source_settings ADD COLUMN IF NOT EXISTS tz_spans STRUCT(lo1 TIMESTAMP, hi1 TIMESTAMP, off1 INTEGER,
    lo2 TIMESTAMP, hi2 TIMESTAMP, off2 INTEGER, lo3 TIMESTAMP, hi3 TIMESTAMP, off3 INTEGER,
    lo4 TIMESTAMP, hi4 TIMESTAMP, off4 INTEGER);
CREATE TABLE IF NOT EXISTS evidence_joins (
    source_id INTEGER,            -- the source whose requests were joined in this pass
    pass VARCHAR,                 -- candidate: no prompt length; identity: a gateway's customer id
    request_id VARCHAR,           -- the joined request as that source names it
    ts TIMESTAMPTZ,
    status VARCHAR,               -- matched | ambiguous | unmatched
    partners INTEGER,             -- requests with counts within the tolerance (after the keys)
    partner_request_id VARCHAR,   -- the request it was merged into (matched only)
    method VARCHAR,               -- id, time, time+node, time+tokens
    tolerance_s DOUBLE,
    delta_s DOUBLE,               -- partner ts - ts (matched only)
    account_id VARCHAR,           -- the customer id the join attached (identity and gateway candidates)
    note VARCHAR
);
-- the partners it could be (the one it was merged into, when matched), and whether it stays a request of
-- its own (unmatched: yes; matched: merged; ambiguous: only where its island has more records than partners)
ALTER TABLE evidence_joins ADD COLUMN IF NOT EXISTS candidate_ids VARCHAR[];
ALTER TABLE evidence_joins ADD COLUMN IF NOT EXISTS counted BOOLEAN;
CREATE TABLE IF NOT EXISTS metric_samples (
    source_id INTEGER, source_line BIGINT,
    metric VARCHAR,               -- histogram family, e.g. vllm:request_prompt_tokens
    sample VARCHAR,               -- bucket | count | sum
    labels VARCHAR,               -- the label set without le, as written (sorted)
    model VARCHAR,                -- the model_name label, when there is one
    le DOUBLE,                    -- bucket bound (infinity for +Inf)
    value DOUBLE,
    ts TIMESTAMPTZ                -- the sample's timestamp (ms in the scrape), NULL when not written
);
