-- startup_lines: the start-up, configuration and runtime-indicator lines of one engine log (SGLang or vLLM), one row each, values parsed.
-- Params: none
-- Inputs: __input__ (numbered text lines of one or more files: file_id, line_no, line (VARCHAR, no terminator), line_bytes, cri_open), __settings__ (one row per file: file_id, tz_iana, tz_offset_min, year, max_line_bytes)
--
-- Prefixes peeled, in order (SGLang's configure_logger and vLLM's logger formats, as the golden and real fixtures under tests/fixtures show):
--   container runtime  `2026-08-27T05:00:01.123456789Z ` (+ CRI `stdout F `): an RFC3339 time with its
--                      offset; when present it is the line's time (exact, no zone needed)
--   SGLang             `[YYYY-MM-DD HH:MM:SS<rank tags>] ` (tags: TP0, DP3 TP3, DP0 TP0 EP0, PP1 TP0),
--                      optionally followed by `LEVEL file.py:N: ` (2026 builds); host-local time
--   vLLM               `(EngineCore_DP0 pid=N) INFO MM-DD HH:MM:SS [file.py:N] ` (no year; host-local)
-- Lines without a prefix keep a NULL time here (audit/sequence.sql lets them inherit the previous one).
-- Request-log lines (`Receive: obj=`, `Finish: obj=`, JSON events) are never read for configuration:
-- their prompt text could spell `max_total_num_tokens=...` or an environment variable.
-- Values: see queries/audit/macros.sql (a value is taken only when visibly complete). `truncated`
-- says a recognised line is cut short (its later values are missing); nothing here is guessed.
WITH raw AS (
    SELECT i.file_id, i.line_no, i.line_bytes, i.cri_open, i.line AS text
    FROM __input__ AS i
),
cand AS (   -- cheap scans first: request-log lines out, then one regex pass picks lines that could matter
    SELECT r.* FROM raw AS r
    WHERE CASE WHEN position('Finish: obj=' IN r.text) > 0 OR position('Receive: obj=' IN r.text) > 0 THEN false
               ELSE regexp_matches(r.text, 'max_total_num_tokens|KV Cache is allocated|KV Cache VA upper bound|server_args=|DSV4 (?:memory calculation|pool sizes)|larger than the profiled value|exceeds the KV memory budget|Multimodal prompt is too long|exceeds the unified FULL/SWA|too many SWA KV tokens|(?i:^\s*(?:sglang|vllm|lmcache)(?: version)?\s*:\s*v?\d)|(?i:^\s*(?:vllm(?:[-_]cpu)?|lmcache)\s*==\s*\d)|PYTHONHASHSEED|(?i:hash[_-]algo|kv_load_failure_policy)|context_length \(|KV pool holds|chunk cache for decode server|[Ss][Gg][Ll][Aa][Nn][Gg] ?(?:version|==| v)|SGLANG_|HOSTNAME|KV cache size|Maximum concurrency for|blocks: |max seq len|No available memory for the cache blocks|leaving none for the KV cache|max model len|LLM engine|API server version|exceeds the maximum|KV checksum|kv_canary|\[canary\]|install_canary|Context corruption detected|transfer failed|fired up and ready|non-default args|(?i:context[_-]len|page[_-]size|disaggregation[_-]mode|kv[_-]canary|kv[_-]checksum|max[_-]model[_-]len|block[_-]size|max[_-]total[_-]tokens)') END
),
p1 AS (     -- container-runtime stamp
    SELECT c.*,
        regexp_extract(c.text, '^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}))\s+(?:(?:stdout|stderr)\s+[FP]\s)?', 0) AS rt_prefix,
        regexp_extract(c.text, '^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}))\s', 1) AS rt_stamp
    FROM cand AS c
),
p2 AS (
    SELECT p.*, substr(p.text, length(p.rt_prefix) + 1) AS rest FROM p1 AS p
),
p3 AS (     -- SGLang bracket or vLLM level/date prefix
    SELECT p.*,
        regexp_extract(p.rest, '^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?: [A-Za-z]+\d+)*\]\s?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+(?:[\w./-]+\.py:\d+:?\s+)?)?', 0) AS sg_prefix,
        regexp_extract(p.rest, '^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})', 1) AS sg_stamp,
        trim(regexp_extract(p.rest, '^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?((?: [A-Za-z]+\d+)*)\]', 1)) AS sg_tags,
        regexp_extract(p.rest, '^(?:\([\w-]+(?: \w+=\w+)*\)\s+)?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+\[?[\w./-]+:\d+\]\s?', 0) AS vl_prefix,
        regexp_extract(p.rest, '^(?:\([\w-]+(?: \w+=\w+)*\)\s+)?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+(\d{2}-\d{2} \d{2}:\d{2}:\d{2})', 1) AS vl_stamp,
        regexp_extract(p.rest, '^\(([\w-]+)(?: \w+=\w+)*\)\s', 1) AS vl_tag
    FROM p2 AS p
),
msgs AS (
    SELECT p.*,
        CASE WHEN p.sg_prefix <> '' THEN substr(p.rest, length(p.sg_prefix) + 1)
             WHEN p.vl_prefix <> '' THEN substr(p.rest, length(p.vl_prefix) + 1)
             ELSE regexp_replace(p.rest, '^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s*:?\s+', '') END AS msg,
        CASE WHEN p.sg_prefix <> '' THEN 'sglang' WHEN p.vl_prefix <> '' THEN 'vllm' END AS prefix_engine
    FROM p3 AS p
),
kinds AS (
    SELECT m.*,
        CASE
            WHEN left(m.msg, 1) = '{' THEN NULL
            WHEN regexp_matches(m.msg, '^server_args=(?:ServerArgs\(|\{)') THEN 'server_args'
            WHEN regexp_matches(m.msg, '^max_total_num_tokens=') THEN 'pool'
            WHEN regexp_matches(m.msg, '^(?:[\w .-]+ )?KV Cache is allocated\.') THEN 'kv_alloc'
            WHEN regexp_matches(m.msg, '^KV pool holds \d+ tokens, fewer than --context-length \d+') THEN 'pool_warning'
            WHEN regexp_matches(m.msg, 'User-specified context_length \(\d+\) is greater than the derived context_length \(\d+\)') THEN 'ctx_override'
            WHEN regexp_matches(m.msg, '^KV cache is forced as chunk cache for decode server') THEN 'decode_hint'
            WHEN regexp_matches(m.msg, '^(?i:sglang)(?: version:?\s*| ?== ?| v|:\s*)v?\d+\.\d+') THEN 'version'
            -- vLLM's collect_env (`vLLM Version : 0.10.1`) and pip lines (`vllm==0.10.1`): a version, not a start
            WHEN regexp_matches(m.msg, '^\s*(?i:vllm)(?:[-_]cpu)?(?:\s+(?i:version)\s*:\s*|\s*==\s*|:\s*)v?\d+\.\d+') THEN 'vllm_version'
            -- an LMCache version (pip freeze `lmcache==0.5.2`, collect_env `LMCache version: 0.5.2`): its connector's build
            WHEN regexp_matches(m.msg, '^\s*(?i:lmcache)(?:\s+(?i:version)\s*:?\s*|\s*==\s*|:\s*)v?\d+\.\d+') THEN 'lmcache_version'
            -- what memory allows (DeepSeek-V4's configurator, max_total_tokens above the profiled value): the pool
            -- is at most this (--max-total-tokens and pipeline parallelism can only lower it)
            WHEN regexp_matches(m.msg, '^DSV4 memory calculation: .*full_token=\d+\s*$') THEN 'pool_bound'
            WHEN regexp_matches(m.msg, '^DSV4 pool sizes: full=\d+,') THEN 'pool_bound'
            WHEN regexp_matches(m.msg, '^max_total_tokens=\d+ is larger than the profiled value \d+') THEN 'pool_bound'
            WHEN regexp_matches(m.msg, '^The server is fired up and ready to roll') THEN 'ready'
            WHEN regexp_matches(m.msg, '^(?:vLLM API server version |Initializing an? (?:V[01] )?LLM engine)') THEN 'vllm_start'
            WHEN regexp_matches(m.msg, '^(?:GPU|CPU|XPU|HPU|NPU|TPU) KV cache size: [\d,]+ tokens') THEN 'vllm_kv'
            WHEN regexp_matches(m.msg, '^Maximum concurrency for [\d,]+ tokens per request: [\d.]+x') THEN 'vllm_concurrency'
            -- V0 `# GPU blocks: N, # CPU blocks: M` (`# cuda blocks` 0.7.3-0.11.0: device_name), early V1 `# GPU blocks: N`;
            -- pasted without the leading `#` too (kvir.rules.vllm: v0-blocks, v1-blocks)
            WHEN regexp_matches(m.msg, '^(?:# ?)?(?i:gpu|cpu|cuda|xpu|hpu|npu|tpu|rocm|hip|neuron) blocks: \d+') THEN 'vllm_blocks'
            WHEN regexp_matches(m.msg, '^Using max model len \d+') THEN 'vllm_max_len'
            WHEN regexp_matches(m.msg, 'To serve at least one request with the models?''s max seq len \(\d+\)') THEN 'vllm_refusal'
            WHEN regexp_matches(m.msg, 'The model''s max seq len \(\d+\) is larger than the maximum number of tokens that can be stored in KV cache \(\d+\)') THEN 'vllm_refusal'
            -- no KV block fits at all (V0 workers, V1 _check_enough_kv_cache_memory; CPU worker 0.33.0+)
            WHEN regexp_matches(m.msg, 'No available memory for the cache blocks\.') THEN 'vllm_refusal'
            WHEN regexp_matches(m.msg, 'The worker already uses [\d.]+ GiB .*leaving none for the KV cache\.') THEN 'vllm_refusal'
            WHEN regexp_matches(m.msg, 'Input length \(\d+ tokens\) exceeds the maximum allowed length \(\d+ tokens\)') THEN 'input-length-exceeds'
            WHEN regexp_matches(m.msg, 'exceeds the maximum number of tokens: \d+ > \d+') THEN 'exceeds-max-tokens'
            -- the scheduler's other rejections (set_finish_with_abort: HTTP 400; builds.toml [[log_line]])
            WHEN regexp_matches(m.msg, 'Request prompt exceeds the KV memory budget: input_len=\d+') THEN 'kv-budget-exceeded'
            WHEN regexp_matches(m.msg, 'Multimodal prompt is too long after expanding multimodal tokens\.') THEN 'mm-prompt-too-long'
            -- decode's admission door (PD): the request does not fit decode's pool
            WHEN regexp_matches(m.msg, 'Request \S+ exceeds the unified FULL/SWA KV byte budget') THEN 'kv-byte-budget-exceeded'
            WHEN regexp_matches(m.msg, 'Request \S+ requires too many SWA KV tokens for decode preallocation: \d+ > \d+') THEN 'swa-prealloc-exceeded'
            WHEN regexp_matches(m.msg, 'KV checksum mismatch(?: on a peer rank)? req=') THEN 'kv-checksum-mismatch'
            WHEN regexp_matches(m.msg, 'KV checksum skipped: .*admitted unverified') THEN 'kv-checksum-skipped'
            WHEN regexp_matches(m.msg, 'kv_canary violation: launch_tag=') THEN 'kv-canary-violation'
            WHEN regexp_matches(m.msg, '^\[canary\] step=\d+ protected_tokens=\d+ .*violations=\d+') THEN 'canary-stats'
            WHEN regexp_matches(m.msg, '^install_canary: disaggregation_mode=') THEN 'canary-installed'
            WHEN regexp_matches(m.msg, 'Context corruption detected: Request .* received metadata from bootstrap_room=') THEN 'context-corruption'
            WHEN regexp_matches(m.msg, '(?:Prefill|Decode) transfer failed for request') THEN 'kv-transfer-failed'
            WHEN regexp_matches(m.msg, '^(?:export\s+|declare -x\s+|env:\s*|environment:\s*)?[A-Z_][A-Z0-9_]*=')
                 OR position('environ({' IN m.msg) > 0 THEN 'env'
            -- pasted configuration: `key=value` / `key: value` lines and launch command lines
            WHEN regexp_matches(m.msg, '^\s*(?:- )?(?:--)?(?i:context[_-]length|context[_-]len|page[_-]size|disaggregation[_-]mode|kv[_-]canary|disaggregation[_-]enable[_-]kv[_-]checksum|max[_-]model[_-]len|block[_-]size|max[_-]total[_-]tokens|served[_-]model[_-]name|tp[_-]size|tensor[_-]parallel[_-]size|prefix[_-]caching[_-]hash[_-]algo)\s*(?:[=:]\s*|\s+)\S')
                 OR regexp_matches(m.msg, '(?:sglang\.launch_server|sglang serve|vllm serve|vllm\.entrypoints)\s')
                 -- vLLM's `non-default args: {...}` (the arguments the operator set, before the engine's banner)
                 OR regexp_matches(m.msg, '^non-default args: \{') THEN 'config'
        END AS kind
    FROM msgs AS m
),
rel AS (
    SELECT k.* FROM kinds AS k WHERE k.kind IS NOT NULL
),
stamped AS (   -- one time string per line, converted once (the macros expand to large expressions)
    SELECT r.*,
        CASE WHEN r.rt_stamp <> '' THEN r.rt_stamp WHEN r.sg_stamp <> '' THEN r.sg_stamp
             WHEN r.vl_stamp <> '' AND s.year IS NOT NULL THEN s.year || '-' || r.vl_stamp END AS stamp,
        CASE WHEN r.rt_stamp = '' THEN s.tz_iana END AS stamp_tz,
        CASE WHEN r.rt_stamp = '' THEN s.tz_offset_min END AS stamp_off,
        r.rt_stamp = '' AND s.tz_iana IS NULL AND s.tz_offset_min IS NULL AS zone_unknown
    FROM rel AS r JOIN __settings__ AS s USING (file_id)
),
converted AS (
    SELECT st.*,
        CASE WHEN NOT st.zone_unknown THEN kvir_parse_ts(st.stamp, st.stamp_tz, st.stamp_off) END AS ts_utc,
        CASE WHEN st.rt_stamp = '' THEN kvir_naive_ts(st.stamp) END AS ts_host
    FROM stamped AS st
),
complete AS (
    SELECT r.*,
        CASE r.kind
            WHEN 'server_args' THEN regexp_matches(r.msg, '^server_args=ServerArgs\(.*\)\s*$') OR regexp_matches(r.msg, '^server_args=\{.*\}\s*$')
            -- every historical shape of line (g) ends with one of these pairs; a bare
            -- `max_total_num_tokens=N` is complete only as bench_one_batch prints it (no log prefix)
            WHEN 'pool' THEN (regexp_matches(r.msg, '^max_total_num_tokens=\d+\s*$') AND r.sg_prefix = '' AND r.vl_prefix = '')
                          OR regexp_matches(r.msg, '(?:context_len=\d+|available_(?:gpu|cpu)_mem=[\d.]+ GB|max_running_requests=\d+)\s*$')
            WHEN 'kv_alloc' THEN regexp_matches(r.msg, '#tokens: \d+, (?:K size: [\d.]+ GB, V size: [\d.]+ GB|KV size: [\d.]+ GB)\s*$')
            ELSE true END
        AND NOT coalesce(r.cri_open, false) AS complete
    FROM converted AS r
)
SELECT
    c.file_id::INTEGER AS file_id,
    c.line_no,
    c.line_bytes,
    c.kind,
    NOT c.complete AS truncated,
    coalesce(c.prefix_engine, CASE WHEN c.kind LIKE 'vllm%' THEN 'vllm'
                                   WHEN c.kind IN ('server_args', 'pool', 'kv_alloc', 'pool_warning', 'decode_hint', 'version', 'ready', 'ctx_override',
                                                   'canary-stats', 'canary-installed', 'kv-checksum-skipped', 'pool_bound',
                                                   'kv-budget-exceeded', 'mm-prompt-too-long', 'kv-byte-budget-exceeded',
                                                   'swa-prealloc-exceeded') THEN 'sglang'
                                   WHEN c.kind = 'config' AND regexp_matches(c.msg, '(?i)vllm|max[_-]model[_-]len|block[_-]size|tensor[_-]parallel') THEN 'vllm'
                                   WHEN c.kind = 'config' THEN 'sglang' END) AS engine,
    coalesce(nullif(c.sg_tags, ''), nullif(c.vl_tag, ''), '') AS rank_tag,
    c.ts_utc AS ts,
    c.ts_host,
    CASE WHEN c.rt_stamp <> '' THEN 'container runtime (with offset)'
         WHEN (c.sg_stamp <> '' OR c.vl_stamp <> '') AND c.zone_unknown THEN 'host-local (zone unknown)'
         WHEN c.sg_stamp <> '' OR c.vl_stamp <> '' THEN 'host-local'
    END AS ts_source,
    c.zone_unknown AND (c.sg_stamp <> '' OR c.vl_stamp <> '') AS zone_unknown,
    CASE WHEN c.vl_stamp <> '' AND c.stamp IS NULL THEN 'vLLM time without a year (give --year or year in the inventory)'
         WHEN c.zone_unknown AND c.stamp IS NOT NULL AND c.ts_host IS NULL THEN kvir_ts_problem(c.stamp, NULL, 'UTC', NULL)
         WHEN NOT c.zone_unknown AND c.stamp IS NOT NULL AND (c.ts_utc IS NULL OR NOT kvir_in_range(c.ts_utc))
              THEN kvir_ts_problem(c.stamp, c.ts_utc, c.stamp_tz, c.stamp_off)
    END AS ts_problem,
    CASE WHEN c.rt_stamp <> '' THEN c.rt_stamp WHEN c.sg_stamp <> '' THEN c.sg_stamp WHEN c.vl_stamp <> '' THEN c.vl_stamp END AS ts_text,
    -- line (g) and line (e); 0.5.23's pool warning
    CASE WHEN c.kind = 'pool' THEN kva_int_end(c.msg, 'max_total_num_tokens', c.complete)
         WHEN c.kind = 'config' THEN kva_cfg_int(c.msg, 'max_total_num_tokens') END AS pool_tokens,
    CASE WHEN c.kind = 'pool' THEN kva_int_end(c.msg, 'context_len', c.complete) END AS context_len,
    -- an upper bound of the pool (what memory allows): DSV4 `full_token=N` / `full=N`, the profiled value
    CASE WHEN c.kind = 'pool_bound' THEN TRY_CAST(coalesce(nullif(regexp_extract(c.msg, 'full_token=(\d+)\s*$', 1), ''),
                                                          nullif(regexp_extract(c.msg, '^DSV4 pool sizes: full=(\d+),', 1), ''),
                                                          nullif(regexp_extract(c.msg, 'larger than the profiled value (\d+)', 1), '')) AS BIGINT) END AS pool_bound,
    CASE WHEN c.kind = 'pool_bound' AND position('DSV4 memory calculation' IN c.msg) > 0 THEN 'DSV4 memory calculation full_token'
         WHEN c.kind = 'pool_bound' AND position('DSV4 pool sizes' IN c.msg) > 0 THEN 'DSV4 pool sizes full'
         WHEN c.kind = 'pool_bound' THEN 'profiled value (max_total_tokens is larger)' END AS pool_bound_source,
    CASE WHEN c.kind = 'pool' THEN kva_int_end(c.msg, 'max_running_requests', c.complete) END AS max_running_requests,
    CASE WHEN c.kind = 'kv_alloc' THEN TRY_CAST(nullif(regexp_extract(c.msg, '#tokens: (\d+),', 1), '') AS BIGINT) END AS kv_tokens,
    CASE WHEN c.kind = 'kv_alloc' AND position('KV size:' IN c.msg) > 0 THEN 'MLA'
         WHEN c.kind = 'kv_alloc' AND position('K size:' IN c.msg) > 0 THEN 'MHA' END AS kv_layout,
    CASE WHEN c.kind = 'pool_warning' THEN TRY_CAST(regexp_extract(c.msg, '^KV pool holds (\d+) tokens', 1) AS BIGINT) END AS warn_pool,
    CASE WHEN c.kind = 'pool_warning' THEN TRY_CAST(regexp_extract(c.msg, 'fewer than --context-length (\d+)', 1) AS BIGINT) END AS warn_context,
    -- the server_args dump: ServerArgs(k=v, ...) up to 0.5.18, {'k': v, ...} from 0.5.19 (builds.toml)
    CASE WHEN c.kind = 'server_args' AND regexp_matches(c.msg, '^server_args=ServerArgs\(') THEN 'repr'
         WHEN c.kind = 'server_args' AND regexp_matches(c.msg, '''watermark_key'': ''<redacted>''') THEN 'dict-redacted'
         WHEN c.kind = 'server_args' THEN 'dict' END AS sa_shape,
    CASE WHEN c.kind = 'server_args' THEN regexp_extract_all(c.msg, '(?:^server_args=ServerArgs\(|^server_args=\{|, )''?([A-Za-z_][A-Za-z0-9_]*)''?(?:=|'': )', 1) END AS sa_keys,
    CASE WHEN c.kind = 'server_args' THEN coalesce(kva_str(c.msg, 'disaggregation_mode'),
                                                   CASE WHEN kva_is_none(c.msg, 'disaggregation_mode') THEN 'null' END)
         WHEN c.kind = 'config' THEN lower(kva_cfg(c.msg, 'disaggregation_mode'))
         WHEN c.kind = 'canary-installed' THEN lower(regexp_extract(c.msg, '^install_canary: disaggregation_mode=(?:DisaggregationMode\.)?(\w+)', 1)) END AS sa_mode,
    CASE WHEN c.kind = 'server_args' THEN kva_int(c.msg, 'context_length')
         WHEN c.kind = 'config' THEN coalesce(kva_cfg_int(c.msg, 'context_length'), kva_cfg_int(c.msg, 'context_len')) END AS sa_context_length,
    CASE WHEN c.kind = 'server_args' THEN kva_int(c.msg, 'page_size') WHEN c.kind = 'config' THEN kva_cfg_int(c.msg, 'page_size') END AS sa_page_size,
    CASE WHEN c.kind = 'server_args' THEN kva_int(c.msg, 'max_total_tokens') WHEN c.kind = 'config' THEN kva_cfg_int(c.msg, 'max_total_tokens')
         WHEN c.kind = 'pool_bound' THEN TRY_CAST(nullif(regexp_extract(c.msg, '^max_total_tokens=(\d+) is larger', 1), '') AS BIGINT) END AS sa_max_total_tokens,
    CASE WHEN c.kind = 'server_args' THEN kva_str(c.msg, 'served_model_name') WHEN c.kind = 'config' THEN kva_cfg(c.msg, 'served_model_name') END AS sa_served_model,
    CASE WHEN c.kind = 'server_args' THEN kva_str(c.msg, 'model_path') END AS sa_model_path,
    CASE WHEN c.kind = 'server_args' THEN kva_bool(c.msg, 'disaggregation_enable_kv_checksum')
         WHEN c.kind = 'config' THEN kva_cfg_bool(c.msg, 'disaggregation_enable_kv_checksum') END AS sa_kv_checksum,
    CASE WHEN c.kind = 'server_args' THEN coalesce(kva_str(c.msg, 'kv_canary'),
                                                   CASE WHEN kva_is_none(c.msg, 'kv_canary') THEN 'none' END)
         WHEN c.kind = 'config' THEN lower(kva_cfg(c.msg, 'kv_canary')) END AS sa_kv_canary,
    CASE WHEN c.kind = 'server_args' THEN regexp_matches(c.msg, '(?:[ ,(]kv_canary=|[{ ]''kv_canary'': )') END AS sa_has_kv_canary,
    CASE WHEN c.kind = 'server_args' THEN regexp_matches(c.msg, '(?:[ ,(]disaggregation_enable_kv_checksum=|[{ ]''disaggregation_enable_kv_checksum'': )') END AS sa_has_kv_checksum,
    CASE WHEN c.kind = 'server_args' THEN kva_int(c.msg, 'tp_size') WHEN c.kind = 'config' THEN coalesce(kva_cfg_int(c.msg, 'tp_size'), kva_cfg_int(c.msg, 'tensor_parallel_size')) END AS sa_tp_size,
    CASE WHEN c.kind = 'server_args' THEN kva_int(c.msg, 'dp_size') END AS sa_dp_size,
    CASE WHEN c.kind = 'server_args' THEN kva_bool(c.msg, 'enable_dp_attention') END AS sa_dp_attention,
    CASE WHEN c.kind = 'server_args' THEN kva_str(c.msg, 'disaggregation_transfer_backend') END AS sa_transfer_backend,
    CASE WHEN c.kind = 'server_args' THEN kva_bool(c.msg, 'allow_auto_truncate') END AS sa_allow_auto_truncate,
    -- prefix caching as the start shows it (vLLM's resolved config, SGLang's dump, the operator's arguments)
    -- and the cache connector that adds a tier (what the build does with them is a mechanism's audit part's)
    CASE WHEN c.kind = 'vllm_start' THEN kva_bool(c.msg, 'enable_prefix_caching')
         WHEN c.kind = 'server_args' THEN NOT kva_bool(c.msg, 'disable_radix_cache')
         WHEN c.kind = 'config' THEN coalesce(kva_bool(c.msg, 'enable_prefix_caching'),
             CASE WHEN regexp_matches(c.msg, '(?:^|\s)--no-enable-prefix-caching(?:\s|$)') THEN false END,
             kva_cfg_bool(c.msg, 'enable_prefix_caching'), NOT kva_bool(c.msg, 'disable_radix_cache'),
             NOT kva_cfg_bool(c.msg, 'disable_radix_cache')) END AS pc_flag,
    CASE WHEN c.kind IN ('server_args', 'config') AND coalesce(kva_bool(c.msg, 'enable_lmcache'), kva_cfg_bool(c.msg, 'enable_lmcache'), false) THEN 'lmcache'
         WHEN c.kind IN ('config', 'vllm_start') THEN nullif(regexp_extract(c.msg, 'kv_connector[''"]?\s*[=:]\s*[''"]?(\w+)', 1), '') END AS pc_connector,
    -- the context-length override warning
    CASE WHEN c.kind = 'ctx_override' THEN TRY_CAST(regexp_extract(c.msg, 'User-specified context_length \((\d+)\)', 1) AS BIGINT) END AS ctx_user,
    CASE WHEN c.kind = 'ctx_override' THEN TRY_CAST(regexp_extract(c.msg, 'derived context_length \((\d+)\)', 1) AS BIGINT) END AS ctx_derived,
    -- the canary's periodic statistics: verification evidence (protected_tokens), its running violation count
    CASE WHEN c.kind = 'canary-stats' THEN TRY_CAST(regexp_extract(c.msg, ' protected_tokens=(\d+)', 1) AS BIGINT) END AS canary_protected,
    CASE WHEN c.kind = 'canary-stats' THEN TRY_CAST(regexp_extract(c.msg, ' violations=(\d+)', 1) AS BIGINT) END AS canary_violations,
    CASE WHEN c.kind = 'canary-stats' THEN TRY_CAST(regexp_extract(c.msg, '^\[canary\] step=(\d+)', 1) AS BIGINT) END AS canary_step,
    -- environment dump values (kept as text; node_configs.sql interprets them)
    CASE WHEN c.kind = 'env' THEN kva_env(c.msg, 'SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE') END AS env_deferred,
    CASE WHEN c.kind = 'env' THEN kva_env(c.msg, 'SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES') END AS env_batch_cap,
    CASE WHEN c.kind = 'env' THEN nullif(kva_env(c.msg, 'HOSTNAME'), '') END AS env_hostname,
    CASE WHEN c.kind = 'env' THEN kva_env(c.msg, 'PYTHONHASHSEED') END AS env_hashseed,
    -- vLLM's block hash (of its cached blocks) and KV-load failure policy (a launch command, `non-default args`, the
    -- kv_transfer_config JSON), and the LMCache release a version line names
    CASE WHEN c.kind IN ('config', 'vllm_start') THEN lower(nullif(regexp_extract(c.msg, '(?i)prefix[_-]caching[_-]hash[_-]algo[''"]?\s*(?:[=:]\s*|\s+)[''"]?([a-z0-9_]+)', 1), '')) END AS hash_algo,
    CASE WHEN c.kind IN ('config', 'vllm_start') THEN lower(nullif(regexp_extract(c.msg, '(?i)kv_load_failure_policy[''"]?\s*[=:]\s*[''"]?([a-z]+)', 1), '')) END AS load_failure_policy,
    CASE WHEN c.kind = 'lmcache_version' THEN regexp_extract(c.msg, '(?i:lmcache)(?:\s+(?i:version)\s*:?\s*|\s*==\s*|:\s*)v?(\d+\.\d+[\w.+-]*)', 1) END AS lmcache_version,
    -- versions
    CASE WHEN c.kind = 'version' THEN regexp_extract(c.msg, '^(?i:sglang)(?: version:?\s*| ?== ?| v|:\s*)v?(\d+\.\d+[\w.+-]*)', 1)
         WHEN c.kind = 'vllm_version' THEN regexp_extract(c.msg, '(?i:vllm)(?:[-_]cpu)?(?:\s+(?i:version)\s*:\s*|\s*==\s*|:\s*)v?(\d+\.\d+[\w.+-]*)', 1)
         WHEN c.kind = 'vllm_start' THEN nullif(regexp_extract(c.msg, '^(?:vLLM API server version |Initializing an? (?:V[01] )?LLM engine \(v)(\d+\.\d+[\w.+-]*?)\)?(?:[\s,]|$)', 1), '')
    END AS version,
    -- vLLM
    CASE WHEN c.kind = 'vllm_kv' THEN kva_grouped(regexp_extract(c.msg, '^\w+ KV cache size: ([\d,]+) tokens', 1)) END AS vllm_kv_tokens,
    CASE WHEN c.kind IN ('vllm_concurrency', 'vllm_kv') THEN kva_grouped(nullif(regexp_extract(c.msg, 'Maximum concurrency for ([\d,]+) tokens', 1), ''))
         WHEN c.kind = 'vllm_max_len' THEN TRY_CAST(regexp_extract(c.msg, '^Using max model len (\d+)', 1) AS BIGINT)
         WHEN c.kind = 'vllm_start' THEN kva_int_end(c.msg, 'max_seq_len', c.complete)
         WHEN c.kind = 'vllm_refusal' THEN TRY_CAST(regexp_extract(c.msg, 'max seq len \((\d+)\)', 1) AS BIGINT)
         WHEN c.kind = 'config' THEN kva_cfg_int(c.msg, 'max_model_len')
    END AS vllm_max_model_len,
    CASE WHEN c.kind IN ('vllm_concurrency', 'vllm_kv') THEN TRY_CAST(nullif(regexp_extract(c.msg, 'tokens per request: ([\d.]+)x', 1), '') AS DOUBLE) END AS vllm_concurrency,
    CASE WHEN c.kind = 'vllm_blocks' THEN TRY_CAST(regexp_extract(c.msg, '^(?:# ?)?\w+ blocks: (\d+)', 1) AS BIGINT) END AS vllm_blocks,
    CASE WHEN c.kind = 'vllm_start' THEN coalesce(kva_str(c.msg, 'served_model_name'), nullif(regexp_extract(c.msg, '[ ,(]served_model_name=([^,\s''"()]+)[,)]', 1), ''), kva_str(c.msg, 'model')) END AS vllm_served_model,
    CASE WHEN c.kind = 'vllm_start' THEN kva_int_end(c.msg, 'tensor_parallel_size', c.complete) END AS vllm_tp_size,
    CASE WHEN c.kind = 'vllm_start' THEN kva_int_end(c.msg, 'data_parallel_size', c.complete) END AS vllm_dp_size,
    CASE WHEN c.kind = 'vllm_start' THEN kva_int_end(c.msg, 'block_size', c.complete)
         WHEN c.kind = 'config' THEN kva_cfg_int(c.msg, 'block_size') END AS vllm_block_size,
    CASE WHEN c.kind = 'vllm_refusal' AND position('To serve at least one request' IN c.msg) > 0 THEN
              'needs ' || regexp_extract(c.msg, '\(([\d.]+ Gi?B) KV cache is needed', 1) || ' of KV cache for one request of '
              || regexp_extract(c.msg, 'max seq len \((\d+)\)', 1) || ' tokens, has ' || regexp_extract(c.msg, 'available KV cache memory \(([\d.]+ Gi?B)\)', 1)
              || coalesce('; estimated maximum model length ' || nullif(regexp_extract(c.msg, 'estimated maximum model length is (\d+)', 1), ''), '')
         WHEN c.kind = 'vllm_refusal' AND position('No available memory for the cache blocks' IN c.msg) > 0 THEN
              'no memory is left for any KV cache block (No available memory for the cache blocks)'
         WHEN c.kind = 'vllm_refusal' AND position('leaving none for the KV cache' IN c.msg) > 0 THEN
              'the worker uses ' || regexp_extract(c.msg, 'already uses ([\d.]+ GiB)', 1) || ', more than the '
              || regexp_extract(c.msg, 'more than the ([\d.]+ GiB)', 1) || ' of CPU memory reserved for it: none is left for the KV cache'
         WHEN c.kind = 'vllm_refusal' THEN
              'max seq len ' || regexp_extract(c.msg, 'max seq len \((\d+)\)', 1) || ' is larger than the KV cache ('
              || regexp_extract(c.msg, 'stored in KV cache \((\d+)\)', 1) || ' tokens)'
    END AS refusal,
    -- the pool a refusal shows: V0's `stored in KV cache (M)` (block size x blocks), 0 when no block fits
    CASE WHEN c.kind = 'vllm_refusal' AND (position('No available memory for the cache blocks' IN c.msg) > 0
                                          OR position('leaving none for the KV cache' IN c.msg) > 0) THEN 0::BIGINT
         WHEN c.kind = 'vllm_refusal' THEN TRY_CAST(nullif(regexp_extract(c.msg, 'stored in KV cache \((\d+)\)', 1), '') AS BIGINT) END AS refusal_pool,
    CASE WHEN c.kind = 'vllm_refusal' THEN TRY_CAST(nullif(coalesce(nullif(regexp_extract(c.msg, 'stored in KV cache \((\d+)\)', 1), ''),
                                                                       regexp_extract(c.msg, 'estimated maximum model length is (\d+)', 1)), '') AS BIGINT) END AS refusal_tokens,
    -- runtime indicators: the prompt length and the limit it hit (no request text is kept)
    CASE WHEN c.kind = 'input-length-exceeds' THEN TRY_CAST(regexp_extract(c.msg, 'Input length \((\d+) tokens\)', 1) AS BIGINT)
         WHEN c.kind = 'kv-budget-exceeded' THEN TRY_CAST(regexp_extract(c.msg, 'input_len=(\d+)', 1) AS BIGINT)
         WHEN c.kind = 'mm-prompt-too-long' THEN TRY_CAST(nullif(regexp_extract(c.msg, '=> (\d+) >= \d+', 1), '') AS BIGINT)
         WHEN c.kind = 'swa-prealloc-exceeded' THEN TRY_CAST(regexp_extract(c.msg, 'decode preallocation: (\d+) >', 1) AS BIGINT)
         WHEN c.kind = 'exceeds-max-tokens' THEN TRY_CAST(regexp_extract(c.msg, 'maximum number of tokens: (\d+) >', 1) AS BIGINT) END AS ind_tokens,
    CASE WHEN c.kind = 'input-length-exceeds' THEN TRY_CAST(regexp_extract(c.msg, 'maximum allowed length \((\d+) tokens\)', 1) AS BIGINT)
         WHEN c.kind = 'mm-prompt-too-long' THEN TRY_CAST(nullif(regexp_extract(c.msg, '=> \d+ >= (\d+)', 1), '') AS BIGINT)
         WHEN c.kind = 'swa-prealloc-exceeded' THEN TRY_CAST(regexp_extract(c.msg, 'decode preallocation: \d+ > (\d+)', 1) AS BIGINT)
         WHEN c.kind = 'exceeds-max-tokens' THEN TRY_CAST(regexp_extract(c.msg, 'maximum number of tokens: \d+ > (\d+)', 1) AS BIGINT) END AS ind_limit
FROM complete AS c
