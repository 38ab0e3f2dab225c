-- prefix_starts: every node start the audit found (node_configs), with what the prefix-cache documents say of it:
-- prefix caching on or off and from which line or default, and whether the build keeps the salt in every
-- cache tier's key (kvir.audit.prefix_cache over kvir.rules.prefix_cache; NULL: unknown).
-- Params: none
SELECT node, role, is_current, prefix_caching, prefix_caching_source, salt_honoured, salt_basis,
       evidence_file, coalesce(pc_flag_line, evidence_line) AS evidence_line
FROM node_configs
ORDER BY config_id
