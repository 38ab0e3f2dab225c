-- hits: the prefix-cache mechanism's verdict on every request of the incident's model inside the window:
-- the case table triage_hits (the columns every mechanism's triage_hits has, so triage/listed, accounts,
-- nodes and the headline read it unchanged, then the mechanism's own).
-- Params: $models, $window_start, $window_end, $lifetime_s, $instances
--
-- What logs can prove, from lengths alone (a lower bound; `kvir replay` settles it where the evidence holds
-- the prompt's tokens): a response served with cached_tokens > 0 read cached blocks that some earlier
-- request on the SAME instance computed within the cache's lifetime, and a request can only have left
-- blocks for as many tokens as its prompt had.
--   instance     prefill_node, else decode_node (the engine instance whose cache served the prompt), else
--                'unknown' (one pool for requests whose log names no instance); limited to $instances
--                ([prefix_cache] instances) when the spec names them
--   tenant       account_id (a request with no account cannot be judged when it hit the cache)
--   earlier      started before (ties in time: earlier in its source, then by id), on the same instance,
--                ended no more than $lifetime_s before this one started (NULL: unbounded, not known)
--   same-tenant source    an earlier request of the same tenant with prompt_tokens >= cached_tokens
--   source tenants        the other tenants of earlier requests with prompt_tokens >= cached_tokens (a
--                request of unknown length or without an account names no tenant: it is counted, not listed)
-- Categories (a served response, HTTP 2xx / finish stop or length):
--   affected           cached_tokens > 0 and no same-tenant source: another tenant's blocks (or blocks
--                      from before the logs begin) were served
--   possibly-affected  a same-tenant source exists, and so does another tenant's candidate
--   clean              only the same tenant could have written the blocks (cached_tokens = 0: not kept here)
--   undecidable        the source carries no cached_tokens, or a cache hit without a tenant, or an outcome
--                      that is not known ("cannot decide": never counted as clean)
--   not-served         rejected, failed or aborted: nothing reached the client
-- prefix_cache_scope (a temporary table: a view cannot hold parameters; read by triage/counts too): every request of the model on
-- a cache instance up to the window's end, numbered in time order, with `in_window` for the window's own
CREATE OR REPLACE TEMP TABLE prefix_cache_scope AS
SELECT r.*,
    coalesce(r.prefill_node, r.decode_node, 'unknown') AS instance,
    CASE WHEN list_contains($models, r.model) THEN r.model ELSE r.model_other END AS matched_name,
    row_number() OVER (ORDER BY r.ts, r.source_file, r.source_line, r.request_id) AS seq,
    r.ts >= $window_start AND NOT (r.ts = $window_end AND coalesce(r.ts_extra_ns, 0) > 0) AS in_window
FROM requests AS r
WHERE (r.model IN (SELECT unnest($models)) OR r.model_other IN (SELECT unnest($models)))
  AND (len($instances) = 0 OR coalesce(r.prefill_node, r.decode_node) IN (SELECT unnest($instances)))
  AND r.ts <= $window_end;

-- prefix_cache_sources (temporary): per judged hit, whether a same-tenant source exists and the other tenants'.
-- Without a lifetime a tenant had sent >= N tokens before a hit iff its longest request so far on that
-- instance had: one as-of lookup per hit and tenant of the instance (hits x tenants, never hits x requests).
-- With a lifetime an old long request expires while a shorter later one stays: every earlier request within
-- the lifetime is compared (a range join; its cost grows with the requests inside one lifetime).
CREATE OR REPLACE TEMP TABLE prefix_cache_sources AS
WITH hits AS (
    SELECT seq, ts, instance, account_id, cached_tokens FROM prefix_cache_scope
    WHERE in_window AND cached_tokens > 0 AND account_id IS NOT NULL AND outcome = 'served'
),
known AS (          -- in scope or not: an earlier request primes the cache
    SELECT seq, ts, ts_end, instance, account_id, prompt_tokens,
        max(prompt_tokens) OVER (PARTITION BY instance, account_id ORDER BY seq ROWS UNBOUNDED PRECEDING) AS longest
    FROM prefix_cache_scope WHERE prompt_tokens IS NOT NULL AND account_id IS NOT NULL
),
hit_tenant AS (     -- each unbounded-lifetime hit beside every tenant seen on its instance
    SELECT h.*, t.account_id AS other
    FROM hits AS h JOIN (SELECT DISTINCT instance, account_id FROM known) AS t ON t.instance = h.instance
    WHERE $lifetime_s IS NULL
),
pairs AS (
    SELECT ht.seq, ht.account_id, ht.cached_tokens, k.account_id AS source_tenant, k.longest AS source_tokens
    FROM hit_tenant AS ht ASOF JOIN known AS k
      ON k.instance = ht.instance AND k.account_id = ht.other AND ht.seq > k.seq
    UNION ALL
    SELECT h.seq, h.account_id, h.cached_tokens, k.account_id, k.prompt_tokens
    FROM hits AS h JOIN known AS k ON k.instance = h.instance AND k.seq < h.seq
    WHERE $lifetime_s IS NOT NULL AND coalesce(k.ts_end, k.ts) >= h.ts - to_seconds($lifetime_s::DOUBLE)
)
SELECT seq,
    bool_or(source_tenant = account_id AND source_tokens >= cached_tokens) AS same_tenant_source,
    list_sort(list_distinct(list(source_tenant)
        FILTER (WHERE source_tenant <> account_id AND source_tokens >= cached_tokens))) AS source_tenants
FROM pairs
GROUP BY seq;

CREATE OR REPLACE TABLE triage_hits AS
SELECT sc.*,
    sc.account_id AS tenant,
    coalesce(src.source_tenants, []::VARCHAR[]) AS source_tenants,
    CASE
        WHEN sc.outcome IS NULL THEN 'undecidable'
        WHEN sc.outcome <> 'served' THEN 'not-served'
        WHEN sc.cached_tokens IS NULL THEN 'undecidable'
        WHEN sc.cached_tokens = 0 THEN 'clean'
        WHEN sc.account_id IS NULL THEN 'undecidable'
        WHEN NOT coalesce(src.same_tenant_source, false) THEN 'affected'
        WHEN len(coalesce(src.source_tenants, [])) > 0 THEN 'possibly-affected'
        ELSE 'clean'
    END AS category,
    CASE
        WHEN sc.outcome IS NULL THEN 'outcome unknown'
        WHEN sc.outcome <> 'served' THEN NULL
        WHEN sc.cached_tokens IS NULL THEN 'no cached_tokens in the source (' || sc.source_format || ')'
        WHEN sc.cached_tokens > 0 AND sc.account_id IS NULL THEN 'a cache hit without an account'
    END AS undecidable_reason,
    sc.cached_tokens > 0 AS hit,
    false AS other_hit
FROM prefix_cache_scope AS sc
LEFT JOIN prefix_cache_sources AS src ON src.seq = sc.seq
WHERE sc.in_window AND sc.cached_tokens > 0;      -- the rest is counted (triage/counts), not copied
