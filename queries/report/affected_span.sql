-- affected_span: the first and the last affected response, with the log record each comes from.
-- Params: none
SELECT * FROM (
    SELECT 'first' AS which, request_id, ts, account_id, account_label, prefill_node, decode_node,
           source_file, source_line
    FROM affected ORDER BY ts, request_id LIMIT 1
) AS f
UNION ALL
SELECT * FROM (
    SELECT 'last' AS which, request_id, ts, account_id, account_label, prefill_node, decode_node,
           source_file, source_line
    FROM affected ORDER BY ts DESC, request_id DESC LIMIT 1
) AS l
