"""Normalise every input once into the case: sources -> records (+ quarantine) -> requests.

    sources      one row per input (a file, or a Parquet dataset): format, how it was chosen, time zone,
                 served model, node, role, size, SHA-256, and read = parsed + quarantined counts
    records      one row per request record any source holds (text inputs are parsed once into the
                 table records_text, which keeps every row an adapter produced: request, skip or bad;
                 a big log read by DuckDB's own reader has a table of its own, numbered by the view
                 records_natN (kvir.ingest.native); Parquet inputs stay in place
                 behind views records_srcN)
    quarantine   every record that could not be normalised: source, line, reason (raw text only with
                 keep_raw)
    source_counts  per source, kind (request | skip | bad) and reason: nothing is dropped unaccounted
    requests     one row per request as served (PD prefill/decode copies and the same request seen by
                 several sources merged; see queries/case/requests_merged.sql)
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from kvir.case.store import Case, memory_limit_bytes
from kvir.core.errors import InputError, KvirError, disk_problem
from kvir.ingest.lines import compression_of, iter_line_batches
from kvir.ingest.epilogue import compile_adapter
from kvir.ingest.accounts import note_unnamed_accounts
from kvir.ingest.empty import refuse_sources_without_requests
from kvir.ingest.joins import join_evidence, plan_passes
from kvir.ingest import native
from kvir.ingest.mapped import ingest_parquet, mapped_input
from kvir.ingest.readers import RECORD_SCHEMA, records_input, tagged
from kvir.ingest.settings import extra_settings
from kvir.ingest.stage import CHUNK_BYTES, interleave, run_adapter
from kvir.core.progress import ByteCounter, Reporter
from kvir.ingest.inputs import Skipped
from kvir.ingest.custody import check_unchanged, file_blank_lines, input_sizes, size_of
from kvir.ingest.sources import IngestOptions, Source, hashed_while_read, input_digest, plan_inputs, plan_sources, resolve_paths, sniff  # noqa: F401 (re-exported)

def ingest(case: Case, sources: list[Source], opts: IngestOptions, reporter: Reporter | None = None,
           skipped: list[Skipped] = ()) -> dict[str, Any]:
    """Normalise every source into the case and build `requests`. Returns per-source counts.

    Text sources of one format go through their adapter in one batch (every row tagged with its
    source_id): a query's planning costs tens of milliseconds, which a folder of thousands of small
    gateway pages must not pay per file. Parquet sources stay in place behind views."""
    con = case.con
    reporter = reporter or Reporter(enabled=False)
    # DuckDB chooses each column's compression itself. Forcing 'dictionary' (an earlier speed-up when the
    # written blocks stayed in memory until the checkpoint) leaves every non-string column uncompressed once
    # blocks are evicted while writing, as they are under the default limit: the 10 M-line log's case was
    # 2.6 GB instead of 0.33 GB, and the run 12 % slower (benchmarks/README.md "Volume").
    case.run("case/create_tables")
    case.run("case/evidence_tables")
    for s in skipped:
        con.execute("INSERT INTO skipped_inputs VALUES ($p, $r, $n)", {"p": str(s.path), "r": s.reason, "n": s.size_bytes})
    case.manifest["skipped_inputs"] = [{"path": str(s.path), "reason": s.reason} for s in skipped]
    t_all = time.perf_counter()
    sizes = input_sizes(sources)
    _register_sources(case, sources, opts, sizes)
    seconds: dict[int, float] = {}
    digests: dict[int, str] = {}      # SHA-256 of the files the line reader hashed as it read them
    natively: dict[int, native.NativeRead] = {}
    all_bytes = float(sum(sizes.values())) or 1.0
    bar = reporter.add_task(f"read {len(sources)} input{'s' * (len(sources) != 1)}", total=all_bytes)
    done = 0.0
    batches: dict[tuple[str, str], list[Source]] = {}
    for src in sources:
        if src.is_view:
            t0 = time.perf_counter()
            reporter.run(f"read {Path(src.label).name}", lambda s=src: ingest_parquet(case, s), con=con,
                         task=bar, base=done, span=sizes[src.source_id])
            _share_seconds(seconds, [src], time.perf_counter() - t0)
            done += sizes[src.source_id]
        else:
            batches.setdefault((src.format.name, _variant(src)), []).append(src)
    for (fmt, _), group in batches.items():
        t0 = time.perf_counter()
        span = float(sum(sizes[s.source_id] for s in group))
        counter = ByteCounter()
        compressed = any(compression_of(s.paths[0]) for s in group)
        label = f"read {len(group)} {fmt} file{'s' * (len(group) != 1)}"
        reading = BatchReading()
        reporter.run(label, lambda g=group, r=reading: _ingest_batch(case, g, opts, counter.add, r), counter=counter,
                     total=None if compressed else span, con=con, task=bar, base=done, span=span)
        _share_seconds(seconds, group, time.perf_counter() - t0)
        digests.update(reading.digests)
        natively.update(reading.native)
        done += span
    reporter.describe(bar, f"read {len(sources)} input{'s' * (len(sources) != 1)}")
    check_unchanged(sources, digests)       # what was parsed is what the size and SHA-256 describe
    refuse_sources_without_requests(case, sources)   # a file read as nothing is named (its notes are filed next)
    _finish_sources(case, sources, seconds, digests)
    _build_records_view(case, sources, natively)
    reporter.run("merge records into requests", lambda: _build_requests(case, sources, opts), con=con)
    case.manifest["timings"]["ingest_s"] = round(time.perf_counter() - t_all, 3)
    return source_counts(case)


# One statement per table for all sources, however many: a statement costs milliseconds (tens with a
# primary key to check), and its undo data stays until the transaction ends, so per-file statements made
# a folder of 10,000 one-record pages take minutes and gigabytes.
_SOURCE_COLUMNS = {
    "source_id": pa.int32(), "label": pa.string(), "format": pa.string(), "chosen_by": pa.string(),
    "files": pa.list_(pa.string()), "size_bytes": pa.int64(), "sha256": pa.string(), "compression": pa.string(),
    "source_tz": pa.string(), "served_model": pa.string(), "served_model_source": pa.string(),
    "node": pa.string(), "role": pa.string(), "year": pa.int32(), "notes": pa.list_(pa.string()),
}
_SETTINGS_COLUMNS = {
    "source_id": pa.int32(), "tz_iana": pa.string(), "tz_offset_min": pa.int32(), "served_model": pa.string(),
    "node": pa.string(), "role": pa.string(), "year": pa.int32(), "keep_raw": pa.bool_(),
    "max_line_bytes": pa.int64(), "file_name": pa.string(), "window_start": pa.timestamp("us", "UTC"),
    "window_end": pa.timestamp("us", "UTC"), "max_log_len": pa.int32(),
    "tz_spans": pa.struct([(f"{k}{i}", pa.int32() if k == "off" else pa.timestamp("us"))
                           for i in range(1, 5) for k in ("lo", "hi", "off")]),
}


def _insert_rows(case: Case, table: str, columns: dict[str, pa.DataType], rows: list[dict[str, Any]]) -> None:
    """INSERT the rows (dicts) into `table` (a kvir table name) in one statement, by column name."""
    name = f"{table}_new_rows"
    data = pa.Table.from_pylist(rows, schema=pa.schema(list(columns.items())))
    case.con.register(name, data)
    try:
        case.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")
    finally:
        case.con.unregister(name)


def _register_sources(case: Case, sources: list[Source], opts: IngestOptions, sizes: dict[int, int]) -> None:
    """The sources rows, the sources' settings rows, and their manifest entries (with SHA-256)."""
    src_rows, set_rows = [], []
    for src in sources:
        digest = None if hashed_while_read(src, opts) else input_digest(src, opts.hash)   # else: filled in as read
        src_rows.append({
            "source_id": src.source_id, "label": src.label, "format": src.format.name, "chosen_by": src.chosen_by,
            "files": [str(p) for p in src.paths], "size_bytes": sizes[src.source_id], "sha256": digest,
            "compression": compression_of(src.paths[0]) if not src.is_view else None,
            "source_tz": src.tz.text if src.tz else None, "served_model": src.served_model,
            "served_model_source": src.served_model_source or None, "node": src.node, "role": src.role,
            "year": src.year, "notes": list(src.notes)})
        set_rows.append({
            "source_id": src.source_id, "tz_iana": src.tz.iana if src.tz else None,
            "tz_offset_min": src.tz.offset_minutes if src.tz else None, "served_model": src.served_model,
            "node": src.node, "role": src.role, "year": src.year, "keep_raw": opts.keep_raw,
            "max_line_bytes": opts.max_line_bytes, **extra_settings(src)})
        case.manifest["inputs"].append({
            "source_id": src.source_id, "label": src.label, "format": src.format.name, "chosen_by": src.chosen_by,
            "files": [_file_entry(p, size_of(src, i)) for i, p in enumerate(src.paths)],
            "sha256": digest, "source_tz": src.tz.text if src.tz else None,
            "served_model": src.served_model, "served_model_source": src.served_model_source,
            "node": src.node, "role": src.role, "notes": src.notes})
    _insert_rows(case, "sources", _SOURCE_COLUMNS, src_rows)
    _insert_rows(case, "source_settings", _SETTINGS_COLUMNS, set_rows)


def _file_entry(p: Path, size: int | None) -> dict[str, Any]:
    """An input file as given, and, for a relative path, the file it named from this run's working directory
    (the reports name every file from one base, the case folder: kvir.report.read.shown_path)."""
    entry: dict[str, Any] = {"path": str(p), "size_bytes": size}
    if not p.is_absolute() and p.exists():
        entry["resolved"] = str(p.resolve())
    return entry


def _share_seconds(seconds: dict[int, float], group: list[Source], spent: float) -> None:
    """Time spent, shared evenly by the sources of one batch."""
    for s in group:
        seconds[s.source_id] = round(spent / len(group), 4)


def _finish_sources(case: Case, sources: list[Source], seconds: dict[int, float], digests: dict[int, str]) -> None:
    """Each source's notes (readers add some), seconds and the SHA-256 taken while reading, in one statement."""
    for entry in case.manifest["inputs"]:
        if entry["source_id"] in digests:
            entry["sha256"] = digests[entry["source_id"]]
    name = "sources_finished"
    data = pa.table({"source_id": pa.array([s.source_id for s in sources], pa.int32()),
                     "notes": pa.array([list(s.notes) for s in sources], pa.list_(pa.string())),
                     "seconds": pa.array([seconds.get(s.source_id) for s in sources], pa.float64()),
                     "sha256": pa.array([digests.get(s.source_id) for s in sources], pa.string())})
    case.con.register(name, data)
    try:
        case.con.execute(f"UPDATE sources SET notes = f.notes, seconds = f.seconds, "
                         f"sha256 = coalesce(f.sha256, sources.sha256) FROM {name} AS f "
                         "WHERE sources.source_id = f.source_id")
    finally:
        case.con.unregister(name)


def _variant(src: Source) -> str:
    """Sources of one format that need different readers go in different batches."""
    if src.format.reader == "records":
        return "records"
    if src.format.reader in ("csv-mapped", "jsonl-mapped"):
        return f"file{src.source_id}"   # each mapped file has its own columns
    return "lines"


def _build_requests(case: Case, sources: list[Source], opts: IngestOptions | None = None) -> None:
    """`requests` (a view: records that are one request each, plus the merged ones) and `conflicts`."""
    # one record per request only for generic mapped sources; every log format can hold several
    # records of one request (received/finished, PD copies, retries, overlapping pages)
    merged = len(sources) > 1 or any(not s.format.name.startswith("generic") for s in sources) or \
        any("bootstrap_room" in s.columns for s in sources)
    case.run("case/conflicts_table")
    note_unnamed_accounts(case, sources)
    if not merged:
        case.run("case/requests_direct")
        return
    case.run("case/spec_tables")      # the incident's models, for the most exposing reading (if a spec was recorded)
    any_room = case.con.execute("SELECT count(*) > 0 FROM (SELECT 1 FROM records "
                                "WHERE bootstrap_room IS NOT NULL LIMIT 1)").fetchone()[0]
    case.run("case/requests_merged", {"any_room": bool(any_room)})
    if case.con.execute("SELECT count(*) FROM requests_grouped WHERE conflict").fetchone()[0]:
        case.run("case/conflicts")
    if plan_passes(sources):          # the evidence join rewrites requests: it needs a table
        case.con.execute("CREATE TABLE requests_joined AS SELECT * FROM requests")
        case.con.execute("DROP VIEW requests")
        case.con.execute("ALTER TABLE requests_joined RENAME TO requests")
        join_evidence(case, sources, (opts or IngestOptions()).join_tolerance_s)


class BatchReading:
    """What the readers learn while a batch streams by: each uncompressed file's SHA-256 (computed from
    the bytes read, so a file is read once), and the lines the reader repaired for invalid UTF-8 (few:
    kept as (source_id, line_no) for queries/case/invalid_utf8.sql)."""

    def __init__(self) -> None:
        import threading

        self.digests: dict[int, str] = {}
        self.native: dict[int, native.NativeRead] = {}      # sources DuckDB's own readers read
        self.repaired: list[tuple[int, int]] = []
        self.blank: dict[int, int] = {}       # empty lines per source: counted, never rows
        self.lock = threading.Lock()

    def blanks(self, source_id: int):
        """The line reader's callback for a source's empty lines."""
        def add(n: int) -> None:
            with self.lock:
                self.blank[source_id] = self.blank.get(source_id, 0) + n
        return add

    def note(self, batch: pa.RecordBatch, source_id: int) -> None:
        """Keep the numbers of the batch's lines the reader repaired."""
        rep = batch.column("repaired")
        if rep.true_count if hasattr(rep, "true_count") else any(rep.to_pylist()):
            nos = batch.column("line_no").to_numpy()[rep.to_numpy(zero_copy_only=False)]
            with self.lock:
                self.repaired += [(source_id, int(n)) for n in nos]

    def lines(self, src: Source, opts: IngestOptions, on_bytes=None, hashed: bool = False):
        """The file's numbered lines, tagged; with hashed, its SHA-256 computed on the way."""
        import hashlib

        h = hashlib.sha256() if hashed else None
        for b in iter_line_batches(src.paths[0], opts.max_line_bytes, on_bytes=on_bytes, text=True, digest=h,
                                   stamp=src.stamp(), blanks=self.blanks(src.source_id)):
            self.note(b, src.source_id)
            yield tagged(b, src.source_id, opts.max_line_bytes)
        if h is not None:
            self.digests[src.source_id] = h.hexdigest()


def _file_batch(case: Case, group: list[Source], reading: BatchReading) -> None:
    """After a batch's records are in records_text: records whose identifiers hold invalid UTF-8 are
    quarantined, then the quarantine and every source's counts are filed (queries/case/file_batch.sql)."""
    tag = f"batch{group[0].source_id}"
    tables = {f"{tag}_ids": pa.table({"source_id": pa.array([s.source_id for s in group], pa.int32())})}
    if reading.repaired:
        tables[f"{tag}_repaired"] = pa.table({"source_id": pa.array([r[0] for r in reading.repaired], pa.int32()),
                                              "line_no": pa.array([r[1] for r in reading.repaired], pa.int64())})
    for name, t in tables.items():
        case.con.register(name, t)
    try:
        if reading.repaired:
            case.run("case/invalid_utf8", inputs={"records": "records_text", "repaired": f"{tag}_repaired"})
        case.run("case/file_batch", inputs={"batch": f"{tag}_ids"})
        file_blank_lines(case, group, reading.blank)
    finally:
        for name in tables:
            case.con.unregister(name)


def _chunk_bytes(con) -> int:
    """Lines handed to DuckDB per chunk: a third of DuckDB's memory limit, between 16 and 128 MiB. About
    three chunks are held at once (one parsed, one read ahead, one being filled), outside DuckDB's limit.
    Smaller chunks cost throughput (64 MiB: ~1.5x the ingest time of 128 MiB on the 10 M-line log), so
    the default limit (384 MiB) gets the full 128 MiB (benchmarks/README.md "Volume")."""
    return max(16 << 20, min(CHUNK_BYTES, memory_limit_bytes(con) // 3))


def _lines_of(group: list[Source], opts: IngestOptions, reading: BatchReading, on_bytes=None) -> pa.RecordBatchReader:
    """The numbered lines of every file in the group, one stream, each row tagged with its source_id."""
    def producer(src: Source):
        return lambda: reading.lines(src, opts, on_bytes, hashed_while_read(src, opts))
    # several files are split in parallel threads (kvir.ingest.stage.interleave); each row keeps its source and line
    return pa.RecordBatchReader.from_batches(RECORD_SCHEMA, interleave([producer(s) for s in group]))


def _ingest_batch(case: Case, group: list[Source], opts: IngestOptions, on_bytes=None,
                  reading: BatchReading | None = None) -> None:
    con = case.con
    fmt = group[0].format
    reading = reading or BatchReading()
    whole = group
    name = f"batch{group[0].source_id}_input"
    reader = fmt.reader
    inp: Any
    if reader == "lines" and fmt.native is not None:
        group = native.read_natively(case, group, opts, reading.digests, reading.native, on_bytes)
        if not group:
            _file_batch(case, whole, reading)
            return
    if reader == "lines":
        inp = _lines_of(group, opts, reading, on_bytes)
    elif reader == "records":
        inp = records_input(case, group, opts, on_bytes, reading.note, reading.blanks)
    elif reader in ("jsonl-mapped", "csv-mapped"):
        inp = mapped_input(case, group[0], opts, reading.blanks(group[0].source_id))
    else:
        raise InputError(f"format {fmt.name} has no reader {reader!r}")
    if fmt.side_query:
        con.register(name, inp)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name}_kept AS SELECT * FROM {name}")
        con.unregister(name)
        name, inp = f"{name}_kept", None
    schema = inp.schema if isinstance(inp, (pa.RecordBatchReader, pa.Table)) else None
    sql = compile_adapter(case, fmt.adapter, name, schema, parse=fmt.parse, request_fields_only=True,
                          settings_columns=fmt.settings_columns)
    try:
        # a stream of lines runs in chunks DuckDB parses on every thread, appended to records_text (kvir.ingest.stage)
        run_adapter(con, name, inp, sql, chunk_bytes=_chunk_bytes(con))
    except Exception as e:  # a reader error (e.g. a truncated gzip member) names the files
        if disk_problem(str(e)) and not isinstance(e, KvirError):
            raise                # the case's disk, not the input: the CLI says so in one line
        where = group[0].label if len(group) == 1 else f"{group[0].label} (+{len(group) - 1} more {fmt.name} files)"
        raise InputError(f"cannot read as {fmt.name}: {e}", path=where) from None
    finally:
        try:
            con.unregister(name)
        except Exception:
            pass
    _file_batch(case, whole, reading)
    if fmt.side_query:
        case.run(fmt.side_query, inputs={"input": name, "settings": "source_settings"})
        con.execute(f"DROP TABLE {name}")


def _build_records_view(case: Case, sources: list[Source], natively: dict[int, native.NativeRead]) -> None:
    """records = text records (a table) + every natively read or in-place source's request rows;
    quarantine likewise, but such a source joins it only when its counts say it has bad rows (so a clean
    10^8-row dataset is never scanned just to list nothing). A source whose every row is a request needs
    no `kind` filter either: testing it would read every row's id and time just to keep them all
    (measured: the filter doubled triage's scan of 10^8 Parquet rows)."""
    bad = {r[0] for r in case.con.execute(
        "SELECT DISTINCT source_id FROM source_counts WHERE kind = 'bad'").fetchall()}
    mixed = {r[0] for r in case.con.execute(
        "SELECT DISTINCT source_id FROM source_counts WHERE kind <> 'request'").fetchall()}
    views = {sid: n.view for sid, n in natively.items()}
    views.update({s.source_id: f"records_src{s.source_id}" for s in sources if s.is_view})
    parts = ["SELECT * FROM records_text WHERE kind = 'request'"]
    parts += [f"SELECT * FROM {v}" + (" WHERE kind = 'request'" if sid in mixed else "") for sid, v in views.items()]
    case.con.execute("CREATE OR REPLACE VIEW records AS " + " UNION ALL ".join(parts))
    qparts = ["SELECT *, NULL::VARCHAR AS source_path FROM quarantine_text"]
    qparts += [f"SELECT source_id, source_line, reason, raw, source_path FROM {v} WHERE kind = 'bad'"
               for sid, v in views.items() if sid in bad]
    case.con.execute("CREATE OR REPLACE VIEW quarantine AS SELECT q.* EXCLUDE (source_path), "
                     "coalesce(q.source_path, s.label) AS source_file, s.format "
                     "FROM (" + " UNION ALL ".join(qparts) + ") AS q JOIN sources AS s USING (source_id)")


def source_counts(case: Case) -> dict[str, Any]:
    rows = case.con.execute("""
        SELECT s.source_id, s.label, s.format, s.chosen_by, s.source_tz, s.served_model, s.served_model_source,
               s.node, s.role, s.notes,
               coalesce(sum(c.n), 0) AS read,
               coalesce(sum(c.n) FILTER (WHERE c.kind <> 'bad'), 0) AS parsed,
               coalesce(sum(c.n) FILTER (WHERE c.kind = 'request'), 0) AS requests,
               coalesce(sum(c.n) FILTER (WHERE c.kind = 'skip'), 0) AS skipped,
               coalesce(sum(c.n) FILTER (WHERE c.kind = 'bad'), 0) AS quarantined
        FROM sources AS s LEFT JOIN source_counts AS c USING (source_id)
        GROUP BY ALL ORDER BY s.source_id""").fetchall()
    names = ["source_id", "label", "format", "chosen_by", "source_tz", "served_model", "served_model_source",
             "node", "role", "notes", "read", "parsed", "requests", "skipped", "quarantined"]
    return {"sources": [dict(zip(names, r)) for r in rows]}


def refuse_naive_without_zone(case: Case) -> None:
    """Naive timestamps (no offset) with no source time zone: an error naming the first such record."""
    if not case.con.execute("SELECT count(*) FROM source_counts WHERE reason LIKE 'naive timestamp%'").fetchone()[0]:
        return
    row = case.con.execute("SELECT source_file, source_line FROM quarantine WHERE reason LIKE 'naive timestamp%' "
                           "ORDER BY source_id, source_line LIMIT 1").fetchone()
    if row:
        raise InputError("holds naive timestamps (no offset) and no source time zone was given",
                         path=row[0], line=row[1], hint="pass --source-tz or set source_tz in [[sources]]")
