-- start_facts: every node start the audit found (node_configs), with what the reports need to say about the
-- engine: its pool against its context, whether the engine refused to start, and the build kvir placed.
-- Params: none
SELECT node, role, engine, ts, pool_tokens, context_len, holds_context, refused, build, build_evidence,
       stub_transferred, pool_tokens < context_len AS small_pool, evidence_file, evidence_line
FROM node_configs
ORDER BY config_id
