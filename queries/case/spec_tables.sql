-- spec_tables: the case tables that hold the incident spec, so every later stage and report reads the case alone.
-- Params: none
-- Idempotent: a case made before a table existed gains it empty; kvir.case.spec_tables fills them.
--   incident      key/value facts of [incident] and [trigger] (the trigger's numbers and rule)
--   account_rules [[accounts]]: accounts the responders know (label, reason, exclude)
--   hand_events   [[events]]: the timeline known by hand
--   disclosure    [disclosure] keys; value is JSON text (strings, numbers, lists, tables)
--   defect        [defect] keys: the engine defect the responders declare (JSON values)
CREATE TABLE IF NOT EXISTS incident (key VARCHAR, value VARCHAR);
CREATE TABLE IF NOT EXISTS account_rules (account_id VARCHAR PRIMARY KEY, label VARCHAR, reason VARCHAR, exclude BOOLEAN);
CREATE TABLE IF NOT EXISTS hand_events (seq INTEGER, ts TIMESTAMPTZ, title VARCHAR, actor VARCHAR, category VARCHAR,
                                     description VARCHAR, visibility VARCHAR, source VARCHAR);
CREATE TABLE IF NOT EXISTS disclosure (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS defect (key VARCHAR PRIMARY KEY, value VARCHAR);
