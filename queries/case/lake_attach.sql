-- lake_attach: how the inputs of canonical datasets (kvir ingest shards) were read, into the case, every source numbered afresh.
-- Params: none
-- Inputs: __sources__, __source_counts__, __quarantine__, __evidence_joins__, __metric_samples__, __skipped_inputs__, __conflicts__, __shards__
--
-- Each input relation is one side table of every lake (toolkit/ingest/lake.py), with the columns the
-- shard wrote plus `shard` (its partition) and `lake` (the lake's position on the command line).
-- source_id is local to a shard: lake_sources maps (lake, shard, shard_source_id) to the case's id, and
-- labels and skipped paths are prefixed with their shard ("host-a:/var/log/x.log"). The case's
-- quarantine is a table here (a triage of raw logs makes it a view over the quarantined records).
CREATE OR REPLACE TABLE lake_sources AS
SELECT CAST(row_number() OVER (ORDER BY s.lake, s.shard, s.source_id) AS INTEGER) AS source_id,
       s.lake, s.shard, s.source_id AS shard_source_id
FROM __sources__ AS s;

CREATE OR REPLACE TABLE lake_shards AS
SELECT * FROM __shards__;

INSERT INTO sources BY NAME
SELECT s.* EXCLUDE (lake, shard, source_id) REPLACE (s.shard || ':' || s.label AS label), m.source_id
FROM __sources__ AS s
JOIN lake_sources AS m ON m.lake = s.lake AND m.shard = s.shard AND m.shard_source_id = s.source_id;

INSERT INTO source_counts
SELECT m.source_id, c.kind, c.reason, c.n
FROM __source_counts__ AS c
JOIN lake_sources AS m ON m.lake = c.lake AND m.shard = c.shard AND m.shard_source_id = c.source_id;

CREATE OR REPLACE TABLE quarantine AS
SELECT m.source_id, q.source_line, q.reason, q.raw, q.source_file, q.format
FROM __quarantine__ AS q
JOIN lake_sources AS m ON m.lake = q.lake AND m.shard = q.shard AND m.shard_source_id = q.source_id;

INSERT INTO evidence_joins BY NAME
SELECT e.* EXCLUDE (lake, shard, source_id), m.source_id
FROM __evidence_joins__ AS e
JOIN lake_sources AS m ON m.lake = e.lake AND m.shard = e.shard AND m.shard_source_id = e.source_id;

INSERT INTO metric_samples BY NAME
SELECT x.* EXCLUDE (lake, shard, source_id), m.source_id
FROM __metric_samples__ AS x
JOIN lake_sources AS m ON m.lake = x.lake AND m.shard = x.shard AND m.shard_source_id = x.source_id;

INSERT INTO skipped_inputs
SELECT k.shard || ':' || k.path, k.reason, k.size_bytes FROM __skipped_inputs__ AS k;

-- a conflict's records are file:line of its shard's sources: prefixed with the shard like the labels
CREATE OR REPLACE TABLE conflicts AS
SELECT c.* EXCLUDE (lake, shard) REPLACE (list_transform(c.records, lambda x: c.shard || ':' || x) AS records)
FROM __conflicts__ AS c;

-- the candidate accounts of tied requests (queries/case/conflicts_table.sql)
CREATE OR REPLACE VIEW account_candidates AS
SELECT request_id, unnest(account_candidates) AS account_id FROM conflicts WHERE account_candidates IS NOT NULL;
