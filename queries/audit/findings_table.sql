-- findings_table: the audit's findings, empty: every mechanism's findings query (queries/mechanisms/<m>/audit/findings.sql) adds its rows with these columns.
-- Params: none
--
-- One row per failed or undecidable check. status 'fail': the evidence shows the problem; 'unknown': the
-- evidence needed to decide is not in the logs or the inventory (reported, never counted as passed).
-- title, fix and rule_name come from audit_rules (the rule's catalogue entry, kvir.audit.rules); the
-- severity may differ from the rule's default (by role, by what the incident declares).
CREATE OR REPLACE TABLE findings (
    rule_id VARCHAR, severity VARCHAR, node VARCHAR, role VARCHAR, ts TIMESTAMPTZ, title VARCHAR,
    message VARCHAR, fix VARCHAR, evidence_file VARCHAR, evidence_line BIGINT, status VARCHAR,
    rule_name VARCHAR, engine VARCHAR, version VARCHAR, deployment VARCHAR,
    config_id BIGINT,              -- the node start (node_configs.config_id); NULL for a runtime indicator
    is_current BOOLEAN,            -- about the node's latest start; NULL: about no start in particular
    related_node VARCHAR, related_evidence VARCHAR,
    severity_rank INTEGER          -- critical 4, high 3, medium 2, low 1
);
