-- affected: one row per response served from cached blocks that another tenant's request may have written
-- (triage/hits says when), of a non-excluded account: the columns every report reads (triage/listed), then
-- the mechanism's own.
-- Params: none
--   cached_tokens   the prompt tokens the engine served from its prefix cache (as the source logged them)
--   verdict         'affected' (no earlier same-tenant request could have written them) | 'possibly affected'
--                   (one could, and so could another tenant's)
--   instance        the engine instance whose cache served it ('unknown' when no log names one)
--   tenant          the tenant the response went to (account_id)
--   source_tenants  the other tenants whose earlier requests on that instance could have written the blocks
CREATE OR REPLACE TABLE affected AS
SELECT
    affected_row.*,
    l.cached_tokens,
    replace(l.category, '-', ' ') AS verdict,
    l.instance,
    l.tenant,
    l.source_tenants
FROM listed_hits AS l
WHERE NOT l.account_excluded
ORDER BY l.ts, l.request_id;
