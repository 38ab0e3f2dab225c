-- nodes: per serving node and role, its affected responses (count, first, last, accounts).
-- Params: none
SELECT node, role, affected, first_affected, last_affected, accounts
FROM nodes
ORDER BY role, node NULLS LAST
