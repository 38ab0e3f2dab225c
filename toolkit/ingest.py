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

import glob
import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import formats as fmts
from .case import Case
from .errors import InputError
from .formats import FORMATS, RECORD_COLUMN_NAMES, RECORD_COLUMNS, Format
from .lines import DEFAULT_MAX_LINE_BYTES, compression_of, head_lines, interleave, iter_line_batches, line_reader
from .lines import TEXT_SCHEMA as LINE_SCHEMA
from .progress import ByteCounter, Reporter
from .spec import MAPPABLE_FIELDS, IncidentSpec, SourceSpec
from .timezones import SourceTz, parse_source_tz

_GLOB_CHARS = re.compile(r"[*?\[]")
_TIME_FIELDS = ("ts", "ts_end")


@dataclass
class Source:
    source_id: int
    paths: list[Path]
    label: str
    format: Format
    chosen_by: str
    tz: SourceTz | None = None
    served_model: str | None = None
    served_model_source: str = ""
    node: str | None = None
    role: str | None = None
    year: int | None = None
    columns: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    window: tuple[Any, Any] | None = None   # the incident window (UTC), for formats that need it

    @property
    def is_view(self) -> bool:
        return self.format.reader == "parquet-mapped"


@dataclass
class IngestOptions:
    format: str = "auto"
    source_tz: str | None = None
    served_model: str | None = None
    year: int | None = None
    keep_raw: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    hash: str = "auto"          # full | footer | auto | none (see input_digest)
    join_tolerance_s: float = fmts.DEFAULT_TOLERANCE_S   # candidates / identities joined by time (formats/joins.py)


# ----------------------------------------------------------------------------------------- resolving

def resolve_paths(paths: list[str | Path], spec: IncidentSpec | None) -> list[tuple[Path, Path]]:
    """(file, the argument it came from). Folders are walked; globs expanded; a path that matches
    nothing is an error naming it. With no paths, the spec's [[sources]] paths are used."""
    args: list[tuple[str, Path]] = []
    if paths:
        args = [(str(p), Path.cwd()) for p in paths]
    elif spec is not None and spec.sources:
        args = [(s.path, spec.base_dir) for s in spec.sources]
    if not args:
        raise InputError("no input paths given (pass files, folders or globs, or list [[sources]] in incident.toml)")
    out: list[tuple[Path, Path]] = []
    for text, base in args:
        p = Path(text) if Path(text).is_absolute() else base / text
        if _GLOB_CHARS.search(text):
            hits = sorted(Path(h) for h in glob.glob(str(p), recursive=True) if Path(h).is_file())
            if not hits:
                raise InputError("glob matches no files", path=text)
            out += [(h, p) for h in hits]
        elif p.is_dir():
            hits = sorted(f for f in p.rglob("*") if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts))
            if not hits:
                raise InputError("folder holds no files", path=text)
            out += [(h, p) for h in hits]
        elif p.is_file():
            out.append((p, p))
        elif p.exists():
            raise InputError("not a regular file or folder", path=text)
        else:
            raise InputError("no such file or folder", path=text)
    seen: set[Path] = set()
    unique = []
    for f, a in out:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            unique.append((f, a))
    return unique


def _spec_source_for(path: Path, spec: IncidentSpec | None) -> SourceSpec | None:
    if spec is None:
        return None
    r = path.resolve()
    for s in spec.sources:
        pattern = s.path if Path(s.path).is_absolute() else str(spec.base_dir / s.path)
        matches = {Path(h).resolve() for h in glob.glob(pattern, recursive=True)}
        if Path(pattern).is_dir():
            if r.is_relative_to(Path(pattern).resolve()):
                return s
        if r in matches:
            return s
    return None


def is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def sniff(path: Path) -> tuple[Format, str]:
    """Choose a format from content (and the file name where that is the convention)."""
    if is_parquet(path):
        return FORMATS["generic-parquet"], "sniffed: Parquet magic bytes"
    try:
        head = head_lines(path)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    except EOFError:
        raise InputError("truncated compressed file", path=str(path)) from None
    scores = []
    for f in FORMATS.values():
        if f.sniff is None:
            continue
        try:
            s = f.sniff(path, head)
        except Exception:  # a sniffer must never take triage down; it just does not match
            s = 0
        if s > 0:
            scores.append((s, f.name))
    tried = ", ".join(sorted(n for n, f in FORMATS.items() if f.sniff))
    if not scores:
        raise InputError(f"matches no known format (tried: {tried})", path=str(path),
                         hint="give --format NAME, or a [[sources]] entry with format and columns")
    scores.sort(reverse=True)
    best_score, best = scores[0]
    if best_score < 50 and FORMATS[best].needs == ("columns",):
        return FORMATS[best], f"sniffed by file name ({best}); needs a column mapping"
    return FORMATS[best], f"sniffed: {best} (score {best_score}; tried: {tried})"


_SERVER_ARGS = re.compile(r"server_args=ServerArgs\((.*)")


def _server_args(path: Path) -> tuple[str | None, str | None, int | None]:
    """(served model, disaggregation role, line) from an SGLang `server_args=ServerArgs(...)` line, if any
    within the first MiB (the engine prints it once at start-up)."""
    for i, line in enumerate(head_lines(path, max_lines=5000, max_bytes=1 << 20), 1):
        m = _SERVER_ARGS.search(line)
        if not m:
            continue
        args = m.group(1)
        served = re.search(r"\bserved_model_name='([^']*)'", args)
        model_path = re.search(r"\bmodel_path='([^']*)'", args)
        mode = re.search(r"\bdisaggregation_mode='(prefill|decode|null)'", args)
        role = {"prefill": "prefill", "decode": "decode", "null": "mixed"}.get(mode.group(1)) if mode else None
        model = served.group(1) if served else (model_path.group(1) if model_path else None)
        return model, role, i
    return None, None, None


_GENERIC_STEMS = {"server", "requests", "request", "stdout", "stderr", "output", "log", "logs", "app", "engine",
                  "access", "current", "latest", "api_server", "vllm"}


def _node_from_name(path: Path) -> str:
    """The node a log file belongs to: its name (prefill-3.log -> prefill-3), or its folder's name when
    the file name is generic (engine/decode-0/server.log -> decode-0)."""
    name = path.name
    for suffix in (".gz", ".zst", ".zstd", ".log", ".jsonl", ".ndjson", ".json", ".txt", ".csv", ".parquet"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if (name.lower() in _GENERIC_STEMS or name.startswith("sglang-request-metrics-")) and path.parent.name:
        return path.parent.name     # per-hour metrics exports are named by hour: the folder names the node
    return name


def _role_from_name(path: Path) -> str | None:
    n = path.name.lower()
    if "prefill" in n:
        return "prefill"
    if "decode" in n:
        return "decode"
    return None


def plan_sources(paths: list[str | Path], spec: IncidentSpec | None, opts: IngestOptions) -> list[Source]:
    """Decide, per input, its format and settings; refuse what cannot be read correctly."""
    files = resolve_paths(paths, spec)
    groups: dict[tuple, list[Path]] = {}
    planned: dict[tuple, tuple[Format, str, SourceSpec | None]] = {}
    for f, arg in files:
        ss = _spec_source_for(f, spec)
        if opts.format and opts.format != "auto":
            fmt, how = fmts.get(opts.format), "given: --format"
        elif ss is not None and ss.format:
            fmt, how = fmts.get(ss.format), "given: [[sources]] format"
        else:
            fmt, how = sniff(f)
        # the files of one Parquet dataset (one argument or one [[sources]] entry) are one source
        key = ("parquet", str(arg), id(ss)) if fmt.reader == "parquet-mapped" else ("file", str(f))
        groups.setdefault(key, []).append(f)
        planned[key] = (fmt, how, ss)
    sources = []
    for i, (key, group) in enumerate(groups.items(), 1):
        fmt, how, ss = planned[key]
        sources.append(_settle(i, group, key, fmt, how, ss, spec, opts))
    return sources


def _settle(i: int, files: list[Path], key: tuple, fmt: Format, how: str, ss: SourceSpec | None,
            spec: IncidentSpec | None, opts: IngestOptions) -> Source:
    first = files[0]
    label = str(first) if key[0] == "file" else f"{key[1]} ({len(files)} Parquet file{'s' * (len(files) != 1)})"
    src = Source(i, files, label, fmt, how)
    tz_text = opts.source_tz or (ss.source_tz if ss else None)
    if fmt.times_utc and not (ss and ss.source_tz) and tz_text:
        src.notes.append(f"{fmt.name} times are UTC by definition; --source-tz {tz_text} not applied")
        tz_text = None
    src.window = (spec.window_start, spec.window_end) if spec is not None else None
    if tz_text:
        try:
            src.tz = parse_source_tz(tz_text)
        except ValueError as e:
            raise InputError(str(e), path=label, key="--source-tz") from None
    if "source_tz" in fmt.needs and src.tz is None:
        raise InputError(f"{fmt.name} writes naive host-local timestamps ({fmt.times}); kvir will not guess the zone",
                         path=label, hint="pass --source-tz (an IANA name such as America/Chicago, or +02:00), "
                                          "or set source_tz in a [[sources]] entry")
    src.year = opts.year or (ss.year if ss else None)
    src.node = (ss.node if ss and ss.node else None) or _node_from_name(first)
    src.role = (ss.role if ss and ss.role else None)
    src.columns = dict(ss.columns) if ss else {}

    if not fmt.names_model:
        model, role, line = _server_args(first)
        if model:
            src.served_model, src.served_model_source = model, f"server_args= line {line}"
        elif opts.served_model or (ss and ss.served_model):
            src.served_model = opts.served_model or ss.served_model  # type: ignore[union-attr]
            src.served_model_source = "--served-model" if opts.served_model else "[[sources]] served_model"
        elif spec is not None:
            src.served_model = spec.model
            src.served_model_source = "assumed: no server_args= line and no --served-model, so taken to serve the incident's model"
            src.notes.append(f"served model assumed to be {spec.model} (no server_args= line, no --served-model)")
        src.role = src.role or role or _role_from_name(Path(src.node or first.name))
    elif opts.served_model or (ss and ss.served_model):
        src.served_model = opts.served_model or ss.served_model  # type: ignore[union-attr]
        src.served_model_source = "--served-model (used where a record names no model)"
    return src


# ----------------------------------------------------------------------------------------- ingesting

def ingest(case: Case, sources: list[Source], opts: IngestOptions, reporter: Reporter | None = None) -> dict[str, Any]:
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
            reporter.run(f"read {Path(src.label).name}", lambda s=src: _ingest_parquet(case, s), con=con,
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
    fmts.write_extra_settings(case, src)
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
    if src.format.reader == "json-records":
        return "document" if _is_json_document(src.paths[0]) else "lines"
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
        fmts.join_evidence(case, sources, (opts or IngestOptions()).join_tolerance_s)


def input_digest(src: Source, mode: str) -> str | None:
    """The manifest's fingerprint of an input.

    full    SHA-256 of every byte (one file), or of the sorted per-file digests (a dataset);
    footer  Parquet only: SHA-256 over each file's size and footer (the metadata: schema, row-group
            offsets, sizes and statistics), written `sha256-footer:...`; it reads kilobytes where a full
            hash of 10^8 rows reads gigabytes, and changes whenever a row group is rewritten, but it is
            not a byte-for-byte seal: use --hash full for chain of custody;
    auto    full for text inputs (they are read whole anyway), footer for Parquet (read in place: a full
            hash would read every byte the query skips);
    none    no fingerprint (recorded as null)."""
    if mode == "none":
        return None
    if mode == "footer" or (mode == "auto" and src.is_view):
        if not src.is_view:
            return _sha256(src.paths)
        return "sha256-footer:" + _digest_of(sorted(_footer_sha256(p) for p in src.paths))
    return _sha256(src.paths)


def _footer_sha256(p: Path) -> str:
    import struct

    with open(p, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(size - 8)
        n = struct.unpack("<I", f.read(4))[0]
        f.seek(max(0, size - 8 - n))
        footer = f.read(n + 8)
    return hashlib.sha256(str(size).encode() + b"\0" + footer).hexdigest()


def _digest_of(digests: list[str]) -> str:
    return digests[0] if len(digests) == 1 else hashlib.sha256("\n".join(digests).encode()).hexdigest()


def _sha256(paths: list[Path]) -> str:
    """SHA-256 of one file, or of the sorted per-file digests of a dataset."""
    digests = []
    for p in sorted(paths):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        digests.append(h.hexdigest())
    if len(digests) == 1:
        return digests[0]
    return "sha256-of-files:" + _digest_of(digests)


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
    if reader == "lines" or (reader == "json-records" and _variant(group[0]) == "lines"):
        inp = _lines_of(group, opts, on_bytes)
    elif reader == "json-records":
        inp = _json_documents(case, group)
    elif reader == "records":
        inp = fmts.records_input(case, group, opts, on_bytes)
    elif reader in ("jsonl-mapped", "csv-mapped"):
        tbl = (_register_jsonl_mapped(case, group[0], opts) if reader == "jsonl-mapped"
               else _register_csv_mapped(case, group[0]))
        inp = tbl.append_column("source_path", pa.nulls(tbl.num_rows, pa.string()))   # one file: no path
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
        fmts.fill_stage(con, name, inp, sql, stage)
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


def _is_json_document(path: Path) -> bool:
    """A JSON document (a REST API page, compact or pretty-printed) rather than NDJSON."""
    import json as _json

    first = next((x for x in head_lines(path, max_lines=20) if x.strip()), "")
    try:
        obj = _json.loads(first)
        return isinstance(obj, dict) and "result" in obj
    except ValueError:
        return first.strip() in ("{", "[") or first.lstrip().startswith('{"result"')


_PAGE_SQL = ("WITH d AS (SELECT filename, result FROM read_json($p, columns = {'result': 'JSON[]'}, format = 'auto', "
             "maximum_object_size = 2147483647, filename = true)) "
             "SELECT d.filename, u.i::BIGINT AS line_no, u.rec::VARCHAR AS line, "
             "strlen(u.rec::VARCHAR)::BIGINT AS line_bytes, false AS repaired "
             "FROM d, unnest(d.result) WITH ORDINALITY AS u(rec, i) "
             "UNION ALL SELECT d.filename, -1, NULL, NULL, NULL FROM d WHERE d.result IS NULL")


def _json_documents(case: Case, group: list[Source]) -> pa.Table:
    """REST API pages: the records of each page, numbered 1..n in page order, one per row. Read in one
    query; when that fails (a malformed page), page by page, and a page that cannot be read at all
    becomes one quarantined record (the adapter says why)."""
    ids = pa.table({"filename": [str(s.paths[0]) for s in group], "source_id": pa.array([s.source_id for s in group], pa.int32())})
    try:
        tbl = case.con.sql(_PAGE_SQL, params={"p": [str(s.paths[0]) for s in group]}).to_arrow_table()
        bad = pc.equal(tbl.column("line_no"), -1)
        if pc.any(bad).as_py():
            raise ValueError("a JSON document without a result array")
        parts = [tbl]
    except Exception:
        parts = [_one_document(case, s) for s in group]
        return pa.concat_tables(parts).combine_chunks()
    joined = case.con.sql("SELECT i.source_id, t.line_no, t.line, t.line_bytes, t.repaired FROM tbl AS t "
                          "JOIN ids AS i USING (filename) ORDER BY i.source_id, t.line_no").to_arrow_table()
    return joined


def _one_document(case: Case, src: Source) -> pa.Table:
    try:
        tbl = case.con.sql(_PAGE_SQL, params={"p": [str(src.paths[0])]}).to_arrow_table()
        if pc.any(pc.equal(tbl.column("line_no"), -1)).as_py():
            raise ValueError("a JSON document without a result array")
        tbl = tbl.drop_columns(["filename"])
    except Exception:
        from .lines import open_maybe_compressed

        with open_maybe_compressed(src.paths[0]) as f:
            doc = f.read().decode("utf-8", "replace")
        tbl = case.con.sql("SELECT 1::BIGINT AS line_no, $d AS line, strlen($d)::BIGINT AS line_bytes, "
                           "false AS repaired", params={"d": doc}).to_arrow_table()
    return tbl.add_column(0, "source_id", pa.array(np.full(tbl.num_rows, src.source_id, np.int32))) \
        .cast(_BATCH_SCHEMA)


def _mapping(src: Source, available: list[str]) -> dict[str, str]:
    """field -> column. Defaults to columns already named like kvir's fields."""
    cols = dict(src.columns)
    cols.pop("ts_unit", None)
    if not cols:
        cols = {f: f for f in MAPPABLE_FIELDS if f in available}
    for f_, c in cols.items():
        if c not in available:
            raise InputError(f"column {c!r} (mapped to {f_}) is not in the file; it has: {', '.join(available)}",
                             path=src.label, key=f"sources.columns.{f_}")
    if "request_id" not in cols or not ({"ts", "ts_end"} & cols.keys()):
        raise InputError(f"{src.format.name} needs a column mapping with at least request_id and ts "
                         f"(columns in the file: {', '.join(available)})", path=src.label,
                         hint="add [sources.columns] to incident.toml")
    return cols


def _quote_ident(name: str, available: list[str]) -> str:
    """A column name that exists in the file (whitelisted), quoted as an SQL identifier."""
    assert name in available, name
    return '"' + name.replace('"', '""') + '"'


def _mapped_projection(cols: dict[str, str], types: dict[str, str], available: list[str]) -> str:
    """SELECT list giving the generic adapter its fixed input columns (see queries/adapters/generic.sql)."""
    parts = []
    for f_ in MAPPABLE_FIELDS:
        if f_ in _TIME_FIELDS:
            continue
        parts.append(f"{_quote_ident(cols[f_], available)} AS {f_}" if f_ in cols else f"NULL AS {f_}")
    for f_ in _TIME_FIELDS:
        c = cols.get(f_)
        t = types.get(c, "") if c else ""
        q = _quote_ident(c, available) if c else None
        parts.append(f"{q}::TIMESTAMPTZ AS {f_}_tz" if c and t.startswith("TIMESTAMP WITH TIME ZONE") else f"NULL::TIMESTAMPTZ AS {f_}_tz")
        parts.append(f"{q}::TIMESTAMP AS {f_}_naive" if c and t.startswith("TIMESTAMP") and "TIME ZONE" not in t else f"NULL::TIMESTAMP AS {f_}_naive")
        parts.append(f"CAST({q} AS VARCHAR) AS {f_}_text" if c and not t.startswith("TIMESTAMP") else f"NULL::VARCHAR AS {f_}_text")
    return ", ".join(parts)


def _register_csv_mapped(case: Case, src: Source) -> pa.Table:
    """A CSV with a header, mapped columns. DuckDB's reader (all values as text) with rejected rows
    stored: those keep DuckDB's line numbers, good rows take the remaining ones in order (line 1 is
    the header), so every row of the file comes out once."""
    con = case.con
    name = f"csv{src.source_id}"
    path = str(src.paths[0])
    rt, rs = f"src{src.source_id}_rejects", f"src{src.source_id}_rejscan"
    read = ("read_csv($p, all_varchar = true, header = true, store_rejects = true, "
            "rejects_table = $rt, rejects_scan = $rs)")
    try:
        desc = con.execute(f"DESCRIBE SELECT * FROM {read}", {"p": path, "rt": rt, "rs": rs}).fetchall()
    except Exception as e:
        raise InputError(f"cannot read as CSV: {e}", path=src.label) from None
    available = [r[0] for r in desc]
    cols = _mapping(src, available)
    proj = _mapped_projection(cols, {c: "VARCHAR" for c in available}, available)
    good = con.sql(f"SELECT row_number() OVER () AS n, NULL::VARCHAR AS _problem, NULL::VARCHAR AS _raw, {proj} "
                   f"FROM {read}", params={"p": path, "rt": rt, "rs": rs}).to_arrow_table()
    con.register(f"{name}_good", good)
    # DuckDB stores one error per bad column: one rejected record per line (its first error)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name}_rej AS SELECT line::BIGINT AS line_no, "
                f"arg_min(error_type || ': ' || left(error_message, 120), column_idx) AS _problem, "
                f"any_value(csv_line) AS _raw FROM {rt} GROUP BY line")
    tbl = con.sql(f"""
        WITH total AS (SELECT (SELECT count(*) FROM {name}_good) + (SELECT count(*) FROM {name}_rej) AS n),
        free AS (SELECT l AS line_no, row_number() OVER (ORDER BY l) AS k
                 FROM total, range(2, total.n + 2) AS r(l)
                 WHERE l NOT IN (SELECT line_no FROM {name}_rej))
        SELECT $sid::INTEGER AS source_id, free.line_no, g.* EXCLUDE (n) FROM {name}_good AS g JOIN free ON free.k = g.n
        UNION ALL
        SELECT $sid::INTEGER, r.line_no, r._problem, r._raw, {', '.join('NULL AS ' + c for c in _generic_columns()[3:])}
        FROM {name}_rej AS r
        ORDER BY 2""", params={"sid": src.source_id}).to_arrow_table()
    con.unregister(f"{name}_good")
    return tbl


def _generic_columns() -> list[str]:
    cols = ["line_no", "_problem", "_raw"]
    cols += [f for f in MAPPABLE_FIELDS if f not in _TIME_FIELDS]
    for f_ in _TIME_FIELDS:
        cols += [f"{f_}_tz", f"{f_}_naive", f"{f_}_text"]
    return cols


def _register_jsonl_mapped(case: Case, src: Source, opts: IngestOptions) -> pa.Table:
    """JSON Lines with mapped keys: each mapped key is a (possibly dotted) JSON path, bound as a value."""
    con = case.con
    name = f"jsonl{src.source_id}"
    con.register(f"{name}_lines", line_reader(src.paths[0], opts.max_line_bytes))
    first = next((json_line for json_line in head_lines(src.paths[0], 50) if json_line.strip()), "{}")
    import json as _json

    try:
        keys = list(_json.loads(first).keys())
    except Exception:
        keys = []
    cols = dict(src.columns)
    cols.pop("ts_unit", None)
    if not cols:
        cols = {f_: f_ for f_ in MAPPABLE_FIELDS if f_ in keys}
    if "request_id" not in cols or not ({"ts", "ts_end"} & cols.keys()):
        raise InputError("generic-jsonl needs a mapping with at least request_id and ts", path=src.label,
                         hint="add [sources.columns] to incident.toml")
    params: dict[str, Any] = {}
    parts = []
    for f_ in MAPPABLE_FIELDS:
        if f_ in _TIME_FIELDS:
            continue
        if f_ in cols:
            params[f"p_{f_}"] = _json_path(cols[f_])
            parts.append(f"CASE WHEN ok THEN json_extract_string(text, $p_{f_}) END AS {f_}")
        else:
            parts.append(f"NULL AS {f_}")
    for f_ in _TIME_FIELDS:
        parts += [f"NULL::TIMESTAMPTZ AS {f_}_tz", f"NULL::TIMESTAMP AS {f_}_naive"]
        if f_ in cols:
            params[f"p_{f_}"] = _json_path(cols[f_])
            parts.append(f"CASE WHEN ok THEN json_extract_string(text, $p_{f_}) END AS {f_}_text")
        else:
            parts.append(f"NULL::VARCHAR AS {f_}_text")
    params["maxb"] = opts.max_line_bytes
    params["sid"] = src.source_id
    tbl = con.sql(f"""
        WITH l AS (SELECT line_no, line_bytes, rtrim(decode(line), chr(13) || chr(10)) AS text FROM {name}_lines),
        v AS (SELECT *, line_bytes <= $maxb AND json_valid(text) AND json_type(text) = 'OBJECT' AS ok FROM l)
        SELECT $sid::INTEGER AS source_id, line_no,
            CASE WHEN trim(text) = '' THEN 'blank line'
                 WHEN line_bytes > $maxb THEN 'line longer than ' || $maxb || ' bytes'
                 WHEN NOT json_valid(text) THEN 'malformed JSON'
                 WHEN NOT ok THEN 'JSON value is not an object' END AS _problem,
            CASE WHEN NOT ok THEN text END AS _raw,
            {', '.join(parts)}
        FROM v ORDER BY line_no""", params=params).to_arrow_table()
    con.unregister(f"{name}_lines")
    return tbl


def _json_path(key: str) -> str:
    if key.startswith("$"):
        return key
    return "$" + "".join('."' + part.replace('"', '\\"') + '"' for part in key.split("."))


_INT_TYPES = ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT", "HUGEINT")
_TEXT_FIELDS = ("request_id", "account_id", "model", "finish_reason", "prefill_node", "decode_node")
_COUNT_FIELDS = ("prompt_tokens", "cached_tokens", "completion_tokens", "http_status", "prefill_tokens")


def _typed(cols: dict[str, str], types: dict[str, str]) -> bool:
    """Do the mapped Parquet columns already have kvir's types (so the lean adapter applies)?"""
    if "ts" not in cols or "latency_s" in cols:
        return False
    for f_, c in cols.items():
        t = types[c]
        if f_ in _TIME_FIELDS and t != "TIMESTAMP WITH TIME ZONE":
            return False
        if f_ in _COUNT_FIELDS and t not in _INT_TYPES:
            return False
        if f_ in _TEXT_FIELDS and t != "VARCHAR":
            return False
    return True


def _typed_projection(cols: dict[str, str], types: dict[str, str], available: list[str], source_id: int,
                      served_model: str | None) -> str:
    parts = []
    for f_ in MAPPABLE_FIELDS:
        if f_ == "latency_s":
            continue
        name = f"{f_}_tz" if f_ in _TIME_FIELDS else f_
        col = _quote_ident(cols[f_], available) if f_ in cols else None
        typ = "TIMESTAMPTZ" if f_ in _TIME_FIELDS else "BIGINT" if f_ in _COUNT_FIELDS else "VARCHAR"
        if f_ == "model" and served_model is not None:
            # the served model fills rows without one; read from the settings table (views take no
            # parameters; the id is a kvir-generated integer)
            fallback = f"(SELECT served_model FROM source_settings WHERE source_id = {int(source_id)})"
            parts.append(f"coalesce({col or 'NULL'}, {fallback}) AS model")
        elif col:
            parts.append(f"{col} AS {name}")
        else:
            parts.append(f"NULL::{typ} AS {name}")
    return ", ".join(parts)


def _ingest_parquet(case: Case, src: Source) -> None:
    """Parquet stays where it is: a view maps its columns, another normalises them (no rows copied).
    Typed columns get the lean adapter (filters reach the Parquet scan); when the row-group statistics
    prove that no row is bad, the counts come from the footers and nothing is scanned."""
    con = case.con
    raw = f"src{src.source_id}_raw"
    files = [str(p) for p in src.paths]
    rel = con.read_parquet(files, hive_partitioning=True, file_row_number=True, filename=True)
    rel.create_view(raw, replace=True)   # DuckDB quotes the file paths itself
    desc = con.execute(f"DESCRIBE {raw}").fetchall()
    available = [r[0] for r in desc if r[0] not in ("file_row_number", "filename")]
    types = {r[0]: r[1] for r in desc}
    cols = _mapping(src, available)
    typed = _typed(cols, types)
    proj = (_typed_projection(cols, types, available, src.source_id, src.served_model) if typed
            else _mapped_projection(cols, types, available))
    extra = "" if typed else "NULL::VARCHAR AS _problem, NULL::VARCHAR AS _raw, "
    # A view cannot take bound parameters; the source id is a kvir-generated integer (int() makes sure).
    # source_line is the row's number in its file; a dataset of several files names the file too
    path = "filename" if len(files) > 1 else "NULL::VARCHAR"
    con.execute(f"CREATE OR REPLACE VIEW src{src.source_id}_input AS SELECT {int(src.source_id)}::INTEGER AS source_id, "
                f"file_row_number + 1 AS line_no, {extra}{proj}, {path} AS source_path FROM {raw}")
    adapter = "adapters/parquet_typed" if typed else src.format.adapter
    sql = case.compile(adapter, {"input": f"src{src.source_id}_input", "settings": "source_settings"})
    con.execute(f"CREATE OR REPLACE VIEW records_src{src.source_id} AS {sql}")
    src.notes.append("typed columns: lean adapter, filters pushed into the Parquet scan" if typed
                     else "generic adapter (columns need conversion)")
    if typed:
        required = [cols[f_] for f_ in ("request_id", "ts") if f_ in cols]
        if src.served_model is None:
            required.append(cols.get("model", "model"))
        proof = case.run("case/parquet_clean", {
            "files": files, "required": required, "nonempty": [cols["request_id"]],
            "nonneg": [cols["prompt_tokens"]] if "prompt_tokens" in cols else []}, fetch=True)[0]
        row_groups, n_rows, unproven = proof
        if unproven == 0:
            con.execute("INSERT INTO source_counts VALUES ($id, 'request', NULL, $n)",
                        {"id": src.source_id, "n": n_rows})
            src.notes.append(f"counts from {row_groups} row-group footers: statistics prove no row is bad")
            return
    case.run("case/view_counts", {"source_id": src.source_id},
             inputs={"records": f"records_src{src.source_id}"})


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
