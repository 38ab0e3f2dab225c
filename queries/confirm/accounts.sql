-- accounts: the case table `confirmation_accounts`: per tenant, the verdicts on the affected responses it
-- received, and whether its own content reached another tenant's response (and how many responses, of how
-- many tenants). What a customer's notice says of both comes from here.
-- Params: none
CREATE OR REPLACE TABLE confirmation_accounts AS
WITH recv AS (
    SELECT account_id, count(*) AS responses,
           count(*) FILTER (WHERE verdict = 'confirmed foreign content') AS confirmed,
           count(*) FILTER (WHERE verdict = 'corruption without foreign content') AS corruption,
           count(*) FILTER (WHERE verdict = 'not confirmed') AS not_confirmed,
           count(*) FILTER (WHERE verdict = 'cannot decide') AS cannot_decide
    FROM confirmations WHERE account_id IS NOT NULL GROUP BY account_id
),
reach AS (
    SELECT s.source_tenant AS account_id, count(DISTINCT s.request_id) AS responses_reached,
           count(DISTINCT c.account_id) AS tenants_reached, count(DISTINCT s.source_request_id) AS source_requests
    FROM confirmation_sources AS s JOIN confirmations AS c ON c.request_id = s.request_id
    GROUP BY s.source_tenant
)
SELECT coalesce(recv.account_id, reach.account_id) AS account_id,
       coalesce(recv.responses, 0) AS responses, coalesce(recv.confirmed, 0) AS confirmed,
       coalesce(recv.corruption, 0) AS corruption, coalesce(recv.not_confirmed, 0) AS not_confirmed,
       coalesce(recv.cannot_decide, 0) AS cannot_decide,
       coalesce(reach.responses_reached, 0) AS content_reached_responses,
       coalesce(reach.tenants_reached, 0) AS content_reached_tenants,
       coalesce(reach.source_requests, 0) AS content_source_requests
FROM recv FULL JOIN reach ON reach.account_id = recv.account_id
ORDER BY account_id;
