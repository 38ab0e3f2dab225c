-- conflicts_table: the (empty) table of requests whose records disagree; queries/case/conflicts.sql fills it.
-- Params: none
--
-- One row per conflicting request (see queries/case/requests_merged.sql for what a conflict is and the
-- rule that judges it): the values each field took in its records, what the merge chose, and where the
-- records are. Exported as conflicts.csv and counted in the triage summary.
CREATE OR REPLACE TABLE conflicts (
    request_id VARCHAR,            -- the merged request (requests.request_id)
    n_records BIGINT,              -- how many records of it were merged
    fields VARCHAR[],              -- which fields disagree: prompt_tokens, outcome, model, account_id
    prompt_tokens_seen BIGINT[],   -- every distinct value among the non-prefill records
    outcomes_seen VARCHAR[],
    models_seen VARCHAR[],
    accounts_seen VARCHAR[],       -- among every record that names an account
    prompt_tokens BIGINT,          -- what the merge chose (requests' values)
    outcome VARCHAR,
    model VARCHAR,
    account_id VARCHAR,
    records VARCHAR[],             -- file:line of each record, sorted
    rule VARCHAR                   -- how the values were chosen
);
