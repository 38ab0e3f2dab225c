-- macros: the one place where source times become UTC, and the shared parsing helpers.
-- Params: none. Defines SQL macros used by every adapter in queries/adapters/.
--
-- Time rules (kvir's times are UTC; README "Inputs, time and bad lines"):
--   * a string with an offset (Z, +02:00, +0200, " UTC") is converted as written;
--   * a naive string is local time in the source's zone: an IANA name (DST-aware; a time in a
--     DST fold is ambiguous and one in a DST gap does not exist: both are refused) or a fixed
--     offset in minutes; with neither it is refused ("naive timestamp: no source time zone");
--   * a number (or a string of digits) is Unix time whose unit is found by magnitude:
--     seconds, milliseconds, microseconds or nanoseconds since 1970 that land in 1990-2100;
--     anything else is implausible and refused;
--   * every result outside [1990-01-01, 2100-01-01) is refused.
--   * a year-less stamp ('MM-DD HH:MM:SS', vLLM) takes the year given (--year), else the year that
--     puts it inside or nearest to the incident window; no valid date, no window, or two years that
--     fit equally well (a window longer than a year) is refused;
--   * a time only known to an hour (the SGLang metrics export's file name) is converted like any
--     naive local time; its record carries ts_granularity_s = 3600 (triage: "possibly affected"
--     unless the whole hour lies inside the window).
-- Each *_utc macro returns NULL when it refuses; the matching *_problem macro says why.
--
-- Speed: an ICU time-zone conversion per row costs ~5 calls. Each source's settings hold tz_spans: up to
-- four spans of local time around the incident window over which the zone's offset does not change
-- (from kvir_hour_offsets, toolkit/ingest/settings.py), as one STRUCT of scalars (a list would be copied
-- per row through the settings join). kvir_local_ts_to_utc converts a time inside a span with one
-- subtraction and falls back to the exact per-row path near a DST transition or outside the spans. Both
-- paths give the same answer (tests/formats/test_time.py).

-- offset of zone tz at instant u, as an INTERVAL (local minus UTC)
CREATE OR REPLACE MACRO kvir_tz_offset(u, tz) AS timezone(tz, u) - timezone('UTC', u);

-- the two UTC instants that could have shown local time t (the offsets 6 h before and after)
CREATE OR REPLACE MACRO kvir_local_cand_a(t, tz) AS
    timezone('UTC', t - kvir_tz_offset(timezone(tz, t) - INTERVAL 6 HOUR, tz));
CREATE OR REPLACE MACRO kvir_local_cand_b(t, tz) AS
    timezone('UTC', t - kvir_tz_offset(timezone(tz, t) + INTERVAL 6 HOUR, tz));

CREATE OR REPLACE MACRO kvir_local_problem(t, tz, off_min) AS CASE
    WHEN t IS NULL OR off_min IS NOT NULL THEN NULL
    WHEN tz IS NULL THEN 'naive timestamp: no source time zone (--source-tz)'
    WHEN timezone(tz, kvir_local_cand_a(t, tz)) = t AND timezone(tz, kvir_local_cand_b(t, tz)) = t
         AND kvir_local_cand_a(t, tz) <> kvir_local_cand_b(t, tz)
        THEN 'ambiguous local time (DST fold in ' || tz || ')'
    WHEN timezone(tz, kvir_local_cand_a(t, tz)) <> t AND timezone(tz, kvir_local_cand_b(t, tz)) <> t
        THEN 'nonexistent local time (DST gap in ' || tz || ')'
    ELSE NULL END;

CREATE OR REPLACE MACRO kvir_local_to_utc(t, tz, off_min) AS CASE
    WHEN t IS NULL THEN NULL
    WHEN off_min IS NOT NULL THEN timezone('UTC', t - to_minutes(CAST(off_min AS BIGINT)))
    WHEN tz IS NULL THEN NULL
    -- fast path: the zone's offset is the same 6 h either side, so t is neither in a fold nor a gap
    WHEN kvir_tz_offset(timezone(tz, t) - INTERVAL 6 HOUR, tz) = kvir_tz_offset(timezone(tz, t) + INTERVAL 6 HOUR, tz)
        THEN timezone(tz, t)
    WHEN kvir_local_problem(t, tz, off_min) IS NOT NULL THEN NULL
    WHEN timezone(tz, kvir_local_cand_a(t, tz)) = t THEN kvir_local_cand_a(t, tz)
    ELSE kvir_local_cand_b(t, tz) END;

-- Unix time of unknown unit -> microseconds, or NULL when no unit lands in 1990-2100.
-- Bounds: 1990-01-01 = 631152000 s, 2100-01-01 = 4102444800 s; the unit ranges do not overlap.
-- Rounded down, as DuckDB casts a finer ISO time: what lies below the microsecond is kvir_ts_extra_ns.
CREATE OR REPLACE MACRO kvir_epoch_us(v) AS CASE
    WHEN v IS NULL THEN NULL
    WHEN v >= 631152000 AND v < 4102444800 THEN CAST(floor(v * 1000000) AS BIGINT)
    WHEN v >= 631152000000 AND v < 4102444800000 THEN CAST(floor(v * 1000) AS BIGINT)
    WHEN v >= 631152000000000 AND v < 4102444800000000 THEN CAST(floor(v) AS BIGINT)
    WHEN v >= 631152000000000000 AND v < 4102444800000000000 THEN CAST(CAST(floor(v) AS HUGEINT) // 1000 AS BIGINT)
    ELSE NULL END;

-- Nanoseconds of a Unix time beyond its microsecond (0-999), by the unit kvir_epoch_us finds.
CREATE OR REPLACE MACRO kvir_epoch_extra_ns(v) AS CASE
    WHEN v IS NULL THEN NULL
    WHEN v >= 631152000 AND v < 4102444800 THEN CAST(floor(v * 1000000000) AS HUGEINT) % 1000
    WHEN v >= 631152000000 AND v < 4102444800000 THEN CAST(floor(v * 1000000) AS HUGEINT) % 1000
    WHEN v >= 631152000000000 AND v < 4102444800000000 THEN CAST(floor(v * 1000) AS HUGEINT) % 1000
    WHEN v >= 631152000000000000 AND v < 4102444800000000000 THEN CAST(floor(v) AS HUGEINT) % 1000
    ELSE NULL END;

-- What a time written finer than a microsecond says beyond the microsecond kvir keeps as ts (SMALLINT,
-- 0-999 ns; NULL when the text is not that fine): the 7th-9th digits of an ISO-8601 fraction, or the digits
-- below the microsecond of a Unix number in s, ms, us or ns. ts (rounded down) and this together are the
-- time at the source's precision: the window test (kvir_in_window) compares both.
CREATE OR REPLACE MACRO kvir_ts_extra_ns(s) AS CAST(CASE
    WHEN s IS NULL THEN NULL
    WHEN kvir_ts_kind(CAST(s AS VARCHAR)) = 'epoch'
        THEN kvir_epoch_extra_ns(TRY_CAST(trim(CAST(s AS VARCHAR)) AS DECIMAL(38, 9)))
    WHEN regexp_matches(CAST(s AS VARCHAR), '[0-9]:[0-9]{2}[.,][0-9]{7}')
        THEN CAST(rpad(regexp_extract(CAST(s AS VARCHAR), '[0-9]:[0-9]{2}[.,][0-9]{6}([0-9]{1,3})', 1), 3, '0') AS INTEGER)
    END AS SMALLINT);

-- Is a start inside the window [ws, we] (both ends inclusive, microsecond bounds)? ts is the start rounded
-- down to the microsecond and extra_ns what the source said below it: a start 1 ns after the end is outside.
CREATE OR REPLACE MACRO kvir_in_window(ts, extra_ns, ws, we) AS
    ts >= ws AND (ts < we OR (ts = we AND coalesce(extra_ns, 0) = 0));

CREATE OR REPLACE MACRO kvir_epoch_to_utc(x) AS
    timezone('UTC', make_timestamp(kvir_epoch_us(TRY_CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 9)))));

CREATE OR REPLACE MACRO kvir_epoch_problem(x) AS CASE
    WHEN x IS NULL THEN NULL
    WHEN TRY_CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 9)) IS NULL THEN 'epoch time is not a number: ' || left(CAST(x AS VARCHAR), 40)
    WHEN kvir_epoch_us(TRY_CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 9))) IS NULL
        THEN 'implausible epoch time (no unit s/ms/us/ns lands in 1990-2100): ' || left(CAST(x AS VARCHAR), 40)
    ELSE NULL END;

-- Which kind of time string: 'offset' (carries its zone), 'naive', 'epoch' (digits), or NULL.
CREATE OR REPLACE MACRO kvir_ts_kind(s) AS CASE
    WHEN s IS NULL THEN NULL
    WHEN regexp_full_match(trim(s), '-?[0-9]+(\.[0-9]+)?') THEN 'epoch'
    WHEN regexp_full_match(trim(s), '[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?')
        THEN 'naive'
    WHEN regexp_full_match(trim(s), '[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?\s*(Z|z|UTC|GMT|[+-][0-9]{2}(:?[0-9]{2})?)')
        THEN 'offset'
    ELSE 'unknown' END;

-- false (never NULL) for a missing time, so `NOT kvir_in_range(ts)` also catches NULL
CREATE OR REPLACE MACRO kvir_in_range(u) AS
    coalesce(u >= TIMESTAMPTZ '1990-01-01 00:00:00+00' AND u < TIMESTAMPTZ '2100-01-01 00:00:00+00', false);

-- Minutes east of UTC in force at every instant of local hour h, or NULL when a DST transition lies
-- within 7 hours of it (then each time in that hour takes the exact path).
CREATE OR REPLACE MACRO kvir_hour_offset_min(h, tz) AS CASE
    WHEN kvir_tz_offset(timezone(tz, h) - INTERVAL 7 HOUR, tz) = kvir_tz_offset(timezone(tz, h) + INTERVAL 7 HOUR, tz)
        THEN CAST(epoch(kvir_tz_offset(timezone(tz, h), tz)) // 60 AS INTEGER)
    ELSE NULL END;

-- The offsets of local hours h0, h0+1h, ..., h0+(n-1)h (run-length encoded into a source's tz_spans).
CREATE OR REPLACE MACRO kvir_hour_offsets(tz, h0, n) AS CASE
    WHEN tz IS NULL OR h0 IS NULL OR n IS NULL OR n <= 0 THEN NULL
    ELSE list_transform(range(n), lambda i: kvir_hour_offset_min(h0 + to_hours(i), tz)) END;

-- kvir_local_to_utc given hour_off, the offset in force around t when known (NULL: not known there);
-- same answers, far fewer ICU calls.
CREATE OR REPLACE MACRO kvir_local_to_utc_o(t, tz, off_min, hour_off) AS CASE
    WHEN t IS NULL THEN NULL
    WHEN off_min IS NOT NULL THEN timezone('UTC', t - to_minutes(CAST(off_min AS BIGINT)))
    WHEN tz IS NULL THEN NULL
    WHEN hour_off IS NOT NULL THEN timezone('UTC', t - to_minutes(CAST(hour_off AS BIGINT)))
    ELSE kvir_local_to_utc(t, tz, off_min) END;

-- A naive ISO-8601 date-time ('T' or space, minutes, optional seconds and fraction), as written, or NULL.
CREATE OR REPLACE MACRO kvir_naive_ts(s) AS try_strptime(s, [
    '%Y-%m-%dT%H:%M:%S.%f', '%Y-%m-%d %H:%M:%S.%f', '%Y-%m-%dT%H:%M:%S', '%Y-%m-%d %H:%M:%S',
    '%Y-%m-%dT%H:%M', '%Y-%m-%d %H:%M']);

-- The common log format's date (nginx's [$time_local], HAProxy's %tr / %trl, Apache's %t): dd/Mon/yyyy:HH:MM:SS with
-- an optional fraction and offset; without the offset it is local time in the source's zone. NULL otherwise.
CREATE OR REPLACE MACRO kvir_clf_ts(s, tz, off_min) AS coalesce(
    TRY_CAST(try_strptime(trim(s), ['%d/%b/%Y:%H:%M:%S %z', '%d/%b/%Y:%H:%M:%S.%g %z']) AS TIMESTAMPTZ),
    kvir_local_to_utc(try_strptime(trim(s), ['%d/%b/%Y:%H:%M:%S.%g', '%d/%b/%Y:%H:%M:%S']), tz, off_min));

-- Any time string or number -> TIMESTAMPTZ (UTC), NULL when refused; hour_off as for kvir_local_to_utc_o.
CREATE OR REPLACE MACRO kvir_parse_ts_o(s, tz, off_min, hour_off) AS CASE
    WHEN s IS NULL THEN NULL
    WHEN kvir_naive_ts(s) IS NOT NULL THEN kvir_local_to_utc_o(kvir_naive_ts(s), tz, off_min, hour_off)
    ELSE CASE kvir_ts_kind(s)
        WHEN 'offset' THEN TRY_CAST(regexp_replace(trim(s), '\s*(UTC|GMT)$', '+00:00') AS TIMESTAMPTZ)
        WHEN 'naive' THEN kvir_local_to_utc(TRY_CAST(trim(s) AS TIMESTAMP), tz, off_min)
        WHEN 'epoch' THEN kvir_epoch_to_utc(trim(s))
        ELSE kvir_clf_ts(s, tz, off_min) END
    END;

-- Any time string or number -> TIMESTAMPTZ (UTC), NULL when refused.
CREATE OR REPLACE MACRO kvir_parse_ts(s, tz, off_min) AS kvir_parse_ts_o(s, tz, off_min, NULL::INTEGER);

-- The offset of the stable span of z (a source's tz_spans: lo1, hi1, off1, ... lo4, hi4, off4) that holds
-- local time t; NULL when none does.
CREATE OR REPLACE MACRO kvir_span_off(t, z) AS CASE
    WHEN t IS NULL OR z IS NULL THEN NULL
    WHEN t >= z.lo1 AND t < z.hi1 THEN z.off1
    WHEN t >= z.lo2 AND t < z.hi2 THEN z.off2
    WHEN t >= z.lo3 AND t < z.hi3 THEN z.off3
    WHEN t >= z.lo4 AND t < z.hi4 THEN z.off4
    ELSE NULL END;

-- The fast path for host-local logs: s a time string, t_naive = kvir_naive_ts(s) computed once by the
-- adapter, z the source's tz_spans. Same answer as kvir_parse_ts(s, tz, off_min).
CREATE OR REPLACE MACRO kvir_local_ts_to_utc(s, t_naive, tz, off_min, z) AS CASE
    WHEN t_naive IS NOT NULL THEN kvir_local_to_utc_o(t_naive, tz, off_min, kvir_span_off(t_naive, z))
    ELSE kvir_parse_ts(s, tz, off_min) END;

-- Year-less local stamps ('MM-DD HH:MM:SS', vLLM's default date format).
-- The candidate dates: the stamp in each year from the window's first year - 1 to its last year + 1.
CREATE OR REPLACE MACRO kvir_yearless_candidates(md, ws, we) AS list_filter(
    list_transform(range(year(ws) - 1, year(we) + 2),
                   lambda y: try_strptime(CAST(y AS VARCHAR) || '-' || trim(md), '%Y-%m-%d %H:%M:%S')),
    lambda t: t IS NOT NULL);

-- Each candidate with its distance from the window (0 inside), nearest first.
CREATE OR REPLACE MACRO kvir_yearless_ranked(md, ws, we) AS list_sort(list_transform(
    kvir_yearless_candidates(md, ws, we),
    lambda t: {'d': CASE WHEN t < timezone('UTC', ws) THEN timezone('UTC', ws) - t
                         WHEN t > timezone('UTC', we) THEN t - timezone('UTC', we)
                         ELSE INTERVAL 0 SECOND END, 't': t}));

-- The naive local TIMESTAMP of a year-less stamp: in `year` when given, else in the year nearest the
-- window (ws, we: TIMESTAMPTZ). NULL when refused (see kvir_yearless_problem).
CREATE OR REPLACE MACRO kvir_yearless_ts(md, year, ws, we) AS CASE
    WHEN md IS NULL THEN NULL
    WHEN year IS NOT NULL THEN try_strptime(CAST(year AS VARCHAR) || '-' || trim(md), '%Y-%m-%d %H:%M:%S')
    WHEN ws IS NULL OR we IS NULL THEN NULL
    WHEN len(kvir_yearless_ranked(md, ws, we)) = 0 THEN NULL
    WHEN len(kvir_yearless_ranked(md, ws, we)) > 1
         AND kvir_yearless_ranked(md, ws, we)[1].d = kvir_yearless_ranked(md, ws, we)[2].d THEN NULL
    ELSE kvir_yearless_ranked(md, ws, we)[1].t END;

CREATE OR REPLACE MACRO kvir_yearless_problem(md, year, ws, we) AS CASE
    WHEN md IS NULL THEN 'missing timestamp'
    WHEN NOT regexp_full_match(trim(md), '[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}')
        THEN 'unparseable year-less timestamp: ' || left(md, 40)
    WHEN year IS NOT NULL THEN 'year-less timestamp is not a valid date in ' || year || ': ' || left(md, 40)
    WHEN ws IS NULL OR we IS NULL THEN 'year-less timestamp and no year (--year) or incident window'
    WHEN len(kvir_yearless_ranked(md, ws, we)) = 0 THEN 'year-less timestamp is not a valid date near the window: ' || left(md, 40)
    WHEN len(kvir_yearless_ranked(md, ws, we)) > 1
         AND kvir_yearless_ranked(md, ws, we)[1].d = kvir_yearless_ranked(md, ws, we)[2].d
        THEN 'ambiguous year for a year-less timestamp (pass --year): ' || left(md, 40)
    ELSE NULL END;

-- Why kvir_parse_ts refused s (call only where it returned NULL or out of range).
CREATE OR REPLACE MACRO kvir_ts_problem(s, u, tz, off_min) AS CASE
    WHEN s IS NULL THEN 'missing timestamp'
    WHEN kvir_ts_kind(s) = 'unknown' THEN 'unparseable timestamp: ' || left(s, 40)
    WHEN kvir_ts_kind(s) = 'epoch' AND u IS NULL THEN kvir_epoch_problem(trim(s))
    WHEN kvir_ts_kind(s) = 'naive' AND TRY_CAST(trim(s) AS TIMESTAMP) IS NULL THEN 'unparseable timestamp: ' || left(s, 40)
    WHEN kvir_ts_kind(s) = 'naive' AND u IS NULL THEN kvir_local_problem(TRY_CAST(trim(s) AS TIMESTAMP), tz, off_min)
    WHEN u IS NULL THEN 'unparseable timestamp: ' || left(s, 40)
    WHEN NOT kvir_in_range(u) THEN 'timestamp outside 1990-2100: ' || left(s, 40)
    ELSE NULL END;

-- A count that must be a non-negative integer: accepts 681281, "681281", 681281.0; NULL otherwise.
CREATE OR REPLACE MACRO kvir_count(x) AS CASE
    WHEN TRY_CAST(x AS DOUBLE) IS NULL THEN NULL
    WHEN TRY_CAST(x AS DOUBLE) < 0 OR TRY_CAST(x AS DOUBLE) <> floor(TRY_CAST(x AS DOUBLE)) THEN NULL
    WHEN TRY_CAST(x AS DOUBLE) > 9.0e15 THEN NULL
    ELSE CAST(TRY_CAST(x AS DOUBLE) AS BIGINT) END;

-- Non-empty trimmed text or NULL.
CREATE OR REPLACE MACRO kvir_text(x) AS nullif(trim(CAST(x AS VARCHAR)), '');
-- The one normalisation of identifiers (request_id, bootstrap_room, account_id), applied to every adapter's
-- output by the shared epilogue (kvir.ingest.epilogue): whitespace at either end (space, tab, CR, LF, VT, FF)
-- is not part of an id, and an id of whitespace only is no id. So ' r1', 'r1 ' and 'r1' are one request.
CREATE OR REPLACE MACRO kvir_id(x) AS nullif(trim(CAST(x AS VARCHAR), e' \t\r\n\x0b\x0c'), '');
-- An id written as a number has one text per value, whichever reader or format holds it: the text DuckDB's JSON
-- functions write for it (json_extract_string, yyjson: 1e-6, 1e-06 and 0.000001 are all 0.000001; 1.5E+300 is
-- 1.5e300; 1E5 is 100000.0; integers as their digits). Adapters read an id field of a JSON record as JSON and take
-- it with ->> '$' (from_json's VARCHAR would write 1e-06), so a string stays exactly as written ("1e-06" is another
-- id than the number 1e-06). kvir_number_id gives that text for an id that is no JSON value: a typed number (a
-- Parquet DOUBLE column) or a number as Python's repr writes it (SGLang's text log), a quoted repr string unquoted;
-- anything else as it is.
CREATE OR REPLACE MACRO kvir_number_id(x) AS CASE
    WHEN x IS NULL THEN NULL
    WHEN typeof(x) IN ('DOUBLE', 'FLOAT') THEN json_extract_string(to_json(x), '$')
    WHEN starts_with(CAST(x AS VARCHAR), '''') AND ends_with(CAST(x AS VARCHAR), '''') AND length(CAST(x AS VARCHAR)) >= 2
        THEN substr(CAST(x AS VARCHAR), 2, length(CAST(x AS VARCHAR)) - 2)
    WHEN regexp_full_match(CAST(x AS VARCHAR), '-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?') AND json_valid(CAST(x AS VARCHAR))
        THEN json_extract_string(CAST(x AS VARCHAR), '$')
    ELSE CAST(x AS VARCHAR) END;

-- Outcome of a request from the HTTP status the client got.
CREATE OR REPLACE MACRO kvir_outcome_from_status(st) AS CASE
    WHEN st IS NULL THEN NULL
    WHEN st >= 200 AND st < 300 THEN 'served'
    WHEN st = 499 OR st = 0 THEN 'aborted'        -- client closed the connection (nginx 499, Envoy 0)
    WHEN st >= 400 AND st < 500 THEN 'rejected'
    WHEN st >= 500 THEN 'failed'
    ELSE NULL END;

-- Outcome from an SGLang finish_reason: stop/length = served (HTTP 200); abort carries its status_code
-- (400 = rejected by validation, 5xx = transfer/engine failure, none = client abort).
CREATE OR REPLACE MACRO kvir_sglang_outcome(ftype, status_code) AS CASE
    WHEN ftype IN ('stop', 'length') THEN 'served'
    WHEN ftype = 'abort' AND status_code IS NOT NULL THEN kvir_outcome_from_status(status_code)
    WHEN ftype = 'abort' THEN 'aborted'
    ELSE NULL END;

-- SGLang's scheduler refusing a prompt for length: Req.set_finish_with_abort logs, in every build 0.5.11-0.5.23,
-- `[<host-local time>[ <rank tags>]] Input length (N tokens) exceeds the maximum allowed length (M tokens). Use a
-- shorter input or enable --allow-auto-truncate., self.rid='<rid>'` and then swaps the prompt for a 1-token stub,
-- so the request's own Finish line says prompt_tokens 1. NULL for any other line (cheap: one position() first).
CREATE OR REPLACE MACRO kvir_sglang_rejection(line) AS CASE
    WHEN position('exceeds the maximum allowed length' IN line) > 0 THEN regexp_extract(line,
        '^(?:\S+\s+(?:stdout|stderr)\s+[FP]\s+|\S+\s+)?\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)?(?: [^\]]*)?\] '
        || 'Input length \((\d+) tokens\) exceeds the maximum allowed length \((\d+) tokens\)\..*, self\.rid=(?:''([^'']*)''|"([^"]*)")\s*$',
        ['stamp', 'tokens', 'limit', 'rid', 'rid_dq']) END;
-- The real prompt length of a request SGLang rejected for length, from the abort's message (finish_reason.message
-- repeats the scheduler's text: the Finish line's prompt_tokens is the stub's 1), else NULL.
CREATE OR REPLACE MACRO kvir_sglang_rejected_len(message) AS
    TRY_CAST(nullif(regexp_extract(message, 'Input length \((\d+) tokens\) exceeds the maximum allowed length', 1), '') AS BIGINT);

CREATE OR REPLACE MACRO kvir_sglang_status(ftype, status_code) AS CASE
    WHEN ftype IN ('stop', 'length') THEN 200
    WHEN ftype = 'abort' THEN status_code
    ELSE NULL END;

-- The offset for sources whose naive times are UTC by definition (router, LiteLLM, Langfuse, Helicone):
-- 0 unless the source's own settings give a zone (a [[sources]] entry says otherwise).
CREATE OR REPLACE MACRO kvir_utc_off(tz, off_min) AS CASE WHEN tz IS NULL THEN coalesce(off_min, 0) ELSE off_min END;

-- A duration written with its unit (Rust Duration debug: 151.123456789s, 812.5ms, 950µs, 12ns) in seconds.
CREATE OR REPLACE MACRO kvir_duration_s(x) AS CASE
    WHEN regexp_full_match(trim(x), '[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s)') THEN
        TRY_CAST(regexp_extract(trim(x), '^([0-9]+(\.[0-9]+)?)', 1) AS DOUBLE) *
        CASE regexp_extract(trim(x), '(ns|µs|us|ms|s)$', 1)
            WHEN 'ns' THEN 1e-9 WHEN 'µs' THEN 1e-6 WHEN 'us' THEN 1e-6 WHEN 'ms' THEN 1e-3 ELSE 1.0 END
    ELSE NULL END;

-- Is this URL path an LLM generation endpoint (chat/completions, completions, generate, responses,
-- messages)? NULL when there is no path (then a record is kept: it cannot be ruled out).
CREATE OR REPLACE MACRO kvir_is_generation_path(p) AS
    regexp_matches(p, '/(v1/)?(chat/completions|completions|generate|responses|messages)/?(\?.*)?$');

-- An adapter's verdict on a record (queries/adapters/README.md): NULL = a request; kvir_skip(why) =
-- counted, not a request; kvir_bad(why) = quarantined. The shared epilogue (kvir.ingest.epilogue) turns it
-- into the record's kind and reason.
CREATE OR REPLACE MACRO kvir_skip(why) AS {'kind': 'skip', 'reason': CAST(why AS VARCHAR)};
CREATE OR REPLACE MACRO kvir_bad(why) AS {'kind': 'bad', 'reason': CAST(why AS VARCHAR)};
-- The verdict on a record the reader could hand over but whose JSON object did not parse: a blank line is
-- counted (skip); anything else is quarantined.
CREATE OR REPLACE MACRO kvir_unparsed(text) AS CASE
    WHEN trim(text) = '' THEN kvir_skip('blank line')
    WHEN json_valid(text) THEN kvir_bad('JSON value is not an object')
    ELSE kvir_bad('malformed JSON') END;
-- The verdict the reader's problem or an unparsed JSON record gives, else NULL (the adapter decides):
-- an adapter's verdict is coalesce(kvir_reader_verdict(problem, text, parsed), <its own CASE>).
CREATE OR REPLACE MACRO kvir_reader_verdict(problem, text, parsed) AS CASE
    WHEN problem IS NOT NULL THEN kvir_bad(problem)
    WHEN parsed IS NULL THEN kvir_unparsed(text) END;

-- Outcome of a request whose client-facing status is known, with Envoy-style response flags:
-- DC (downstream connection termination) = the client went away; UF/UO/UC/UT/URX/NR with no status = failed.
CREATE OR REPLACE MACRO kvir_proxy_outcome(st, flags) AS CASE
    WHEN coalesce(flags, '') SIMILAR TO '(.*,)?DC(,.*)?' THEN 'aborted'
    WHEN coalesce(st, 0) = 0 AND coalesce(flags, '') SIMILAR TO '(.*,)?(UF|UO|UC|UT|URX|NR|UH|UMSDR)(,.*)?' THEN 'failed'
    ELSE kvir_outcome_from_status(st) END;

-- OTLP/JSON attributes ([{"key": k, "value": {"stringValue" | "intValue" (a string) | "doubleValue" |
-- "boolValue": v}}]): the value of key k as text, NULL when absent.
CREATE OR REPLACE MACRO kvir_otlp_attr(attrs, k) AS (
    SELECT coalesce(v ->> '$.stringValue', v ->> '$.intValue', v ->> '$.doubleValue', v ->> '$.boolValue')
    FROM (SELECT list_filter(CAST(json_extract(attrs, '$[*]') AS JSON[]), lambda a: (a ->> '$.key') = k)[1] -> '$.value' AS v));

-- An OTLP/JSON array attribute ({"arrayValue": {"values": [{"stringValue": ...}, ...]}}) as a list of text, NULL when
-- absent (gen_ai.response.finish_reasons).
CREATE OR REPLACE MACRO kvir_otlp_list(attrs, k) AS (
    SELECT json_extract_string(v, '$.arrayValue.values[*].stringValue')
    FROM (SELECT list_filter(CAST(json_extract(attrs, '$[*]') AS JSON[]), lambda a: (a ->> '$.key') = k)[1] -> '$.value' AS v));

-- A duration in seconds as an INTERVAL; NULL when missing, not finite or beyond ±10^7 s (115 days): a
-- latency no request has, which would also overflow the microsecond arithmetic.
CREATE OR REPLACE MACRO kvir_span(sec) AS CASE
    WHEN sec IS NULL OR isnan(sec) OR isinf(sec) OR abs(sec) > 10000000 THEN NULL
    ELSE to_microseconds(CAST(round(sec * 1e6) AS BIGINT)) END;

-- Why a latency or duration (seconds, DOUBLE) cannot be a request's: NULL when it can (0 to 10^7 s). NaN and
-- infinity get their own reason (in DuckDB NaN compares greater than every number, so a plain `> 10^7` test
-- calls it "over 10^7 s"); `field` names the field as the format writes it. Unreadable text (a NULL number) is
-- the adapter's to say: it knows whether the field was there.
CREATE OR REPLACE MACRO kvir_span_problem(sec, field) AS CASE
    WHEN sec IS NULL THEN NULL
    WHEN isnan(sec) THEN field || ' is NaN (not a number)'
    WHEN isinf(sec) THEN field || ' is infinite (' || CAST(sec AS VARCHAR) || ')'
    WHEN sec < 0 THEN 'negative ' || field
    WHEN sec > 10000000 THEN 'implausible ' || field || ' (over 10^7 s)'
    END;

-- The trigger, the SQL twin of kvir/rules/trigger.py (tests/test_trigger.py checks they agree).
-- SGLang's scheduler limit max_req_input_len = min(context_len - 1, pool - 1) - 5 (a prompt this long or
-- longer does not fit). Either number may be unknown (NULL): least() ignores NULLs, so the other bounds it.
CREATE OR REPLACE MACRO kvir_max_req_input_len(context_len, pool_tokens) AS
    least(context_len - 1, pool_tokens - 1) - 5;

-- The engine's own prompt limit (kvir/rules/engines.py): the shortest prompt it refuses. SGLang:
-- max_req_input_len; vLLM: max_model_len (the context); any other engine: NULL (not known).
CREATE OR REPLACE MACRO kvir_engine_limit(engine, context_len, pool_tokens) AS CASE engine
    WHEN 'sglang' THEN kvir_max_req_input_len(context_len, pool_tokens)
    WHEN 'vllm' THEN context_len END;

-- The shortest prompt a rule counts as exposed: public = more than the pool; engine = the engine's limit
-- (NULL when the engine is unknown: the rule is not available).
CREATE OR REPLACE MACRO kvir_rule_threshold(rule, engine, pool_tokens, context_len) AS CASE rule
    WHEN 'public' THEN pool_tokens + 1
    WHEN 'engine' THEN kvir_engine_limit(engine, context_len, pool_tokens) END;

-- Triage categories, shared by the length rule's triage/hits and triage/hits_pool_in_effect (their header
-- comments say what each category means). `gran` is ts_granularity_s: 0 or NULL for an exact start;
-- otherwise the start lies in [ts, ts + gran) and counts as inside the window [ws, we] only if all of it does.
CREATE OR REPLACE MACRO kvir_span_inside(ts, gran, ws, we) AS
    coalesce(gran, 0) = 0 OR (ts >= ws AND ts + gran * INTERVAL 1 SECOND - INTERVAL 1 MICROSECOND <= we);

-- A request the client got no response to (rejected, failed, aborted: the outcome the case stores, e.g. from
-- its HTTP status) is that outcome even when its prompt length is unknown: whatever its length, nothing was
-- served, so it is decided (counted apart, as when the rule holds), never "undecidable" (issue 36).
CREATE OR REPLACE MACRO kvir_triage_category(prompt_tokens, hit, outcome, ts, gran, ws, we) AS CASE
    WHEN prompt_tokens IS NULL AND outcome IN ('rejected', 'failed', 'aborted') THEN outcome
    WHEN prompt_tokens IS NULL THEN 'undecidable'
    WHEN NOT hit THEN 'other-rule'
    WHEN outcome = 'served' AND NOT kvir_span_inside(ts, gran, ws, we) THEN 'possibly-affected'
    WHEN outcome = 'served' THEN 'affected'
    WHEN outcome IN ('rejected', 'failed', 'aborted') THEN outcome
    ELSE 'undecidable' END;

CREATE OR REPLACE MACRO kvir_undecidable_reason(prompt_tokens, hit, outcome) AS CASE
    WHEN prompt_tokens IS NULL AND outcome IN ('rejected', 'failed', 'aborted') THEN NULL
    WHEN prompt_tokens IS NULL THEN 'prompt length unknown'
    WHEN hit AND outcome IS NULL THEN 'outcome unknown (no HTTP status, and no finish reason that says served or not: e.g. content_filter)' END;

-- Several prompts in one completion call: a body's usage.prompt_tokens S over k choices (prompt_parts) may be
-- one S-token prompt sampled k times or up to k prompts that add up to S, so its longest prompt is between
-- ceil(S / k) and S tokens. A served request the rule flags only through S is possibly affected, with the
-- reason; where ceil(S / k) already reaches the threshold, or engine lines gave each prompt, it is decided.
CREATE OR REPLACE MACRO kvir_parts_unsettled(prompt_tokens, parts, threshold) AS
    coalesce(parts > 1 AND prompt_tokens >= threshold AND ceil(prompt_tokens / parts) < threshold, false);
CREATE OR REPLACE MACRO kvir_parts_category(category, prompt_tokens, parts, threshold) AS CASE
    WHEN category = 'affected' AND kvir_parts_unsettled(prompt_tokens, parts, threshold) THEN 'possibly-affected'
    ELSE category END;
CREATE OR REPLACE MACRO kvir_parts_reason(prompt_tokens, parts, threshold) AS CASE
    WHEN kvir_parts_unsettled(prompt_tokens, parts, threshold) THEN
        'the response has ' || parts || ' choices and usage.prompt_tokens ' || prompt_tokens || ' adds up their prompts ('
        || parts || ' samples of one prompt, or up to ' || parts || ' prompts): the longest prompt is between '
        || CAST(ceil(prompt_tokens / parts) AS BIGINT) || ' and ' || prompt_tokens || ' tokens, undecidable against '
        || threshold END;

CREATE OR REPLACE MACRO kvir_time_note(ts, gran, ws, we) AS CASE WHEN coalesce(gran, 0) > 0 THEN
    'start known only to within ' || gran || ' s: [' || strftime(ts, '%Y-%m-%dT%H:%M:%SZ') || ', '
    || strftime(ts + gran * INTERVAL 1 SECOND, '%Y-%m-%dT%H:%M:%SZ') || ')'
    || CASE WHEN kvir_span_inside(ts, gran, ws, we) THEN ', inside the window' ELSE ', crossing a window edge' END
    END;
