WITH scoped AS (
  SELECT
    r.*,
    CASE WHEN ARRAY_CONTAINS(:models, r.model) THEN r.model ELSE r.model_other END AS matched_name,
    r.prompt_tokens >= (
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
    ) AS public_hit,
    r.prompt_tokens >= (
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
    ) AS engine_hit
  FROM requests AS r
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
      r.prompt_tokens IS NULL
      OR r.prompt_tokens >= LEAST(
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
        ),
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
        )
      )
    )
), judged AS (
  SELECT
    s.*,
    CASE WHEN :rule = 'public' THEN s.public_hit ELSE s.engine_hit END AS hit,
    CASE WHEN :rule = 'public' THEN s.engine_hit ELSE s.public_hit END AS other_hit
  FROM scoped AS s
)
SELECT
  j.*,
  (
    CASE
      WHEN (
        CASE
          WHEN j.prompt_tokens IS NULL AND j.outcome IN ('rejected', 'failed', 'aborted')
          THEN j.outcome
          WHEN j.prompt_tokens IS NULL
          THEN 'undecidable'
          WHEN NOT j.hit
          THEN 'other-rule'
          WHEN j.outcome = 'served'
          AND NOT (
            COALESCE(j.ts_granularity_s, 0) = 0
            OR (
              j.ts >= :window_start
              AND j.ts + j.ts_granularity_s * INTERVAL '1' SECOND - INTERVAL '1' MICROSECOND <= :window_end
            )
          )
          THEN 'possibly-affected'
          WHEN j.outcome = 'served'
          THEN 'affected'
          WHEN j.outcome IN ('rejected', 'failed', 'aborted')
          THEN j.outcome
          ELSE 'undecidable'
        END
      ) = 'affected'
      AND (
        COALESCE(
          j.prompt_parts > 1
          AND j.prompt_tokens >= (
            CASE :rule
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
          AND CEIL(j.prompt_tokens / j.prompt_parts) < (
            CASE :rule
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
          FALSE
        )
      )
      THEN 'possibly-affected'
      ELSE (
        CASE
          WHEN j.prompt_tokens IS NULL AND j.outcome IN ('rejected', 'failed', 'aborted')
          THEN j.outcome
          WHEN j.prompt_tokens IS NULL
          THEN 'undecidable'
          WHEN NOT j.hit
          THEN 'other-rule'
          WHEN j.outcome = 'served'
          AND NOT (
            COALESCE(j.ts_granularity_s, 0) = 0
            OR (
              j.ts >= :window_start
              AND j.ts + j.ts_granularity_s * INTERVAL '1' SECOND - INTERVAL '1' MICROSECOND <= :window_end
            )
          )
          THEN 'possibly-affected'
          WHEN j.outcome = 'served'
          THEN 'affected'
          WHEN j.outcome IN ('rejected', 'failed', 'aborted')
          THEN j.outcome
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
            j.prompt_parts > 1
            AND j.prompt_tokens >= (
              CASE :rule
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
            AND CEIL(j.prompt_tokens / j.prompt_parts) < (
              CASE :rule
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
            FALSE
          )
        )
        THEN 'the response has ' || j.prompt_parts || ' choices and usage.prompt_tokens ' || j.prompt_tokens || ' adds up their prompts (' || j.prompt_parts || ' samples of one prompt, or up to ' || j.prompt_parts || ' prompts): the longest prompt is between ' || CAST(CEIL(j.prompt_tokens / j.prompt_parts) AS BIGINT) || ' and ' || j.prompt_tokens || ' tokens, undecidable against ' || (
          CASE :rule
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
      END
    ),
    (
      CASE
        WHEN j.prompt_tokens IS NULL AND j.outcome IN ('rejected', 'failed', 'aborted')
        THEN NULL
        WHEN j.prompt_tokens IS NULL
        THEN 'prompt length unknown'
        WHEN j.hit AND j.outcome IS NULL
        THEN 'outcome unknown (no HTTP status, and no finish reason that says served or not: e.g. content_filter)'
      END
    )
  ) AS undecidable_reason,
  (
    CASE
      WHEN COALESCE(j.ts_granularity_s, 0) > 0
      THEN 'start known only to within ' || j.ts_granularity_s || ' s: [' || DATE_FORMAT(j.ts, 'yyyy-MM-dd\'T\'HH:mm:ss\'Z\'') || ', ' || DATE_FORMAT(j.ts + j.ts_granularity_s * INTERVAL '1' SECOND, 'yyyy-MM-dd\'T\'HH:mm:ss\'Z\'') || ')' || CASE
        WHEN (
          COALESCE(j.ts_granularity_s, 0) = 0
          OR (
            j.ts >= :window_start
            AND j.ts + j.ts_granularity_s * INTERVAL '1' SECOND - INTERVAL '1' MICROSECOND <= :window_end
          )
        )
        THEN ', inside the window'
        ELSE ', crossing a window edge'
      END
    END
  ) AS time_note
FROM judged AS j
