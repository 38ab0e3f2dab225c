-- tables: the case tables of one kvir confirm run (a new run replaces them): what was read, fingerprinted
-- and searched. No text: ids, counts, offsets and salted hashes only.
-- Params: none
--   confirm_sources      per text source: file, format, size, SHA-256; read = with_text + without_text + skipped
--                        + quarantined
--   confirm_quarantine   each record that could not be read as its format: file (source_id), line, reason
--   confirm_docs         one row per text (a prompt or a response, per choice): where it was read, its request,
--                        sizes, the detectors' counts (for the texts of affected requests; NULL elsewhere)
--   confirm_fingerprints the winnowed fingerprints of each text: byte offset in the normalised text and the
--                        salted 64-bit value (kvir.confirm.fingerprint); never a text or an unsalted hash
--   confirm_needles      each needle looked for: --needle N (in the order given) or a probe canary (its plant
--                        request and tenant), its length and the fragment length looked for; never the needle
--   confirm_needle_hits  each response holding a needle: the longest fragment found (characters, offset)
CREATE OR REPLACE TABLE confirm_sources (
    source_id INTEGER PRIMARY KEY, path VARCHAR, format VARCHAR, chosen_by VARCHAR, size_bytes BIGINT,
    sha256 VARCHAR, "read" BIGINT, with_text BIGINT, without_text BIGINT, skipped BIGINT, quarantined BIGINT
);
CREATE OR REPLACE TABLE confirm_quarantine (source_id INTEGER, source_line BIGINT, reason VARCHAR);
CREATE OR REPLACE TABLE confirm_docs (
    doc_id BIGINT PRIMARY KEY,
    source_id INTEGER,
    source_line BIGINT,            -- the (first) record the text was read from
    request_id VARCHAR,
    part VARCHAR,                  -- prompt | response
    choice INTEGER,                -- the choice (or prompt) index; NULL: the only one or unnumbered
    chars BIGINT,                  -- characters of the text as logged
    norm_bytes BIGINT,             -- bytes of the normalised text (NFKC, lower case, whitespace runs as one space)
    kept BIGINT,                   -- windows winnowing kept, repeats included
    fingerprints BIGINT,           -- distinct fingerprints stored
    replacement_chars BIGINT,      -- U+FFFD
    control_chars BIGINT,          -- C0 and C1 controls other than tab, newline, carriage return
    symbol_chars BIGINT,           -- neither letter, digit nor whitespace
    letters BIGINT,                -- letters of any script
    script VARCHAR,                -- the script most of its letters are in (kvir.confirm.detect.SCRIPTS)
    script_share DOUBLE            -- that script's share of the letters
);
CREATE OR REPLACE TABLE confirm_fingerprints (doc_id BIGINT, pos INTEGER, fp BIGINT);
CREATE OR REPLACE TABLE confirm_needles (
    needle_id INTEGER PRIMARY KEY, kind VARCHAR, label VARCHAR, chars INTEGER, window_chars INTEGER,
    planted_by VARCHAR, planted_request_ids VARCHAR[]
);
CREATE OR REPLACE TABLE confirm_needle_hits (
    needle_id INTEGER, doc_id BIGINT, request_id VARCHAR, chars INTEGER, "offset" INTEGER, normalised BOOLEAN
);
