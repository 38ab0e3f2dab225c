-- listed: the judged requests a mechanism lists as affected (triage_hits whose category is one of $listed),
-- each with its account's rule and the columns every report reads of them, written here once: the case
-- tables `affected` and `excluded` of every mechanism start with affected_row.* and excluded_row.*, then
-- add the mechanism's own columns (queries/mechanisms/<m>/triage/affected.sql, triage/excluded.sql).
-- Params: $listed, $rule_text
--   affected_row     request_id ... conflict as triage_hits holds them; account_label (incident.toml's
--                    [[accounts]] label); nodes ('prefill -> decode'); rule (the mechanism's rule, in words)
--   excluded_row     the columns of `excluded` (reason: why incident.toml excludes the account)
--   account_excluded incident.toml excludes the account: listed in `excluded`, never dropped
-- Temporary: a step between triage_hits and the case tables, not a table of the case.
CREATE OR REPLACE TEMP TABLE listed_hits AS
SELECT h.*,
    struct_pack(
        request_id := h.request_id,
        ts := h.ts,
        ts_end := h.ts_end,
        account_id := h.account_id,
        account_label := a.label,
        model := h.model,
        matched_name := h.matched_name,       -- the request's name that equals an alias of incident.toml's models
        prompt_tokens := h.prompt_tokens,
        prefill_tokens := h.prefill_tokens,
        completion_tokens := h.completion_tokens,
        http_status := h.http_status,
        finish_reason := h.finish_reason,
        prefill_node := h.prefill_node,
        decode_node := h.decode_node,
        nodes := concat_ws(' -> ', h.prefill_node, h.decode_node),
        source_format := h.source_format,
        source_file := h.source_file,
        source_line := h.source_line,
        n_records := h.n_records,
        conflict := h.conflict,
        rule := $rule_text
    ) AS affected_row,
    struct_pack(
        request_id := h.request_id,
        ts := h.ts,
        account_id := h.account_id,
        account_label := a.label,
        reason := a.reason,
        model := h.model,
        prompt_tokens := h.prompt_tokens,
        http_status := h.http_status,
        prefill_node := h.prefill_node,
        decode_node := h.decode_node,
        source_file := h.source_file,
        source_line := h.source_line
    ) AS excluded_row,
    coalesce(a.exclude, false) AS account_excluded
FROM triage_hits AS h
LEFT JOIN account_rules AS a ON a.account_id = h.account_id
WHERE list_contains($listed, h.category);
