WITH cfg AS (
  SELECT
    n.config_id,
    n.node,
    n.ts,
    n.pool_tokens,
    n.context_len,
    COALESCE(n.engine, :engine) AS engine,
    n.evidence_file,
    n.evidence_line
  FROM node_configs AS n
), floor_ AS (
  SELECT
    LEAST(
      g.public_lo,
      g.engine_lo,
      COALESCE(
        MIN(
          (
            CASE 'public'
              WHEN 'public'
              THEN cfg.pool_tokens + 1
              WHEN 'engine'
              THEN (
                CASE cfg.engine
                  WHEN 'sglang'
                  THEN (
                    LEAST(cfg.context_len - 1, cfg.pool_tokens - 1) - 5
                  )
                  WHEN 'vllm'
                  THEN cfg.context_len
                END
              )
            END
          )
        ),
        g.engine_lo
      ),
      COALESCE(
        MIN(
          (
            CASE 'engine'
              WHEN 'public'
              THEN cfg.pool_tokens + 1
              WHEN 'engine'
              THEN (
                CASE cfg.engine
                  WHEN 'sglang'
                  THEN (
                    LEAST(cfg.context_len - 1, cfg.pool_tokens - 1) - 5
                  )
                  WHEN 'vllm'
                  THEN cfg.context_len
                END
              )
            END
          )
        ),
        g.engine_lo
      )
    ) AS lo
  FROM cfg, (
    SELECT
      (
        CASE 'public'
          WHEN 'public'
          THEN :pool_tokens + 1
          WHEN 'engine'
          THEN (
            CASE :engine
              WHEN 'sglang'
              THEN (
                LEAST(:context_tokens - 1, :pool_tokens - 1) - 5
              )
              WHEN 'vllm'
              THEN :context_tokens
            END
          )
        END
      ) AS public_lo,
      COALESCE(
        (
          CASE 'engine'
            WHEN 'public'
            THEN :pool_tokens + 1
            WHEN 'engine'
            THEN (
              CASE :engine
                WHEN 'sglang'
                THEN (
                  LEAST(:context_tokens - 1, :pool_tokens - 1) - 5
                )
                WHEN 'vllm'
                THEN :context_tokens
              END
            )
          END
        ),
        (
          CASE 'public'
            WHEN 'public'
            THEN :pool_tokens + 1
            WHEN 'engine'
            THEN (
              CASE :engine
                WHEN 'sglang'
                THEN (
                  LEAST(:context_tokens - 1, :pool_tokens - 1) - 5
                )
                WHEN 'vllm'
                THEN :context_tokens
              END
            )
          END
        )
      ) AS engine_lo
  ) AS g
  GROUP BY
    g.public_lo,
    g.engine_lo
), scoped AS (
  SELECT
    r.*,
    ROW_NUMBER() OVER (ORDER BY r.request_id NULLS LAST, r.ts NULLS LAST) AS k_row,
    CASE WHEN ARRAY_CONTAINS(:models, r.model) THEN r.model ELSE r.model_other END AS matched_name
  FROM requests AS r, floor_ AS f
  WHERE
    (
      r.model IN (
        SELECT
          EXPLODE(:models)
      )
      OR r.model_other IN (
        SELECT
          EXPLODE(:models)
      )
    )
    AND r.ts <= :window_end
    AND NOT (
      r.ts = :window_end AND COALESCE(r.ts_extra_ns, 0) > 0
    )
    AND r.ts > :window_start - INTERVAL '1' DAY
    AND (
      r.ts >= :window_start
      OR (
        COALESCE(r.ts_granularity_s, 0) > 0
        AND r.ts + r.ts_granularity_s * INTERVAL '1' SECOND > :window_start
      )
    )
    AND (
      r.prompt_tokens IS NULL OR r.prompt_tokens >= f.lo
    )
), interleaved AS (
  SELECT
    c.node,
    c.ts,
    0 AS k,
    c.config_id,
    CAST(NULL AS BIGINT) AS k_row
  FROM cfg AS c
  WHERE
    NOT c.ts IS NULL
  UNION ALL
  SELECT
    s.prefill_node,
    s.ts,
    1 AS k,
    CAST(NULL AS BIGINT),
    s.k_row
  FROM scoped AS s
  WHERE
    NOT s.prefill_node IS NULL
), latest AS (
  SELECT
    i.k_row,
    i.k,
    LAST_VALUE(i.config_id) IGNORE NULLS OVER (
      PARTITION BY i.node
      ORDER BY i.ts NULLS LAST, i.k NULLS LAST
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS config_id
  FROM interleaved AS i
), matched AS (
  SELECT
    s.*,
    c.config_id,
    c.ts AS config_ts,
    c.pool_tokens AS cfg_pool,
    c.context_len AS cfg_context,
    c.engine AS cfg_engine,
    c.evidence_file || ':' || c.evidence_line AS config_evidence,
    s.prefill_node IN (
      SELECT DISTINCT
        node
      FROM cfg
    ) AS node_known
  FROM scoped AS s
  LEFT JOIN (
    SELECT
      k_row,
      config_id
    FROM latest
    WHERE
      k = 1
  ) AS a
    ON a.k_row = s.k_row
  LEFT JOIN cfg AS c
    ON c.config_id = a.config_id
), ruled AS (
  SELECT
    m.*,
    COALESCE(m.cfg_pool, :pool_tokens) AS pool_in_effect,
    CASE WHEN NOT m.cfg_pool IS NULL THEN m.cfg_context END AS context_in_effect,
    CASE WHEN NOT m.cfg_pool IS NULL THEN m.cfg_context ELSE :context_tokens END AS context_for_rule,
    COALESCE(m.cfg_engine, :engine) AS engine_for_rule,
    CASE
      WHEN NOT m.cfg_pool IS NULL AND m.cfg_context IS NULL
      THEN 'node start (context not shown: SGLang limit = pool - 6)'
      WHEN NOT m.cfg_pool IS NULL
      THEN 'node start'
      WHEN m.prefill_node IS NULL
      THEN 'global: the request names no prefill node'
      WHEN NOT COALESCE(m.node_known, FALSE)
      THEN 'global: no start-up log for node ' || m.prefill_node
      WHEN m.config_id IS NULL
      THEN 'global: request before the first start of ' || m.prefill_node
      ELSE 'global: the pool is not in the start-up evidence of ' || m.prefill_node
    END AS threshold_source
  FROM matched AS m
), judged AS (
  SELECT
    r.*,
    (
      CASE r.engine_for_rule
        WHEN 'sglang'
        THEN (
          LEAST(r.context_for_rule - 1, r.pool_in_effect - 1) - 5
        )
        WHEN 'vllm'
        THEN r.context_for_rule
      END
    ) AS engine_limit_in_effect,
    r.prompt_tokens >= (
      CASE 'public'
        WHEN 'public'
        THEN r.pool_in_effect + 1
        WHEN 'engine'
        THEN (
          CASE r.engine_for_rule
            WHEN 'sglang'
            THEN (
              LEAST(r.context_for_rule - 1, r.pool_in_effect - 1) - 5
            )
            WHEN 'vllm'
            THEN r.context_for_rule
          END
        )
      END
    ) AS public_hit,
    r.prompt_tokens >= (
      CASE 'engine'
        WHEN 'public'
        THEN r.pool_in_effect + 1
        WHEN 'engine'
        THEN (
          CASE r.engine_for_rule
            WHEN 'sglang'
            THEN (
              LEAST(r.context_for_rule - 1, r.pool_in_effect - 1) - 5
            )
            WHEN 'vllm'
            THEN r.context_for_rule
          END
        )
      END
    ) AS engine_hit
  FROM ruled AS r
), decided AS (
  SELECT
    j.*,
    CASE WHEN :rule = 'public' THEN j.public_hit ELSE j.engine_hit END AS hit,
    CASE WHEN :rule = 'public' THEN j.engine_hit ELSE j.public_hit END AS other_hit
  FROM judged AS j
  WHERE
    j.prompt_tokens IS NULL OR j.public_hit OR j.engine_hit
)
SELECT
  d.*
  EXCEPT (k_row, config_id, cfg_pool, cfg_context, cfg_engine, context_for_rule, engine_for_rule, node_known, pool_in_effect, context_in_effect, engine_limit_in_effect, config_ts, config_evidence, threshold_source, public_hit, engine_hit, hit, other_hit),
  d.public_hit,
  d.engine_hit,
  d.hit,
  d.other_hit,
  (
    CASE
      WHEN (
        CASE
          WHEN d.prompt_tokens IS NULL AND d.outcome IN ('rejected', 'failed', 'aborted')
          THEN d.outcome
          WHEN d.prompt_tokens IS NULL
          THEN 'undecidable'
          WHEN NOT d.hit
          THEN 'other-rule'
          WHEN d.outcome = 'served'
          AND NOT (
            COALESCE(d.ts_granularity_s, 0) = 0
            OR (
              d.ts >= :window_start
              AND d.ts + d.ts_granularity_s * INTERVAL '1' SECOND - INTERVAL '1' MICROSECOND <= :window_end
            )
          )
          THEN 'possibly-affected'
          WHEN d.outcome = 'served'
          THEN 'affected'
          WHEN d.outcome IN ('rejected', 'failed', 'aborted')
          THEN d.outcome
          ELSE 'undecidable'
        END
      ) = 'affected'
      AND (
        COALESCE(
          d.prompt_parts > 1
          AND d.prompt_tokens >= (
            CASE :rule
              WHEN 'public'
              THEN d.pool_in_effect + 1
              WHEN 'engine'
              THEN (
                CASE d.engine_for_rule
                  WHEN 'sglang'
                  THEN (
                    LEAST(d.context_for_rule - 1, d.pool_in_effect - 1) - 5
                  )
                  WHEN 'vllm'
                  THEN d.context_for_rule
                END
              )
            END
          )
          AND CEIL(d.prompt_tokens / d.prompt_parts) < (
            CASE :rule
              WHEN 'public'
              THEN d.pool_in_effect + 1
              WHEN 'engine'
              THEN (
                CASE d.engine_for_rule
                  WHEN 'sglang'
                  THEN (
                    LEAST(d.context_for_rule - 1, d.pool_in_effect - 1) - 5
                  )
                  WHEN 'vllm'
                  THEN d.context_for_rule
                END
              )
            END
          ),
          FALSE
        )
      )
      THEN 'possibly-affected'
      ELSE (
        CASE
          WHEN d.prompt_tokens IS NULL AND d.outcome IN ('rejected', 'failed', 'aborted')
          THEN d.outcome
          WHEN d.prompt_tokens IS NULL
          THEN 'undecidable'
          WHEN NOT d.hit
          THEN 'other-rule'
          WHEN d.outcome = 'served'
          AND NOT (
            COALESCE(d.ts_granularity_s, 0) = 0
            OR (
              d.ts >= :window_start
              AND d.ts + d.ts_granularity_s * INTERVAL '1' SECOND - INTERVAL '1' MICROSECOND <= :window_end
            )
          )
          THEN 'possibly-affected'
          WHEN d.outcome = 'served'
          THEN 'affected'
          WHEN d.outcome IN ('rejected', 'failed', 'aborted')
          THEN d.outcome
          ELSE 'undecidable'
        END
      )
    END
  ) AS category,
  COALESCE(
    (
      CASE
        WHEN (
          COALESCE(
            d.prompt_parts > 1
            AND d.prompt_tokens >= (
              CASE :rule
                WHEN 'public'
                THEN d.pool_in_effect + 1
                WHEN 'engine'
                THEN (
                  CASE d.engine_for_rule
                    WHEN 'sglang'
                    THEN (
                      LEAST(d.context_for_rule - 1, d.pool_in_effect - 1) - 5
                    )
                    WHEN 'vllm'
                    THEN d.context_for_rule
                  END
                )
              END
            )
            AND CEIL(d.prompt_tokens / d.prompt_parts) < (
              CASE :rule
                WHEN 'public'
                THEN d.pool_in_effect + 1
                WHEN 'engine'
                THEN (
                  CASE d.engine_for_rule
                    WHEN 'sglang'
                    THEN (
                      LEAST(d.context_for_rule - 1, d.pool_in_effect - 1) - 5
                    )
                    WHEN 'vllm'
                    THEN d.context_for_rule
                  END
                )
              END
            ),
            FALSE
          )
        )
        THEN 'the response has ' || d.prompt_parts || ' choices and usage.prompt_tokens ' || d.prompt_tokens || ' adds up their prompts (' || d.prompt_parts || ' samples of one prompt, or up to ' || d.prompt_parts || ' prompts): the longest prompt is between ' || CAST(CEIL(d.prompt_tokens / d.prompt_parts) AS BIGINT) || ' and ' || d.prompt_tokens || ' tokens, undecidable against ' || (
          CASE :rule
            WHEN 'public'
            THEN d.pool_in_effect + 1
            WHEN 'engine'
            THEN (
              CASE d.engine_for_rule
                WHEN 'sglang'
                THEN (
                  LEAST(d.context_for_rule - 1, d.pool_in_effect - 1) - 5
                )
                WHEN 'vllm'
                THEN d.context_for_rule
              END
            )
          END
        )
      END
    ),
    (
      CASE
        WHEN d.prompt_tokens IS NULL AND d.outcome IN ('rejected', 'failed', 'aborted')
        THEN NULL
        WHEN d.prompt_tokens IS NULL
        THEN 'prompt length unknown'
        WHEN d.hit AND d.outcome IS NULL
        THEN 'outcome unknown (no HTTP status, and no finish reason that says served or not: e.g. content_filter)'
      END
    )
  ) AS undecidable_reason,
  (
    CASE
      WHEN COALESCE(d.ts_granularity_s, 0) > 0
      THEN 'start known only to within ' || d.ts_granularity_s || ' s: [' || DATE_FORMAT(d.ts, 'yyyy-MM-dd\'T\'HH:mm:ss\'Z\'') || ', ' || DATE_FORMAT(d.ts + d.ts_granularity_s * INTERVAL '1' SECOND, 'yyyy-MM-dd\'T\'HH:mm:ss\'Z\'') || ')' || CASE
        WHEN (
          COALESCE(d.ts_granularity_s, 0) = 0
          OR (
            d.ts >= :window_start
            AND d.ts + d.ts_granularity_s * INTERVAL '1' SECOND - INTERVAL '1' MICROSECOND <= :window_end
          )
        )
        THEN ', inside the window'
        ELSE ', crossing a window edge'
      END
    END
  ) AS time_note,
  d.pool_in_effect,
  d.context_in_effect,
  d.engine_limit_in_effect,
  d.config_ts,
  d.config_evidence,
  d.threshold_source
FROM decided AS d
