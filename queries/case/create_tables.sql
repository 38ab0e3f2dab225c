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
-- records_text is the record contract: every adapter's output, after the shared epilogue
-- (toolkit/ingest/epilogue.py), has exactly these columns, in this order, with these types
-- (tests/formats/test_contract.py checks every registered format). An adapter emits the columns it knows;
-- the epilogue pads the others (DEFAULT, derived from the source's settings, or NULL).
-- (kind request | skip | bad: case/file_batch counts them); the view `records` reads its requests.
CREATE TABLE IF NOT EXISTS records_text (
    source_id INTEGER,
    source_line BIGINT,              -- line (or record) number in the file; a Parquet row's number in its file
    kind VARCHAR,                    -- request | skip (counted, not a request) | bad (quarantined)
    reason VARCHAR,                  -- why skipped or quarantined (NULL for requests)
    request_id VARCHAR,
    bootstrap_room VARCHAR,          -- PD: shared by the prefill and decode copies of one request
    ts TIMESTAMPTZ,                  -- request start, UTC (rounded down to the microsecond)
    ts_extra_ns SMALLINT,            -- the start's nanoseconds below ts's microsecond (0-999) when the source says
    ts_end TIMESTAMPTZ,
    ts_granularity_s INTEGER DEFAULT 0,  -- 0: exact; 3600: only the hour is known
    account_id VARCHAR,
    model VARCHAR,                   -- default: the source's served model
    model_other VARCHAR,             -- another name the record gives the same model (LiteLLM's deployment beside its
                                     -- model group, OTel's response model beside the requested one); NULL when none
    prompt_tokens BIGINT,
    cached_tokens BIGINT,
    completion_tokens BIGINT,
    http_status INTEGER,
    outcome VARCHAR,                 -- served | rejected | failed | aborted | NULL (unknown)
    finish_reason VARCHAR,
    role VARCHAR,                    -- prefill | decode | mixed | gateway (client-facing); default: the source's
    node VARCHAR,                    -- the node whose log this is; default: the source's
    prefill_node VARCHAR,            -- default: node when role is prefill or mixed
    decode_node VARCHAR,             -- default: node when role is decode or mixed
    prefill_tokens BIGINT,           -- what the prefill side computed; default: prompt_tokens when role is prefill
    raw VARCHAR,                     -- the raw text: kept only for quarantined rows, only with keep_raw
    source_path VARCHAR,             -- set only by multi-file in-place sources (Parquet datasets): the file of the row
    prompt_index INTEGER,            -- which prompt of a several-prompt completion call (vLLM logs <id>-0, <id>-1); NULL: the only one
    prompt_parts INTEGER             -- how many prompts prompt_tokens may add up (a body with k choices: k); NULL: one prompt
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
