-- findings: the audit's findings, most severe first.
-- Params: none
SELECT rule_id, severity, node, role, ts, title, message, fix, evidence_file, evidence_line
FROM findings
ORDER BY CASE lower(severity) WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2
                              WHEN 'warning' THEN 2 WHEN 'low' THEN 3 ELSE 4 END,
         ts, node, rule_id
