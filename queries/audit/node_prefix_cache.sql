-- node_prefix_cache: each node start's prefix caching (on/off and from what), its cache connector and what its build does with a cache salt, written into node_configs.
-- Params: none
-- Inputs: __rows__ (one row per node start, from kvir.audit.prefix_cache over kvir.rules.prefix_cache:
--         config_id, prefix_caching, prefix_caching_source, cache_connector, salt_accepted, salt_in_key,
--         salt_honoured, salt_basis; NULL where the evidence and the build table do not decide)
UPDATE node_configs AS n SET
    prefix_caching = r.prefix_caching, prefix_caching_source = r.prefix_caching_source,
    cache_connector = r.cache_connector, salt_accepted = r.salt_accepted, salt_in_key = r.salt_in_key,
    salt_honoured = r.salt_honoured, salt_basis = r.salt_basis
FROM __rows__ AS r
WHERE n.config_id = r.config_id;
