-- start_facts: every node start the audit found (node_configs), with what the reports need to say about the
-- engine: its pool against its context, whether the engine refused to start, and the build kvir placed.
-- Params: none
SELECT node, role, engine, ts, pool_tokens, context_len, holds_context, refused, build, build_evidence,
       stub_transferred,
       -- a pool below the context: shown by the numbers, or by the engine refusing to start for it (vLLM's refusal
       -- names the context and the longest request the pool holds, not the pool itself)
       coalesce(pool_tokens < context_len, coalesce(refused, false) AND holds_context = false, false) AS small_pool,
       evidence_file, evidence_line
FROM node_configs
ORDER BY config_id
