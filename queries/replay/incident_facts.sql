-- incident_facts: the incident's key/value facts (pool_tokens, context_tokens, ...).
-- Params: none
SELECT i.key, i.value FROM incident AS i ORDER BY i.key
