-- node_configs: every node start the audit stage parsed (pool, context, page size, build, evidence), in time order.
-- Params: none
SELECT c.node, c.role, c.ts, c.pool_tokens, c.context_len, c.page_size, c.evidence_file, c.evidence_line,
       c.build, c.build_lo, c.build_evidence, c.stub_transferred
FROM node_configs AS c
ORDER BY c.node, c.ts NULLS FIRST, c.evidence_file, c.evidence_line
