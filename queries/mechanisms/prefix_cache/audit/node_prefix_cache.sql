-- node_prefix_cache: each node start's prefix caching (on/off and from what), its cache connector and what its build does with a cache salt, added to node_configs.
-- Params: none
-- Inputs: __rows__ (one row per node start, from kvir.mechanisms.prefix_cache.audit_starts over the releases
--         table read from the wheels: config_id, prefix_caching, prefix_caching_source, cache_connector,
--         salt_accepted, salt_in_key, salt_honoured, salt_basis; NULL where the evidence and the table do
--         not decide)
ALTER TABLE node_configs ADD COLUMN prefix_caching BOOLEAN;
ALTER TABLE node_configs ADD COLUMN prefix_caching_source VARCHAR;
ALTER TABLE node_configs ADD COLUMN cache_connector VARCHAR;
ALTER TABLE node_configs ADD COLUMN salt_accepted BOOLEAN;
ALTER TABLE node_configs ADD COLUMN salt_in_key BOOLEAN;
ALTER TABLE node_configs ADD COLUMN salt_honoured BOOLEAN;
ALTER TABLE node_configs ADD COLUMN salt_basis VARCHAR;
UPDATE node_configs AS n SET
    prefix_caching = r.prefix_caching, prefix_caching_source = r.prefix_caching_source,
    cache_connector = r.cache_connector, salt_accepted = r.salt_accepted, salt_in_key = r.salt_in_key,
    salt_honoured = r.salt_honoured, salt_basis = r.salt_basis
FROM __rows__ AS r
WHERE n.config_id = r.config_id;
