-- evidence_facts: what the affected responses' own records show of how they were served: prefilled on one
-- node and decoded on another (prefill/decode disaggregation), and a prefill side that computed one token
-- for a longer prompt (a placeholder). The documents state these only when the logs show them.
-- Params: none
SELECT
    count(*) FILTER (WHERE prefill_node IS NOT NULL AND decode_node IS NOT NULL AND prefill_node <> decode_node)
        AS pd_responses,
    count(*) FILTER (WHERE prefill_tokens = 1 AND prompt_tokens > 1) AS placeholder_responses
FROM affected
