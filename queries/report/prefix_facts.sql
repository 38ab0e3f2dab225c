-- prefix_facts: the prefix-cache triage's counts the documents state beside `affected` (triage_summary, written
-- by triage/prefix_cache_summary): possibly affected responses, requests that cannot be decided, responses
-- served with cached tokens, instances with an affected response, and the candidate source tenants named.
-- Params: none
SELECT s.possibly_affected, s.cannot_decide, s.cache_hits, s.instances,
       (SELECT count(DISTINCT t.tenant) FROM (SELECT unnest(source_tenants) AS tenant FROM affected) AS t) AS source_tenants
FROM triage_summary AS s
