-- conflicts: list every merged request whose records disagree, with each value seen and what the merge chose.
-- Params: none
-- Runs after case/requests_merged (request_members, requests_grouped) and case/conflicts_table.
INSERT INTO conflicts
SELECT m.merged_id AS request_id, any_value(g.n_records) AS n_records,
    list_filter(['prompt_tokens', 'outcome', 'model', 'account_id', 'bootstrap_room'], lambda f, i: [
        count(DISTINCT m.prompt_tokens) FILTER (WHERE m.role IS DISTINCT FROM 'prefill') > 1,
        count(DISTINCT m.outcome) FILTER (WHERE m.role IS DISTINCT FROM 'prefill') > 1,
        count(DISTINCT m.model_key) FILTER (WHERE m.role IS DISTINCT FROM 'prefill') > 1,
        count(DISTINCT m.account_id) > 1,
        bool_or(m.room_reused)][i]) AS fields,
    list_sort(list(DISTINCT m.prompt_tokens) FILTER (WHERE m.role IS DISTINCT FROM 'prefill' AND m.prompt_tokens IS NOT NULL)),
    list_sort(list(DISTINCT m.outcome) FILTER (WHERE m.role IS DISTINCT FROM 'prefill' AND m.outcome IS NOT NULL)),
    list_sort(list(DISTINCT m.model) FILTER (WHERE m.role IS DISTINCT FROM 'prefill' AND m.model IS NOT NULL)),
    list_sort(list(DISTINCT m.account_id) FILTER (WHERE m.account_id IS NOT NULL)),
    any_value(g.prompt_tokens), any_value(g.outcome), any_value(g.model), any_value(g.account_id),
    list_sort(list(coalesce(m.source_path, s.label) || ':' || m.source_line)),
    'authority first (outcome, status and model: gateway > decode > mixed > prefill; prompt length: decode > '
    || 'mixed > gateway > prefill; account: gateway), then the most exposing reading among records of equal '
    || 'authority (largest prompt; served > failed > aborted > rejected; an incident model); the account of the '
    || 'most exposing record (by name only among records exposing alike: notify every account seen); line order never decides'
    || CASE WHEN bool_or(m.room_reused) THEN '; bootstrap_room ' || any_value(m.pd_room) || ' is reused by '
            || any_value(rr.requests) || ' requests (rids differ): each non-prefill rid is one request, a prefill copy joins the one nearest in time'
            ELSE '' END
FROM request_members AS m
JOIN requests_grouped AS g ON g.request_id = m.merged_id AND g.conflict
JOIN sources AS s ON s.source_id = m.source_id
LEFT JOIN (SELECT pd_room, count(DISTINCT pd_key) AS requests FROM room_keys GROUP BY ALL) AS rr ON rr.pd_room = m.pd_room
GROUP BY m.merged_id;
