-- macros: helpers for reading engine start-up lines (SGLang key=value pairs, env values, versions).
-- Params: none. Defines the kva_* SQL macros used by the queries in queries/audit/.
--
-- A value is taken only when it is visibly complete: followed by `,` or `)` (the next pair or the end
-- of a repr). A value at the very end of a line is taken only when the caller knows the line is
-- complete, because a line cut by a log shipper can end in the middle of a number.

-- A key of the server_args dump in either shape: `key=` (ServerArgs(...) repr, up to 0.5.18) or
-- `'key': ` (the resolved_dict() dict, from 0.5.19); a value ends at `,`, `)` or `}`.
-- integer `key=N` / `'key': N`
CREATE OR REPLACE MACRO kva_int(msg, key) AS
    TRY_CAST(nullif(regexp_extract(msg, '(?:^|[ ,({])(?:' || key || '=|''' || key || ''': )(\d+)[,)}]', 1), '') AS BIGINT);
CREATE OR REPLACE MACRO kva_int_end(msg, key, complete) AS coalesce(kva_int(msg, key),
    CASE WHEN complete THEN TRY_CAST(nullif(regexp_extract(msg, '(?:^|[ ,(])' || key || '=(\d+)\s*$', 1), '') AS BIGINT) END);
-- `key=None` (an unset option)
CREATE OR REPLACE MACRO kva_is_none(msg, key) AS
    regexp_matches(msg, '(?:^|[ ,({])(?:' || key || '=|''' || key || ''': )None[,)}]');
-- quoted string `key='v'` or `key="v"`
CREATE OR REPLACE MACRO kva_str(msg, key) AS coalesce(
    nullif(regexp_extract(msg, '(?:^|[ ,({])(?:' || key || '=|''' || key || ''': )''([^'']*)''[,)}]', 1), ''),
    nullif(regexp_extract(msg, '(?:^|[ ,({])(?:' || key || '=|''' || key || ''': )"([^"]*)"[,)}]', 1), ''));
-- Python bool `key=True|False`
CREATE OR REPLACE MACRO kva_bool(msg, key) AS
    CASE regexp_extract(msg, '(?:^|[ ,({])(?:' || key || '=|''' || key || ''': )(True|False)[,)}]', 1) WHEN 'True' THEN true WHEN 'False' THEN false END;
-- A pasted configuration value: `key=v`, `key: v`, `--key v`, `--key=v` (`-` or `_` in the key, any case),
-- quotes stripped; in a launch command a value-less `--flag` reads as 'true'.
CREATE OR REPLACE MACRO kva_cfg_key(key) AS '(?i:' || replace(key, '_', '[-_]') || ')';
CREATE OR REPLACE MACRO kva_cfg(msg, key) AS coalesce(
    nullif(regexp_extract(msg, '(?:^|[\s,;{(])(?:--)?' || kva_cfg_key(key) || '\s*(?:=|:\s)\s*[''"]?([^''",\s;})]+)', 1), ''),
    nullif(regexp_extract(msg, '(?:^|\s)--' || kva_cfg_key(key) || '\s+[''"]?([^-''"\s][^''",\s;})]*)', 1), ''),
    CASE WHEN regexp_matches(msg, '(?:^|\s)--' || kva_cfg_key(key) || '(?:\s+--|\s*$)') THEN 'true' END);
CREATE OR REPLACE MACRO kva_cfg_int(msg, key) AS TRY_CAST(replace(kva_cfg(msg, key), ',', '') AS BIGINT);
-- an environment value in a dump line: KEY=v, export KEY=v, 'KEY': 'v' (os.environ repr), KEY: v
CREATE OR REPLACE MACRO kva_env(msg, key) AS
    CASE WHEN regexp_matches(msg, '(?:^|[\s,{(;])[''"]?' || key || '[''"]?\s*[=:]')
         THEN regexp_extract(msg, '(?:^|[\s,{(;])[''"]?' || key || '[''"]?\s*[=:]\s*[''"]?([^''",\s})]*)', 1) END;
-- an environment flag as a boolean (NULL when absent or not a recognisable flag value)
CREATE OR REPLACE MACRO kva_truthy(v) AS CASE
    WHEN v IS NULL THEN NULL
    WHEN lower(trim(v)) IN ('1', 'true', 'yes', 'on', 'y', 't') THEN true
    WHEN lower(trim(v)) IN ('0', 'false', 'no', 'off', 'n', 'f', '') THEN false
    ELSE NULL END;
-- a comma-grouped count (vLLM prints 2,042,016)
CREATE OR REPLACE MACRO kva_grouped(s) AS TRY_CAST(nullif(replace(s, ',', ''), '') AS BIGINT);
-- a release string as a comparable list [major, minor, patch, stage]; stage 0 = pre-release
-- (rc/dev/alpha/beta, older than the release), 1 = the release, 2 = a post-release
CREATE OR REPLACE MACRO kva_version_key(v) AS CASE
    WHEN v IS NULL OR NOT regexp_matches(v, '^v?\d+\.\d+') THEN NULL
    ELSE [TRY_CAST(regexp_extract(v, '^v?(\d+)', 1) AS INTEGER),
          TRY_CAST(regexp_extract(v, '^v?\d+\.(\d+)', 1) AS INTEGER),
          coalesce(TRY_CAST(nullif(regexp_extract(v, '^v?\d+\.\d+\.(\d+)', 1), '') AS INTEGER), 0),
          CASE WHEN regexp_matches(lower(v), '^v?\d+\.\d+(?:\.\d+)?[.-]?(?:rc|dev|a|b|alpha|beta|pre)') THEN 0
               WHEN regexp_matches(lower(v), '^v?\d+\.\d+(?:\.\d+)?[.-]?post') THEN 2
               ELSE 1 END] END;
-- a pasted configuration flag as a boolean
CREATE OR REPLACE MACRO kva_cfg_bool(msg, key) AS kva_truthy(kva_cfg(msg, key));
