"""Normalise every input once into the case: sources -> records (+ quarantine) -> requests.

    sources      one row per input (a file, or a Parquet dataset): format, how it was chosen, time zone,
                 served model, node, role, size, SHA-256, and read = parsed + quarantined counts
    records      one row per request record any source holds (text inputs are parsed once into the
                 table records_text; Parquet inputs stay in place behind views records_srcN)
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

import numpy as np
import pyarrow as pa

from kvir.ingest import formats as fmts
from kvir.case.store import Case
from kvir.core.errors import InputError
from kvir.ingest.lines import compression_of, interleave, iter_line_batches
from kvir.ingest.lines import TEXT_SCHEMA as LINE_SCHEMA
from kvir.ingest.joins import join_evidence
from kvir.ingest.mapped import ingest_parquet, mapped_input
from kvir.ingest.readers import records_input
from kvir.ingest.settings import write_extra_settings
from kvir.ingest.stage import fill_stage
from kvir.core.progress import ByteCounter, Reporter
from kvir.ingest.inputs import Skipped
from kvir.ingest.sources import IngestOptions, Source, input_digest, plan_inputs, plan_sources, resolve_paths, sniff  # noqa: F401 (re-exported)

def ingest(case: Case, sources: list[Source], opts: IngestOptions, reporter: Reporter | None = None,
           skipped: list[Skipped] = ()) -> dict[str, Any]:
    """Normalise every source into the case and build `requests`. Returns per-source counts.

    Text sources of one format go through their adapter in one batch (every row tagged with its
    source_id): a query's planning costs tens of milliseconds, which a folder of thousands of small
    gateway pages must not pay per file. Parquet sources stay in place behind views."""
    con = case.con
    reporter = reporter or Reporter(enabled=False)
    # strings are written dictionary-compressed while ingesting: choosing FSST per column costs ~a quarter of
    # the records write (request ids are unique, the rest per-source constants); reset at the end
    con.execute("SET force_compression = 'dictionary'")
    case.run("case/create_tables")
    case.run("case/evidence_tables")
    for s in skipped:
        con.execute("INSERT INTO skipped_inputs VALUES ($p, $r, $n)", {"p": str(s.path), "r": s.reason, "n": s.size_bytes})
    case.manifest["skipped_inputs"] = [{"path": str(s.path), "reason": s.reason} for s in skipped]
    t_all = time.perf_counter()
    sizes = {s.source_id: sum(p.stat().st_size for p in s.paths) for s in sources}
    for src in sources:
        _register_source(case, src, opts, sizes[src.source_id])
    all_bytes = float(sum(sizes.values())) or 1.0
    bar = reporter.add_task(f"read {len(sources)} input{'s' * (len(sources) != 1)}", total=all_bytes)
    done = 0.0
    batches: dict[tuple[str, str], list[Source]] = {}
    for src in sources:
        if src.is_view:
            t0 = time.perf_counter()
            reporter.run(f"read {Path(src.label).name}", lambda s=src: ingest_parquet(case, s), con=con,
                         task=bar, base=done, span=sizes[src.source_id])
            _set_seconds(case, [src], time.perf_counter() - t0)
            done += sizes[src.source_id]
        else:
            batches.setdefault((src.format.name, _variant(src)), []).append(src)
    for (fmt, _), group in batches.items():
        t0 = time.perf_counter()
        span = float(sum(sizes[s.source_id] for s in group))
        counter = ByteCounter()
        compressed = any(compression_of(s.paths[0]) for s in group)
        label = f"read {len(group)} {fmt} file{'s' * (len(group) != 1)}"
        reporter.run(label, lambda g=group: _ingest_batch(case, g, opts, counter.add), counter=counter,
                     total=None if compressed else span, con=con, task=bar, base=done, span=span)
        _set_seconds(case, group, time.perf_counter() - t0)
        done += span
    reporter.describe(bar, f"read {len(sources)} input{'s' * (len(sources) != 1)}")
    for src in sources:
        con.execute("UPDATE sources SET notes = $n WHERE source_id = $id", {"n": src.notes, "id": src.source_id})
    _build_records_view(case, sources)
    reporter.run("merge records into requests", lambda: _build_requests(case, sources, opts), con=con)
    case.manifest["timings"]["ingest_s"] = round(time.perf_counter() - t_all, 3)
    con.execute("RESET force_compression")
    return source_counts(case)


def _register_source(case: Case, src: Source, opts: IngestOptions, size: int) -> None:
    """The sources row, the source's settings row, and its manifest entry (with SHA-256)."""
    digest = input_digest(src, opts.hash)
    case.con.execute(
        "INSERT INTO sources (source_id, label, format, chosen_by, files, size_bytes, sha256, compression, "
        "source_tz, served_model, served_model_source, node, role, year, notes) "
        "VALUES ($id, $label, $format, $how, $files, $size, $sha, $comp, $tz, $model, $model_src, $node, $role, $year, $notes)",
        {"id": src.source_id, "label": src.label, "format": src.format.name, "how": src.chosen_by,
         "files": [str(p) for p in src.paths], "size": size, "sha": digest,
         "comp": compression_of(src.paths[0]) if not src.is_view else None,
         "tz": src.tz.text if src.tz else None, "model": src.served_model,
         "model_src": src.served_model_source or None, "node": src.node, "role": src.role,
         "year": src.year, "notes": src.notes})
    case.con.execute(
        "INSERT INTO source_settings (source_id, tz_iana, tz_offset_min, served_model, node, role, year, keep_raw, "
        "max_line_bytes) VALUES ($id, $tz, $off, $model, $node, $role, $year, $keep, $maxb)",
        {"id": src.source_id, "tz": src.tz.iana if src.tz else None,
         "off": src.tz.offset_minutes if src.tz else None, "model": src.served_model,
         "node": src.node, "role": src.role, "year": src.year, "keep": opts.keep_raw,
         "maxb": opts.max_line_bytes})
    write_extra_settings(case, src)
    case.manifest["inputs"].append({
        "source_id": src.source_id, "label": src.label, "format": src.format.name, "chosen_by": src.chosen_by,
        "files": [{"path": str(p), "size_bytes": p.stat().st_size} for p in src.paths],
        "sha256": digest, "source_tz": src.tz.text if src.tz else None,
        "served_model": src.served_model, "served_model_source": src.served_model_source,
        "node": src.node, "role": src.role, "notes": src.notes})


def _set_seconds(case: Case, group: list[Source], seconds: float) -> None:
    """Time spent, shared evenly by the sources of one batch."""
    for s in group:
        case.con.execute("UPDATE sources SET seconds = $s WHERE source_id = $id",
                         {"s": round(seconds / len(group), 4), "id": s.source_id})


def _variant(src: Source) -> str:
    """Sources of one format that need different readers go in different batches."""
    if src.format.reader == "records":
        return "records"
    if src.format.reader in ("csv-mapped", "jsonl-mapped"):
        return f"file{src.source_id}"   # each mapped file has its own columns
    return "lines"


def _build_requests(case: Case, sources: list[Source], opts: IngestOptions | None = None) -> None:
    # one record per request only for generic mapped sources; every log format can hold several
    # records of one request (received/finished, PD copies, retries, overlapping pages)
    merged = len(sources) > 1 or any(not s.format.name.startswith("generic") for s in sources) or \
        any("bootstrap_room" in s.columns for s in sources)
    case.run("case/requests_merged" if merged else "case/requests_direct")
    if merged:
        join_evidence(case, sources, (opts or IngestOptions()).join_tolerance_s)


_BATCH_SCHEMA = pa.schema([("source_id", pa.int32())] + list(LINE_SCHEMA))


def _tag(batch: pa.RecordBatch, source_id: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(np.full(batch.num_rows, source_id, np.int32))] + batch.columns, schema=_BATCH_SCHEMA)


def _lines_of(group: list[Source], opts: IngestOptions, on_bytes=None) -> pa.RecordBatchReader:
    """The numbered lines of every file in the group, one stream, each row tagged with its source_id."""
    def producer(src: Source):
        def batches():
            for b in iter_line_batches(src.paths[0], opts.max_line_bytes, on_bytes=on_bytes, text=True):
                yield _tag(b, src.source_id)
        return batches
    # several files are split in parallel threads (kvir.lines.interleave); each row keeps its source and line
    return pa.RecordBatchReader.from_batches(_BATCH_SCHEMA, interleave([producer(s) for s in group]))


def _ingest_batch(case: Case, group: list[Source], opts: IngestOptions, on_bytes=None) -> None:
    con = case.con
    fmt = group[0].format
    name = f"batch{group[0].source_id}_input"
    reader = fmt.reader
    inp: Any
    if reader == "lines":
        inp = _lines_of(group, opts, on_bytes)
    elif reader == "records":
        inp = records_input(case, group, opts, on_bytes)
    elif reader in ("jsonl-mapped", "csv-mapped"):
        inp = mapped_input(case, group[0], opts)
    else:
        raise InputError(f"format {fmt.name} has no reader {reader!r}")
    if fmt.side_query:
        con.register(name, inp)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name}_kept AS SELECT * FROM {name}")
        con.unregister(name)
        name, inp = f"{name}_kept", None
    sql = case.compile(fmt.adapter, {"input": name, "settings": "source_settings"})
    stage = f"batch{group[0].source_id}_stage"
    try:
        # a stream of lines runs in chunks DuckDB parses on every thread (kvir.formats.stage)
        fill_stage(con, name, inp, sql, stage)
    except Exception as e:  # a reader error (e.g. a truncated gzip member) names the files
        where = group[0].label if len(group) == 1 else f"{group[0].label} (+{len(group) - 1} more {fmt.name} files)"
        raise InputError(f"cannot read as {fmt.name}: {e}", path=where) from None
    finally:
        try:
            con.unregister(name)
        except Exception:
            pass
    case.run("case/stage_to_tables", inputs={"stage": stage})
    con.execute(f"DROP TABLE {stage}")
    if fmt.side_query:
        case.run(fmt.side_query, inputs={"input": name, "settings": "source_settings"})
        con.execute(f"DROP TABLE {name}")


def _build_records_view(case: Case, sources: list[Source]) -> None:
    """records = text records (a table) + every in-place source's request rows; quarantine likewise, but
    an in-place source joins it only when its counts say it has bad rows (so a clean 10^8-row dataset is
    never scanned just to list nothing). A source whose every row is a request needs no `kind` filter
    either: testing it would read every row's id and time just to keep them all (measured: the filter
    doubled triage's scan of 10^8 Parquet rows)."""
    bad = {r[0] for r in case.con.execute(
        "SELECT DISTINCT source_id FROM source_counts WHERE kind = 'bad'").fetchall()}
    mixed = {r[0] for r in case.con.execute(
        "SELECT DISTINCT source_id FROM source_counts WHERE kind <> 'request'").fetchall()}
    parts = ["SELECT * FROM records_text"]
    parts += [f"SELECT * FROM records_src{s.source_id}" + (" WHERE kind = 'request'" if s.source_id in mixed else "")
              for s in sources if s.is_view]
    case.con.execute("CREATE OR REPLACE VIEW records AS " + " UNION ALL ".join(parts))
    qparts = ["SELECT *, NULL::VARCHAR AS source_path FROM quarantine_text"]
    qparts += [f"SELECT source_id, source_line, reason, raw, source_path FROM records_src{s.source_id} WHERE kind = 'bad'"
               for s in sources if s.is_view and s.source_id in bad]
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
