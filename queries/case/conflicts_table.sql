-- conflicts_table: the (empty) table of requests whose records disagree; queries/case/conflicts.sql fills it.
-- Params: none
--
-- One row per conflicting request (see queries/case/requests_merged.sql for what a conflict is and the
-- rule that judges it): the values each field took in its records, what the merge chose, and where the
-- records are. Exported as conflicts.csv and counted in the triage summary.
CREATE OR REPLACE TABLE conflicts (
    request_id VARCHAR,            -- the merged request (requests.request_id)
    n_records BIGINT,              -- how many records of it were merged
    fields VARCHAR[],              -- which fields disagree: prompt_tokens, outcome, model, account_id, bootstrap_room,
                                   -- prefill_node, decode_node
    prompt_tokens_seen BIGINT[],   -- every distinct value among the non-prefill records
    outcomes_seen VARCHAR[],
    models_seen VARCHAR[],
    accounts_seen VARCHAR[],       -- among every record that names an account
    prompt_tokens BIGINT,          -- what the merge chose (requests' values)
    outcome VARCHAR,
    model VARCHAR,
    account_id VARCHAR,            -- NULL on a tie: see account_candidates
    records VARCHAR[],             -- file:line of each record, sorted
    rule VARCHAR,                  -- how the values were chosen
    -- the accounts of the most exposing records when they are several (a tie: no account is chosen, each is to
    -- be notified as possibly affected); NULL when one account, or none, is the most exposing record's
    account_candidates VARCHAR[],
    prefill_nodes_seen VARCHAR[],  -- every prefill / decode node its records name
    decode_nodes_seen VARCHAR[]
);
-- account_candidates: one row per candidate account of a tied request (the accounts a report notifies as possibly
-- affected for it: the request's own account_id is NULL)
CREATE OR REPLACE VIEW account_candidates AS
SELECT request_id, unnest(account_candidates) AS account_id FROM conflicts WHERE account_candidates IS NOT NULL;
