-- write_exposure: replay_exposure, whose data reached whom: one row per (source request, reader response), under the reader's production build.
-- Params: none
-- Inputs: __rows__ (the replay's exposure rows, built in Python)
CREATE OR REPLACE TABLE replay_exposure AS
SELECT
    CAST(r.source_account_id AS VARCHAR) AS source_account_id,
    CAST(r.source_request_id AS VARCHAR) AS source_request_id,
    CAST(r.reader_request_id AS VARCHAR) AS reader_request_id,
    CAST(r.reader_account_id AS VARCHAR) AS reader_account_id,
    CAST(r.build AS VARCHAR) AS build,
    CAST(r.tokens AS BIGINT) AS tokens,
    CAST(r.attention_mass AS DOUBLE) AS attention_mass
FROM __rows__ AS r
ORDER BY r.source_account_id NULLS LAST, r.source_request_id, r.reader_request_id
