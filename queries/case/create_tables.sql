-- create_tables: the case's base tables (idempotent).
-- Params: none
CREATE TABLE IF NOT EXISTS sources (
    source_id INTEGER PRIMARY KEY,
    label VARCHAR,                 -- the file (or the dataset folder) as given
    format VARCHAR,
    chosen_by VARCHAR,             -- given: --format / given: [[sources]] / sniffed: ...
    files VARCHAR[],
    size_bytes BIGINT,
    sha256 VARCHAR,
    compression VARCHAR,
    source_tz VARCHAR,
    served_model VARCHAR,
    served_model_source VARCHAR,   -- server_args= line N / --served-model / assumed: ...
    node VARCHAR,
    role VARCHAR,
    year INTEGER,
    notes VARCHAR[],
    seconds DOUBLE
);
-- every row a text adapter produced (kind request | skip | bad: case/file_batch counts them); the view
-- `records` reads its requests
CREATE TABLE IF NOT EXISTS records_text (
    source_id INTEGER, source_line BIGINT, kind VARCHAR, reason VARCHAR,
    request_id VARCHAR, bootstrap_room VARCHAR, ts TIMESTAMPTZ, ts_end TIMESTAMPTZ, ts_granularity_s INTEGER,
    account_id VARCHAR, model VARCHAR, prompt_tokens BIGINT, cached_tokens BIGINT, completion_tokens BIGINT,
    http_status INTEGER, outcome VARCHAR, finish_reason VARCHAR, role VARCHAR, node VARCHAR,
    prefill_node VARCHAR, decode_node VARCHAR, prefill_tokens BIGINT, raw VARCHAR,
    source_path VARCHAR    -- set only by multi-file in-place sources (Parquet datasets): the file of the row
);
CREATE TABLE IF NOT EXISTS quarantine_text (
    source_id INTEGER, source_line BIGINT, reason VARCHAR, raw VARCHAR
);
-- per-source reading settings, joined by every adapter ON source_id (queries/adapters/README.md)
CREATE TABLE IF NOT EXISTS source_settings (
    source_id INTEGER PRIMARY KEY, tz_iana VARCHAR, tz_offset_min INTEGER, served_model VARCHAR, node VARCHAR,
    role VARCHAR, year INTEGER, keep_raw BOOLEAN, max_line_bytes BIGINT
);
CREATE TABLE IF NOT EXISTS source_counts (
    source_id INTEGER, kind VARCHAR, reason VARCHAR, n BIGINT
);
-- files the paths named that could not be inputs at all (empty, not a regular file, unreadable, not
-- decompressible): listed with the reason instead of dropped or fatal
CREATE TABLE IF NOT EXISTS skipped_inputs (
    path VARCHAR,
    reason VARCHAR,
    size_bytes BIGINT
);
