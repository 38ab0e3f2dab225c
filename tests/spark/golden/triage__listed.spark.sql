SELECT
  h.*,
  STRUCT(
    h.request_id AS request_id,
    h.ts AS ts,
    h.ts_end AS ts_end,
    h.account_id AS account_id,
    a.label AS account_label,
    h.model AS model,
    h.matched_name AS matched_name,
    h.prompt_tokens AS prompt_tokens,
    h.prefill_tokens AS prefill_tokens,
    h.completion_tokens AS completion_tokens,
    h.http_status AS http_status,
    h.finish_reason AS finish_reason,
    h.prefill_node AS prefill_node,
    h.decode_node AS decode_node,
    CONCAT_WS(' -> ', h.prefill_node, h.decode_node) AS nodes,
    h.source_format AS source_format,
    h.source_file AS source_file,
    h.source_line AS source_line,
    h.n_records AS n_records,
    h.conflict AS conflict,
    :rule_text AS rule
  ) AS affected_row,
  STRUCT(
    h.request_id AS request_id,
    h.ts AS ts,
    h.account_id AS account_id,
    a.label AS account_label,
    a.reason AS reason,
    h.model AS model,
    h.prompt_tokens AS prompt_tokens,
    h.http_status AS http_status,
    h.prefill_node AS prefill_node,
    h.decode_node AS decode_node,
    h.source_file AS source_file,
    h.source_line AS source_line
  ) AS excluded_row,
  COALESCE(a.exclude, FALSE) AS account_excluded
FROM triage_hits AS h
LEFT JOIN account_rules AS a
  ON a.account_id = h.account_id
WHERE
  ARRAY_CONTAINS(:listed, h.category)
