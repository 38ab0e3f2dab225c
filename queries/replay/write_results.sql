-- write_results: replay_results, one row per replayed affected response and build (the stage's contract columns first).
-- Params: none
-- Inputs: __rows__ (the replay's rows, built in Python)
--
-- build: what the row ran (a build's policy, e.g. sglang-0.5.19 or kvir-proposal: kvir.replay.policy; or the
-- mechanism's own, e.g. a cache keying), builds: what it reproduces, build_role: incident (the response's
-- production path) | compared | proposal, first_fixed: the row ran the first fixed build.
-- build_basis (incident rows): ran = the evidence decides the production path (build_source says how);
-- assumed = it does not, and build_source says why (a row that was not replayed at all is assumed too).
CREATE OR REPLACE TABLE replay_results AS
SELECT
    CAST(r.request_id AS VARCHAR) AS request_id,
    CAST(r.build AS VARCHAR) AS build,
    CAST(r.builds AS VARCHAR) AS builds,
    CAST(r.build_role AS VARCHAR) AS build_role,
    CAST(r.first_fixed AS BOOLEAN) AS first_fixed,
    CAST(r.account_id AS VARCHAR) AS account_id,
    CAST(r.prefill_node AS VARCHAR) AS prefill_node,
    CAST(r.decode_node AS VARCHAR) AS decode_node,
    CAST(r.prompt_tokens AS BIGINT) AS prompt_tokens,
    CAST(r.verdict AS VARCHAR) AS verdict,
    CAST(r.http_status AS INTEGER) AS http_status,
    CAST(r.stage AS VARCHAR) AS stage,
    CAST(r.foreign_owners AS STRUCT(request_id VARCHAR, account_id VARCHAR, tokens BIGINT, first_token BIGINT,
                                    last_token BIGINT, attention_mass DOUBLE)[]) AS foreign_owners,
    CAST(r.uninitialised_mass AS DOUBLE) AS uninitialised_mass,
    CAST(r.leaked_tokens AS BIGINT) AS leaked_tokens,
    CAST(r.carried_tokens AS BIGINT) AS carried_tokens,
    CAST(r.scale AS DOUBLE) AS scale,
    CAST(r.assumptions AS VARCHAR) AS assumptions,
    CAST(r.device AS VARCHAR) AS device,
    CAST(r.seed AS BIGINT) AS seed,
    CAST(r.reason AS VARCHAR) AS reason,
    CAST(r.prefill_tokens AS BIGINT) AS prefill_tokens,
    CAST(r.transferred_pages AS BIGINT) AS transferred_pages,
    CAST(r.replayed_prompt_tokens AS BIGINT) AS replayed_prompt_tokens,
    CAST(r.completion_tokens AS BIGINT) AS completion_tokens,
    CAST(r.decode_steps AS BIGINT) AS decode_steps,
    CAST(r.uninitialised_tokens AS BIGINT) AS uninitialised_tokens,
    CAST(r.recalled_tokens AS BIGINT) AS recalled_tokens,
    CAST(r.causal AS STRUCT(request_id VARCHAR, slots BIGINT, changed_tokens BIGINT, first_changed BIGINT)[]) AS causal,
    CAST(r.history_requests AS BIGINT) AS history_requests,
    CAST(r.limits_source AS VARCHAR) AS limits_source,
    CAST(r.build_source AS VARCHAR) AS build_source,
    CAST(r.build_basis AS VARCHAR) AS build_basis,
    CAST(r.evidence AS VARCHAR) AS evidence,
    CAST(r.checksum AS VARCHAR) AS checksum,
    CAST(r.canary AS VARCHAR) AS canary,
    CAST(r.model AS VARCHAR) AS model,
    CAST(r.response_tokens AS BIGINT[]) AS response_tokens,
    CAST(r.cached_tokens AS BIGINT) AS cached_tokens,     -- a replay through a block cache: the tokens it got cached
    CAST(r.attribution_scale AS DOUBLE) AS attribution_scale  -- the placement's scale (1: full size); scale: the attention's
FROM __rows__ AS r
ORDER BY r.request_id, CASE r.build_role WHEN 'incident' THEN 0 WHEN 'compared' THEN 1 ELSE 2 END, r.build
