-- parquet_clean: can the row-group statistics alone prove that no row of a typed Parquet source is bad?
-- Params: $files, $required, $nonneg, $nonempty
-- Returns one row: row groups, rows, and the row groups whose statistics do not prove the
-- parquet_typed adapter's bad-row conditions false (a required column with nulls or no null count, a
-- ts outside [1990, 2100) or without exact min/max, a count column with a negative or unknown min).
-- When that number is 0, quarantined = 0 exactly and no scan is needed; otherwise kvir scans.
WITH m AS (
    SELECT file_name, row_group_id, row_group_num_rows, path_in_schema, stats_null_count,
           stats_min_value, stats_max_value, min_is_exact, max_is_exact
    FROM parquet_metadata($files)
),
groups AS (
    SELECT file_name, row_group_id, any_value(row_group_num_rows) AS n_rows,
        bool_or(list_contains($required, path_in_schema) AND coalesce(stats_null_count, 1) > 0) AS maybe_null,
        bool_or(path_in_schema = 'ts' AND (stats_min_value IS NULL OR stats_max_value IS NULL
                OR NOT coalesce(min_is_exact, false) OR NOT coalesce(max_is_exact, false)
                OR TRY_CAST(stats_min_value AS TIMESTAMPTZ) < TIMESTAMPTZ '1990-01-01 00:00:00+00'
                OR TRY_CAST(stats_max_value AS TIMESTAMPTZ) >= TIMESTAMPTZ '2100-01-01 00:00:00+00'
                OR TRY_CAST(stats_min_value AS TIMESTAMPTZ) IS NULL)) AS maybe_bad_ts,
        bool_or(list_contains($nonempty, path_in_schema) AND (stats_min_value IS NULL OR stats_min_value = '')) AS maybe_empty,
        bool_or(list_contains($nonneg, path_in_schema) AND coalesce(TRY_CAST(stats_min_value AS DOUBLE), -1) < 0
                AND coalesce(stats_null_count, 1) < row_group_num_rows) AS maybe_negative
    FROM m
    GROUP BY file_name, row_group_id
)
SELECT count(*) AS row_groups, coalesce(sum(n_rows), 0) AS n_rows,
       count(*) FILTER (WHERE maybe_null OR maybe_bad_ts OR maybe_empty OR maybe_negative) AS unproven
FROM groups;
