-- prefix_cache_affected: the case table `affected` for the prefix-cache mechanism: one row per response served
-- from cached blocks that another tenant's request may have written (triage/prefix_cache_hits says when), of
-- a non-excluded account. The columns every report reads (as triage/affected), then the mechanism's own.
-- Params: $rule_text
--   cached_tokens   the prompt tokens the engine served from its prefix cache (as the source logged them)
--   verdict         'affected' (no earlier same-tenant request could have written them) | 'possibly affected'
--                   (one could, and so could another tenant's)
--   instance        the engine instance whose cache served it ('unknown' when no log names one)
--   tenant          the tenant the response went to (account_id)
--   source_tenants  the other tenants whose earlier requests on that instance could have written the blocks
CREATE OR REPLACE TABLE affected AS
SELECT
    h.request_id,
    h.ts,
    h.ts_end,
    h.account_id,
    a.label AS account_label,
    h.model,
    h.matched_name,
    h.prompt_tokens,
    h.prefill_tokens,
    h.completion_tokens,
    h.http_status,
    h.finish_reason,
    h.prefill_node,
    h.decode_node,
    concat_ws(' -> ', h.prefill_node, h.decode_node) AS nodes,
    h.source_format,
    h.source_file,
    h.source_line,
    h.n_records,
    h.conflict,
    $rule_text AS rule,
    NULL::BOOLEAN AS other_rule_also_matches,      -- the oversized-prompt rules' comparison: not this mechanism's
    NULL::VARCHAR AS other_rule,
    h.cached_tokens,
    replace(h.category, '-', ' ') AS verdict,
    h.instance,
    h.tenant,
    h.source_tenants
FROM triage_hits AS h
LEFT JOIN account_rules AS a ON a.account_id = h.account_id
WHERE h.category IN ('affected', 'possibly-affected') AND NOT coalesce(a.exclude, false)
ORDER BY h.ts, h.request_id;
