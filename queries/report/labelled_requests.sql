-- labelled_requests: the first and the last request of each labelled account (the reporting
-- researcher's, the provider's own tests) to the incident's model, with how many it sent and how
-- many were affected.
-- Params: $models
WITH r AS (
    SELECT q.request_id, q.ts, q.account_id, a.label, q.prompt_tokens, q.outcome, q.http_status,
           q.source_file, q.source_line,
           row_number() OVER (PARTITION BY q.account_id ORDER BY q.ts, q.request_id) AS rn_first,
           row_number() OVER (PARTITION BY q.account_id ORDER BY q.ts DESC, q.request_id DESC) AS rn_last,
           count(*) OVER (PARTITION BY q.account_id) AS n_requests
    FROM requests AS q
    JOIN account_rules AS a ON a.account_id = q.account_id
    WHERE (list_contains($models, q.model) OR list_contains($models, q.model_other))
)
SELECT CASE WHEN r.rn_first = 1 THEN 'first' ELSE 'last' END AS which,
       r.request_id, r.ts, r.account_id, r.label, r.prompt_tokens, r.outcome, r.http_status,
       r.source_file, r.source_line, r.n_requests,
       (SELECT count(*) FROM affected AS f WHERE f.account_id = r.account_id) AS n_affected
FROM r
WHERE r.rn_first = 1 OR r.rn_last = 1
ORDER BY r.ts, r.request_id
