-- transfer_findings: the shared preflight rule table's findings (KV-transfer rules of no registered mechanism yet), added to findings.
-- Params: none
--
--   KVT001  a vLLM start with a KV connector whose failed block loads are recomputed (or not handled at all)
--           instead of failing the request: fail; unknown when the policy and the release are not in the evidence.
INSERT INTO findings BY NAME
WITH r001 AS (
    SELECT 'KVT001' AS rule_id, CASE WHEN n.kv_load_policy IS NULL THEN 'unknown' ELSE 'fail' END AS status,
        'medium' AS severity, n.* REPLACE (coalesce(n.load_failure_policy_line, n.evidence_line) AS evidence_line),
        CASE WHEN n.kv_load_policy = 'none' THEN format('vLLM node {}: connector {}: the scheduler does not handle blocks that fail to load ({}): a failed transfer is not even noticed', n.node, n.pc_connector, n.kv_load_policy_basis)
             WHEN n.kv_load_policy IS NOT NULL THEN format('vLLM node {}: connector {}: kv_load_failure_policy {} ({}): blocks that fail to load are recomputed and the failure is seen by nobody', n.node, n.pc_connector, n.kv_load_policy, n.kv_load_policy_basis)
             ELSE format('vLLM node {}: connector {}: kv_load_failure_policy {}', n.node, n.pc_connector, n.kv_load_policy_basis) END AS message
    FROM node_configs AS n
    WHERE n.engine = 'vllm' AND n.pc_connector IS NOT NULL AND n.kv_load_policy IS DISTINCT FROM 'fail'
)
SELECT f.rule_id, f.severity, f.node, f.role, f.ts, ru.title, f.message, ru.fix, f.evidence_file, f.evidence_line,
    f.status, ru.name AS rule_name, f.engine, f.version, f.deployment, f.config_id, f.is_current,
    NULL AS related_node, NULL AS related_evidence,
    CASE f.severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 END AS severity_rank
FROM r001 AS f JOIN audit_rules AS ru USING (rule_id);
