"""Reading start-up logs into node_configs, findings and runtime_indicators.

Python decides per *file* (which node, which time zone, whether to read it) and hands DuckDB numbered
lines (kvir.lines); every line is parsed in SQL (queries/audit/*.sql). Tables written, in the case or
in an in-memory database:

    audit_file_map / audit_files   one row per input file: node, how it was named, lines read, notes
    audit_lines                    the recognised lines, values parsed (never the line text)
    node_configs                   one row per node start (columns: queries/audit/node_configs.sql)
    runtime_indicators             exposure indicators per node, hour and kind
    findings                       failed or undecidable checks: the incident's mechanism's rules
                                   (its audit part, kvir.audit.plugin; columns: queries/audit/findings_table.sql)
    node_exposure                  per prefill node, when it was exposed and what ended it
    audit_problems                 every line or file that could not be fully used, with the reason
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvir.core.errors import InputError
from kvir.ingest.lines import DEFAULT_MAX_LINE_BYTES, head_lines, iter_line_batches
from kvir.core.sql import QueryLog, load, run
from kvir.core.timezones import SourceTz, parse_source_tz
from kvir.audit.inventory import Inventory, InventoryNode, load_inventory
from kvir.audit.plugin import audit_parts
from kvir.audit.start_builds import field_names, fill_builds
from kvir.audit.rules import VLLM_DEFAULT_BLOCK_SIZE, all_rules
from kvir.spec.mechanism import Mechanism, default
from kvir.audit.server_info import COLUMNS as SERVER_INFO_COLUMNS, read_server_info, server_info_row
from kvir.core.files import node_from_path, role_from_name, sha256_file

# node_configs, then each start's build (kvir.audit.start_builds, in Python over the starts) and every
# mechanism's columns (AuditPart.annotate), then the shared tables, the incident mechanism's findings, the rest
FIRST_QUERIES = ("audit/files", "audit/node_configs")
SHARED_QUERIES = ("audit/runtime_indicators", "audit/findings_table")
LAST_QUERIES = ("audit/node_exposure", "audit/problems")
_CRI = re.compile(r"^\d{4}-\d{2}-\d{2}T\S+\s+(?:stdout|stderr)\s+[FP]\s")


@dataclass
class FilePlan:
    file_id: int
    path: Path
    label: str
    size_bytes: int
    sha256: str
    tz: SourceTz | None
    tz_text: str | None
    year: int | None
    node: InventoryNode | None
    match: str | None
    file_node: str
    file_node_source: str
    file_role: str | None
    skipped: str | None = None
    cri: bool = False
    server_info: dict | None = None        # a /server_info JSON snapshot (read whole, not as lines)


# ----------------------------------------------------------------------------------------------- planning

def resolve_files(paths: list[str | Path]) -> list[tuple[Path, str | None]]:
    """(file, why it is skipped or None) for files, folders (walked) and globs: kvir.ingest.inputs decides
    what cannot be read at all (empty, special, unreadable); anything that matches nothing is an error."""
    from kvir.ingest.inputs import collect_inputs

    if not paths:
        raise InputError("no start-up logs given (pass files, folders or globs)")
    inputs = collect_inputs(list(paths), None)
    return sorted([(f, None) for f, _ in inputs.files] + [(s.path, s.reason) for s in inputs.skipped])




def _sniff_skip(path: Path) -> tuple[str | None, bool, dict | None]:
    """(why the file is not read, or None; whether it is a CRI container log; a /server_info object)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
        if magic == b"PAR1":
            return "Parquet file (not a text log): not read", False, None
        head = head_lines(path, max_lines=20, max_bytes=1 << 16)
    except PermissionError:
        raise InputError("cannot read: permission denied", path=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    except EOFError:
        raise InputError("truncated compressed file", path=str(path)) from None
    first = next((x.strip() for x in head if x.strip()), "")
    if first.startswith("{"):
        doc = read_server_info(path)
        if doc is not None:
            return None, False, doc
    if first.startswith("{") or first == "[" or first.startswith(("[{", '["')):
        return "JSON records (a request log, not engine stdout or a /server_info snapshot): not read", False, None
    return None, bool(_CRI.match(first)), None


def plan_files(paths: list[str | Path], inventory: Inventory | None, source_tz: str | None,
               year: int | None) -> list[FilePlan]:
    cli_tz = None
    if source_tz:
        try:
            cli_tz = parse_source_tz(source_tz)
        except ValueError as e:
            raise InputError(str(e), key="--source-tz") from None
    plans = []
    for i, (f, unreadable) in enumerate(resolve_files(paths), 1):
        m = inventory.match(f) if inventory else None
        node = m.node if m else None
        # a file the inventory does not list still takes its [defaults] (one zone for every host)
        inv_tz = node.source_tz if node else (inventory.defaults.source_tz if inventory else None)
        inv_year = node.year if node else (inventory.defaults.year if inventory else None)
        tz, tz_text = cli_tz, source_tz
        if tz is None and inv_tz:
            tz, tz_text = parse_source_tz(inv_tz), inv_tz
        skipped, cri, info = (unreadable, False, None) if unreadable else _sniff_skip(f)
        file_node, how = node_from_path(f)
        try:   # a special file (a FIFO) is never opened: no size, no digest
            size = f.stat().st_size if not unreadable else 0
            digest = sha256_file(f) if not unreadable else None
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", path=str(f)) from None
        plans.append(FilePlan(
            file_id=i, path=f, label=str(f), size_bytes=size, sha256=digest, tz=tz, tz_text=tz_text,
            year=year or inv_year, node=node, match=m.how if m else None,
            file_node=file_node, file_node_source=how, file_role=role_from_name(file_node) or role_from_name(f.name),
            skipped=skipped, cri=cri, server_info=info))
    return plans


# ----------------------------------------------------------------------------------------------- parsing

@dataclass
class _Counts:
    lines: int = 0
    too_long: int = 0


_SCHEMA = pa.schema([("file_id", pa.int32()), ("line_no", pa.int64()), ("line", pa.string_view()),
                     ("line_bytes", pa.int64()), ("repaired", pa.bool_()), ("cri_open", pa.bool_())])


class _Stream:
    """The numbered text lines (VARCHAR without terminator: kvir.lines text mode) of several files as one
    stream tagged with file_id; counts lines and over-long lines per batch (vectorised) and remembers
    which file is being read (for errors)."""

    def __init__(self, plans: list[FilePlan], max_line_bytes: int, on_bytes=None):
        self.plans, self.max_line_bytes, self.on_bytes = plans, max_line_bytes, on_bytes
        self.counts: dict[int, _Counts] = {p.file_id: _Counts() for p in plans}
        self.too_long: list[tuple[int, int, int]] = []
        self.current: FilePlan | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        for p in self.plans:
            self.current = p
            c = self.counts[p.file_id]
            for b in iter_line_batches(p.path, self.max_line_bytes, on_bytes=self.on_bytes, text=True):
                n = b.num_rows
                c.lines += n
                too = pc.greater(b.column("line_bytes"), self.max_line_bytes)   # such a line arrives empty
                k = pc.sum(too).as_py() or 0
                if k:
                    c.too_long += k
                    nos = pc.filter(b.column("line_no"), too).to_pylist()
                    lens = pc.filter(b.column("line_bytes"), too).to_pylist()
                    self.too_long.extend((p.file_id, a, b_) for a, b_ in zip(nos, lens))
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.full(n, p.file_id, np.int32)), b.column("line_no"), b.column("line"),
                     b.column("line_bytes"), b.column("repaired"), pa.array(np.zeros(n, dtype=bool))], schema=_SCHEMA)
        self.current = None

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(_SCHEMA, self.batches())


def _record_query(log: QueryLog, name: str, sql: str, inputs: dict[str, str], params: dict[str, Any],
                  seconds: float) -> None:
    log.record(load(name), sql, params, None, seconds, inputs)


def _insert_rows(con: duckdb.DuckDBPyConnection, table: str, columns: list[str], rows: list[tuple]) -> None:
    """Insert many rows at once through an Arrow table (DuckDB's executemany is slow per row)."""
    data = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
    con.register("audit_rows", pa.table(data) if rows else pa.table({c: pa.array([], pa.string()) for c in columns}))
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM audit_rows")
    finally:
        con.unregister("audit_rows")


def _write_settings(con: duckdb.DuckDBPyConnection, plans: list[FilePlan], max_line_bytes: int) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE audit_settings (file_id INTEGER, tz_iana VARCHAR, tz_offset_min INTEGER, "
                "year INTEGER, max_line_bytes BIGINT)")
    _insert_rows(con, "audit_settings", ["file_id", "tz_iana", "tz_offset_min", "year", "max_line_bytes"],
                 [(p.file_id, p.tz.iana if p.tz else None, p.tz.offset_minutes if p.tz else None, p.year,
                   max_line_bytes) for p in plans])


def parse_files(con: duckdb.DuckDBPyConnection, plans: list[FilePlan], log: QueryLog, *, cri: bool, first: bool,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, on_bytes=None) -> dict[int, _Counts]:
    """Parse the lines of `plans` (all plain text, or all CRI container logs) in one query into
    audit_parsed (created when `first`)."""
    stream = _Stream(plans, max_line_bytes, on_bytes)
    con.register("audit_raw", stream.reader())
    try:
        if cri:
            cri_sql = load("audit/cri_join").compile({"input": "audit_raw"})
            _record_query(log, "audit/cri_join", cri_sql, {"input": "audit_raw"}, {}, 0.0)
            con.execute(f"CREATE OR REPLACE TEMP VIEW audit_input AS {cri_sql}")
        else:
            con.execute("CREATE OR REPLACE TEMP VIEW audit_input AS SELECT * FROM audit_raw")
        inputs = {"input": "audit_input", "settings": "audit_settings"}
        sql = load("audit/startup_lines").compile(inputs)
        t0 = time.perf_counter()
        verb = "CREATE OR REPLACE TABLE audit_parsed AS " if first else "INSERT INTO audit_parsed "
        try:
            con.execute(verb + sql)
        except (duckdb.Error, OSError, EOFError) as e:
            where = stream.current.label if stream.current else ", ".join(p.label for p in plans[:3])
            raise InputError(f"cannot read as an engine log: {e}", path=where) from None
        _record_query(log, "audit/startup_lines", sql, inputs, {}, time.perf_counter() - t0)
    finally:
        con.execute("DROP VIEW IF EXISTS audit_input")
        try:
            con.unregister("audit_raw")
        except Exception:
            pass
    if stream.too_long:
        _insert_rows(con, "audit_too_long", ["file_id", "line_no", "line_bytes"], stream.too_long[:10000])
    return stream.counts


def refuse_unusable_times(con: duckdb.DuckDBPyConnection, plans: list[FilePlan]) -> None:
    """Where start-up times are joined with request times (kvir triage --startup), host-local times need a
    zone (and vLLM's a year): refuse rather than guess, naming the file. The audit alone never needs this."""
    rows = con.execute("SELECT file_id, min(line_no) FILTER (WHERE zone_unknown), "
                       "min(line_no) FILTER (WHERE ts_problem LIKE 'vLLM time without a year%') "
                       "FROM audit_lines WHERE zone_unknown OR ts_problem IS NOT NULL GROUP BY file_id ORDER BY file_id").fetchall()
    by_id = {p.file_id: p for p in plans}
    for fid, naive, no_year in rows:
        plan = by_id.get(fid)
        if plan is None:
            continue
        where = f"node {plan.node.name} in the inventory" if plan.node else "this file's node in an inventory"
        if naive is not None:
            raise InputError("start-up log times are host-local (no offset) and no source time zone was given",
                             path=plan.label, line=naive,
                             hint=f"kvir triage --startup joins them with request times: pass --source-tz (an IANA name "
                                  f"such as America/Chicago, or +02:00) or set source_tz for {where}")
        if no_year is not None:
            raise InputError("vLLM log times carry no year", path=plan.label, line=no_year,
                             hint=f"pass --year or set year for {where}")


_FILE_MAP_COLUMNS = ["file_id", "path", "size_bytes", "sha256", "skipped", "lines_read", "too_long", "inv_node",
                     "inv_match", "inv_role", "inv_version", "inv_engine", "inv_deployment", "inv_env_deferred",
                     "inv_env_batch_cap", "inv_advertised_context", "inv_block_size", "file_node", "file_node_source",
                     "file_role", "source_tz", "year", "input_kind"]


def _insert_file_map(con: duckdb.DuckDBPyConnection, plans: list[FilePlan], counts: dict[int, _Counts]) -> None:
    rows = []
    for p in plans:
        n = p.node
        c = counts.get(p.file_id, _Counts())
        rows.append((p.file_id, p.label, p.size_bytes, p.sha256, p.skipped, c.lines, c.too_long,
                     n.name if n else None, f"({p.match})" if n else None, n.role if n else None,
                     n.version if n else None, n.engine if n else None, n.deployment if n else None,
                     n.env.get("SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE") if n else None,
                     n.env.get("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES") if n else None,
                     n.advertised_context if n else None, n.block_size if n else None,
                     p.file_node, p.file_node_source, p.file_role, p.tz_text, p.year,
                     "server_info" if p.server_info is not None else "log"))
    _insert_rows(con, "audit_file_map", _FILE_MAP_COLUMNS, rows)
    infos = [server_info_row(p.file_id, p.server_info) for p in plans if p.server_info is not None]
    if infos:
        _insert_rows(con, "audit_server_info", SERVER_INFO_COLUMNS, infos)


def _insert_rules(con: duckdb.DuckDBPyConnection) -> None:
    con.executemany("INSERT INTO audit_rules VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(r.rule_id, r.name, r.title, r.severity, r.fix, r.help, r.mechanism) for r in all_rules()])


def _empty_parsed(con: duckdb.DuckDBPyConnection, log: QueryLog) -> None:
    """audit_parsed with its columns and no rows (every input was skipped)."""
    con.register("audit_input", pa.table({n: pa.array([], t) for n, t in zip(_SCHEMA.names, _SCHEMA.types)}))
    sql = load("audit/startup_lines").compile({"input": "audit_input", "settings": "audit_settings"})
    con.execute("CREATE OR REPLACE TABLE audit_parsed AS " + sql)
    con.unregister("audit_input")


def run_audit(con: duckdb.DuckDBPyConnection, paths: list[str | Path], *, inventory: str | Path | Inventory | None,
              source_tz: str | None, year: int | None, log: QueryLog, reporter=None,
              require_clock: bool = False, mechanism: Mechanism | None = None, params: Any = None,
              every_mechanism: bool = False) -> list[FilePlan]:
    """Parse every file and derive the audit tables on `con` (macros.sql already loaded). require_clock:
    refuse host-local times without a zone (kvir triage --startup joins them with request times).
    mechanism: the incident's (kvir.spec.mechanism; None: the default): findings come from its audit part
    alone, judged with `params`, the incident's typed section of it (None: not declared). every_mechanism
    (kvir preflight): every registered mechanism inserts its findings, the incident's with `params`."""
    inv = inventory if isinstance(inventory, Inventory) or inventory is None else load_inventory(inventory)
    plans = plan_files(paths, inv, source_tz, year)
    run(con, "audit/macros", log=log)
    run(con, "audit/create_tables", log=log)
    _insert_rules(con)
    readable = [p for p in plans if p.skipped is None and p.server_info is None]
    counts = _parse_all(con, readable, log, reporter)
    _insert_file_map(con, plans, counts)
    run(con, "audit/sequence", inputs={"parsed": "audit_parsed"}, log=log)
    con.execute("DROP TABLE IF EXISTS audit_parsed")
    if require_clock:
        refuse_unusable_times(con, plans)
    for name in FIRST_QUERIES:
        run(con, name, {"default_block_size": VLLM_DEFAULT_BLOCK_SIZE, "build_fields": field_names()}, log=log)
    fill_builds(con, log)
    for part in audit_parts().values():
        part.annotate(con, log)
    for name in SHARED_QUERIES:
        run(con, name, log=log)
    chosen = mechanism or default()
    for name, part in (audit_parts().items() if every_mechanism else [(chosen.name, chosen.part("audit"))]):
        part.findings(con, params if name == chosen.name else None, log)
    for name in LAST_QUERIES:
        run(con, name, log=log)
    _refuse_unrecognised(con, plans)
    return plans


def _parse_all(con: duckdb.DuckDBPyConnection, readable: list[FilePlan], log: QueryLog, reporter) -> dict[int, _Counts]:
    """Parse the readable files into audit_parsed: the plain text logs in one query, the CRI ones in another."""
    counts: dict[int, _Counts] = {}
    _write_settings(con, readable, DEFAULT_MAX_LINE_BYTES)
    groups = [(cri, [p for p in readable if p.cri == cri]) for cri in (False, True)]
    groups = [(cri, g) for cri, g in groups if g]
    if reporter is not None:
        from kvir.core.progress import ByteCounter

        counter = ByteCounter()
        total = sum(p.size_bytes for p in readable) or 1
        for k, (cri, g) in enumerate(groups):
            counts.update(reporter.run("audit: read start-up logs",
                                       lambda g=g, cri=cri, k=k: parse_files(con, g, log, cri=cri, first=(k == 0),
                                                                             on_bytes=counter.add),
                                       counter=counter, total=total))
    else:
        for k, (cri, g) in enumerate(groups):
            counts.update(parse_files(con, g, log, cri=cri, first=(k == 0)))
    if not groups:
        _empty_parsed(con, log)
    con.execute("DROP TABLE IF EXISTS audit_settings")
    return counts


def _refuse_unrecognised(con: duckdb.DuckDBPyConnection, plans: list[FilePlan]) -> None:
    starts, indicators = con.execute(
        "SELECT (SELECT count(*) FROM node_configs), (SELECT count(*) FROM runtime_indicators)").fetchall()[0]
    if starts == 0 and indicators == 0:
        names = ", ".join(p.label for p in plans[:5]) + (" ..." if len(plans) > 5 else "")
        raise InputError(f"no recognisable start-up lines (SGLang max_total_num_tokens= / KV Cache is allocated / "
                         f"server_args=, vLLM KV cache size / # GPU blocks, a /server_info JSON) in any input: {names}")
