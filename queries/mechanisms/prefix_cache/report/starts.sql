-- starts: every node start the audit found (node_configs), with what this mechanism's documents say of it:
-- caching on or off and from which line or default, and whether the build keeps the salt in every cache
-- tier's key (the audit's reading of kvir's per-release table; NULL: unknown).
-- Params: none
SELECT node, role, is_current, prefix_caching, prefix_caching_source, salt_honoured, salt_basis,
       evidence_file, coalesce(pc_flag_line, evidence_line) AS evidence_line
FROM node_configs
ORDER BY config_id
