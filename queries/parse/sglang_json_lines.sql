-- sglang_json_lines: SGLang request-log lines as queries/adapters/sglang_json.sql reads them: each line's JSON object (alone or after the handler's prefix) or its scheduler rejection.
-- Params: none
-- Inputs: __input__ (numbered lines: source_id, line_no, line, problem; from kvir's line reader or queries/parse/lines_csv.sql)
--
-- One row per line: source_id, line_no, problem (the reader's, e.g. an over-long line handed over
-- empty), text (the line), payload (the JSON object's text, or NULL when the line holds none), j (the
-- record's fields, all VARCHAR as written; NULL when the payload is not valid JSON) and rej (the
-- scheduler's rejection line, read only where there is no JSON object). Row for row, in the order of
-- its input (no join): a file read by DuckDB's CSV reader keeps its line numbers.
-- json_extract_string with a list of paths parses each line once and is about twice as fast as
-- from_json with a struct type here; the two give the same value for every field (a number as its
-- text, an object or array as its JSON, a missing key or null as NULL). queries/parse/sglang_json_native.sql
-- builds the same j from DuckDB's JSON reader: tests/formats/test_native_json.py checks the two agree.
WITH lines AS (     -- the JSON object: the whole line, or what follows the handler's [YYYY-MM-DD HH:MM:SS]
    SELECT i.source_id, i.line_no, i.problem, i.line AS text,
        CASE WHEN starts_with(i.line, '{') THEN i.line
             WHEN starts_with(i.line, '[') AND substr(i.line, 21, 3) = '] {' THEN substr(i.line, 23)
             WHEN position('] {' IN i.line) > 0
                 THEN nullif(regexp_extract(i.line, '^(?:\S+\s+(?:stdout|stderr)\s+[FP]\s+|\S+\s+)?\[\d{4}-\d{2}-\d{2}[ T][^\]]*\] (\{.*)$', 1), '')
             WHEN starts_with(ltrim(i.line), '{') THEN ltrim(i.line) END AS payload
    FROM __input__ AS i
),
extracted AS (      -- TRY: a malformed object gives NULL
    SELECT l.*,
        CASE WHEN l.payload IS NOT NULL THEN TRY(json_extract_string(l.payload, ['$.timestamp', '$.event', '$.rid',
                '$.obj.rid', '$.obj.bootstrap_room', '$.out.meta_info.id', '$.out.meta_info.prompt_tokens',
                '$.out.meta_info.completion_tokens', '$.out.meta_info.cached_tokens', '$.out.meta_info.e2e_latency',
                '$.out.meta_info.finish_reason.type', '$.out.meta_info.finish_reason.status_code',
                '$.out.meta_info.finish_reason.message'])) END AS v
    FROM lines AS l
)
SELECT e.source_id, e.line_no, e.problem, e.text, e.payload,
    CASE WHEN e.v IS NOT NULL THEN {'timestamp': e.v[1], 'event': e.v[2], 'rid': e.v[3],
        'obj': {'rid': e.v[4], 'bootstrap_room': e.v[5]},
        'out': {'meta_info': {'id': e.v[6], 'prompt_tokens': e.v[7], 'completion_tokens': e.v[8],
            'cached_tokens': e.v[9], 'e2e_latency': e.v[10],
            'finish_reason': {'type': e.v[11], 'status_code': e.v[12], 'message': e.v[13]}}}} END AS j,
    CASE WHEN e.payload IS NULL THEN kvir_sglang_rejection(e.text) END AS rej
FROM extracted AS e
