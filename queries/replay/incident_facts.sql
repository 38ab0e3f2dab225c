-- incident_facts: the incident's key/value facts (engine, engine_source, model_names, ...; the mechanism's params
-- are read with kvir.case.spec_tables.case_mechanism).
-- Params: none
SELECT i.key, i.value FROM incident AS i ORDER BY i.key
