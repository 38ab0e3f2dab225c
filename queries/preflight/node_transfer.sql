-- node_transfer: each vLLM start with a KV connector, the policy its build applies to blocks that fail to load (and from what), added to node_configs.
-- Params: none
-- Inputs: __rows__ (from kvir.preflight.transfer_rules.annotate over transfer.toml: config_id, kv_load_policy
--         none | recompute | fail | NULL (unknown), kv_load_policy_basis)
ALTER TABLE node_configs ADD COLUMN IF NOT EXISTS kv_load_policy VARCHAR;
ALTER TABLE node_configs ADD COLUMN IF NOT EXISTS kv_load_policy_basis VARCHAR;
UPDATE node_configs AS n SET kv_load_policy = r.kv_load_policy, kv_load_policy_basis = r.kv_load_policy_basis
FROM __rows__ AS r
WHERE n.config_id = r.config_id;
