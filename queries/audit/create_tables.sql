-- create_tables: the audit's input bookkeeping tables, emptied for a fresh audit run.
-- Params: none
CREATE OR REPLACE TABLE audit_file_map (
    file_id INTEGER PRIMARY KEY,
    path VARCHAR,                  -- the file as given (or found in a given folder)
    size_bytes BIGINT,
    sha256 VARCHAR,
    skipped VARCHAR,               -- why the file was not read (JSON request log, Parquet), else NULL
    lines_read BIGINT,
    too_long BIGINT,
    inv_node VARCHAR, inv_match VARCHAR, inv_role VARCHAR, inv_version VARCHAR, inv_engine VARCHAR,
    inv_deployment VARCHAR, inv_env_deferred VARCHAR, inv_env_batch_cap VARCHAR,
    inv_advertised_context BIGINT, inv_block_size BIGINT,
    file_node VARCHAR, file_node_source VARCHAR, file_role VARCHAR,
    source_tz VARCHAR, year INTEGER,
    input_kind VARCHAR             -- 'log' (text lines) or 'server_info' (a /server_info JSON snapshot)
);
CREATE OR REPLACE TABLE audit_too_long (file_id INTEGER, line_no BIGINT, line_bytes BIGINT);
CREATE OR REPLACE TABLE audit_rules (
    rule_id VARCHAR PRIMARY KEY, name VARCHAR, title VARCHAR, severity VARCHAR, fix VARCHAR, help VARCHAR,
    mechanism VARCHAR              -- the exposure mechanism the rule checks (kvir.spec.mechanism)
);
DROP TABLE IF EXISTS audit_parsed;
-- one row per /server_info (or /get_server_info) JSON snapshot given as input (kvir.audit.server_info)
CREATE OR REPLACE TABLE audit_server_info (
    file_id INTEGER, version VARCHAR, pool_tokens BIGINT, context_len BIGINT, page_size BIGINT,
    disaggregation_mode VARCHAR, served_model VARCHAR, kv_checksum BOOLEAN, kv_canary VARCHAR,
    has_kv_canary BOOLEAN, has_kv_checksum BOOLEAN, tp_size BIGINT, dp_size BIGINT, transfer_backend VARCHAR,
    allow_auto_truncate BOOLEAN, max_total_tokens BIGINT, max_req_input_len BIGINT
);
