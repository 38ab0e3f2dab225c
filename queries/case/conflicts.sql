-- conflicts: list every merged request whose records disagree, with each value seen and what the merge chose.
-- Params: none
-- Runs after case/requests_merged (request_members, requests_grouped) and case/conflicts_table.
-- account_candidates: the accounts of the records that rank highest by the merge's account order (authority,
-- an incident model, served, the longest prompt), when they are more than one: a tie (requests_merged names no
-- account then).
INSERT INTO conflicts BY NAME
WITH members AS (
    SELECT m.*, (m.p_account, m.x_model, m.x_outcome, coalesce(m.prompt_tokens, -1)) AS account_rank,
           coalesce(m.prefill_node, CASE WHEN m.role = 'prefill' THEN m.node END) AS pn,
           coalesce(m.decode_node, CASE WHEN m.role = 'decode' THEN m.node END) AS dn
    FROM request_members AS m
    WHERE m.merged_id IN (SELECT request_id FROM requests_grouped WHERE conflict)
),
top AS (
    SELECT merged_id, max(account_rank) FILTER (WHERE account_id IS NOT NULL) AS account_top FROM members GROUP BY ALL
)
SELECT m.merged_id AS request_id, any_value(g.n_records) AS n_records,
    list_filter(['prompt_tokens', 'outcome', 'model', 'account_id', 'bootstrap_room', 'prefill_node', 'decode_node'],
                lambda f, i: [
        count(DISTINCT m.prompt_tokens) FILTER (WHERE m.role IS DISTINCT FROM 'prefill') > 1,
        count(DISTINCT m.outcome) FILTER (WHERE m.role IS DISTINCT FROM 'prefill') > 1,
        count(DISTINCT m.model_key) FILTER (WHERE m.role IS DISTINCT FROM 'prefill') > 1,
        count(DISTINCT m.account_id) > 1,
        bool_or(m.room_reused),
        count(DISTINCT m.pn) > 1,
        count(DISTINCT m.dn) > 1][i]) AS fields,
    list_sort(list(DISTINCT m.prompt_tokens) FILTER (WHERE m.role IS DISTINCT FROM 'prefill' AND m.prompt_tokens IS NOT NULL))
        AS prompt_tokens_seen,
    list_sort(list(DISTINCT m.outcome) FILTER (WHERE m.role IS DISTINCT FROM 'prefill' AND m.outcome IS NOT NULL))
        AS outcomes_seen,
    list_sort(list(DISTINCT m.model) FILTER (WHERE m.role IS DISTINCT FROM 'prefill' AND m.model IS NOT NULL)) AS models_seen,
    list_sort(list(DISTINCT m.account_id) FILTER (WHERE m.account_id IS NOT NULL)) AS accounts_seen,
    any_value(g.prompt_tokens) AS prompt_tokens, any_value(g.outcome) AS outcome, any_value(g.model) AS model,
    any_value(g.account_id) AS account_id,
    list_sort(list(coalesce(m.source_path, s.label) || ':' || m.source_line)) AS records,
    'authority first (outcome, status and model: gateway > decode > mixed > prefill; prompt length: decode > '
    || 'mixed > gateway > prefill; account: gateway), then the most exposing reading among records of equal '
    || 'authority (largest prompt; served > failed > aborted > rejected; an incident model); the account of the '
    || 'most exposing record; records exposing alike that name different accounts are a tie: no account is chosen, '
    || 'each is listed in account_candidates (to be notified as possibly affected); the node of the record the '
    || 'outcome comes from (none on a tie); a name never decides, line order never decides'
    || CASE WHEN bool_or(m.room_reused) THEN '; bootstrap_room ' || any_value(m.pd_room) || ' is reused by '
            || any_value(rr.requests) || ' requests (rids differ): each non-prefill rid is one request, a prefill copy '
            || 'joins the one nearest in time (none when two are equally near)'
            ELSE '' END AS rule,
    CASE WHEN count(DISTINCT m.account_id) FILTER (WHERE m.account_rank = t.account_top) > 1
         THEN list_sort(list(DISTINCT m.account_id) FILTER (WHERE m.account_rank = t.account_top)) END AS account_candidates,
    list_sort(list(DISTINCT m.pn) FILTER (WHERE m.pn IS NOT NULL)) AS prefill_nodes_seen,
    list_sort(list(DISTINCT m.dn) FILTER (WHERE m.dn IS NOT NULL)) AS decode_nodes_seen
FROM members AS m
JOIN top AS t ON t.merged_id = m.merged_id
JOIN requests_grouped AS g ON g.request_id = m.merged_id AND g.conflict
JOIN sources AS s ON s.source_id = m.source_id
LEFT JOIN (SELECT pd_room, count(DISTINCT pd_key) AS requests FROM room_keys GROUP BY ALL) AS rr ON rr.pd_room = m.pd_room
GROUP BY m.merged_id;
