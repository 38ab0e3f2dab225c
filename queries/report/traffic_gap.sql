-- traffic_gap: the longest pause in customer traffic to the model that starts at or after
-- $search_from: the model made private (last customer request before it) and public again (first
-- customer request after it), as the traffic shows it.
-- Params: $models, $search_from, $min_gap_s
-- Customer traffic = requests with a known account that incident.toml does not label (labelled
-- accounts, e.g. the provider's own tests, go on while the model is private). Pauses shorter than
-- $min_gap_s seconds are ordinary quiet periods and are not reported.
WITH t AS (
    SELECT q.request_id, q.ts, q.source_file, q.source_line
    FROM requests AS q
    WHERE (list_contains($models, q.model) OR list_contains($models, q.model_other))
      AND q.account_id IS NOT NULL
      AND q.account_id NOT IN (SELECT account_id FROM account_rules)
),
g AS (
    SELECT lag(request_id) OVER w AS before_id, lag(ts) OVER w AS before_ts,
           lag(source_file) OVER w AS before_file, lag(source_line) OVER w AS before_line,
           request_id AS after_id, ts AS after_ts, source_file AS after_file, source_line AS after_line
    FROM t
    WINDOW w AS (ORDER BY ts, request_id)
)
SELECT before_id, before_ts, before_file, before_line, after_id, after_ts, after_file, after_line,
       epoch(after_ts) - epoch(before_ts) AS gap_s
FROM g
WHERE before_ts IS NOT NULL AND before_ts >= $search_from
  AND epoch(after_ts) - epoch(before_ts) >= $min_gap_s
ORDER BY gap_s DESC, before_ts
LIMIT 1
