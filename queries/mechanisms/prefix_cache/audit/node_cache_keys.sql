-- node_cache_keys: each node start's block hash (algorithm, weak or not, seed in the environment) and whether its engine and LMCache releases are a pair known to restore the wrong KV, added to node_configs.
-- Params: none
-- Inputs: __rows__ (one row per node start, from kvir.mechanisms.prefix_cache.cache_keys over the releases table:
--         config_id, block_hash, block_hash_weak, block_hash_seed_known, block_hash_basis, connector_pair_corrupts,
--         connector_pair_basis; NULL where the evidence and the table do not decide or the question does not apply)
ALTER TABLE node_configs ADD COLUMN block_hash VARCHAR;
ALTER TABLE node_configs ADD COLUMN block_hash_weak BOOLEAN;
ALTER TABLE node_configs ADD COLUMN block_hash_seed_known BOOLEAN;
ALTER TABLE node_configs ADD COLUMN block_hash_basis VARCHAR;
ALTER TABLE node_configs ADD COLUMN connector_pair_corrupts BOOLEAN;
ALTER TABLE node_configs ADD COLUMN connector_pair_basis VARCHAR;
UPDATE node_configs AS n SET
    block_hash = r.block_hash, block_hash_weak = r.block_hash_weak, block_hash_seed_known = r.block_hash_seed_known,
    block_hash_basis = r.block_hash_basis, connector_pair_corrupts = r.connector_pair_corrupts,
    connector_pair_basis = r.connector_pair_basis
FROM __rows__ AS r
WHERE n.config_id = r.config_id;
