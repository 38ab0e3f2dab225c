-- requests_direct: one row per request when every record already is one request (a single source with
-- unique ids and no PD copies): a view, so columnar inputs are never copied.
-- Params: none
CREATE OR REPLACE VIEW requests AS
SELECT r.request_id, r.ts, r.ts_extra_ns, r.ts_end, r.ts_granularity_s, r.account_id, r.model, r.model_other, r.prompt_tokens,
       r.cached_tokens, r.completion_tokens, r.http_status, r.outcome, r.finish_reason,
       r.prefill_node, r.decode_node, r.prefill_tokens, r.bootstrap_room,
       s.format AS source_format, coalesce(r.source_path, s.label) AS source_file, r.source_line, r.source_id,
       1 AS n_records, false AS conflict, NULL::VARCHAR AS prefill_outcome, [r.source_id] AS source_ids,
       NULL::VARCHAR AS join_method, NULL::VARCHAR[] AS joined_ids,
       r.prompt_parts, CASE WHEN r.prompt_index IS NOT NULL THEN 1 END AS prompts
FROM records AS r JOIN sources AS s USING (source_id);
