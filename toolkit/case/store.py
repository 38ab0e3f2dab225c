"""The case: one folder per investigation, like a forensic case file.

    CASE_DIR/case.duckdb     every normalised input and every derived table
    CASE_DIR/manifest.json   versions, inputs (size, SHA-256), queries that ran (SHA-256, params, SQL), counts
    CASE_DIR/compiled/       the exact SQL of every query that ran, one file each (dbt-style)
    CASE_DIR/*.parquet/csv   exported results
    CASE_DIR/reports/        rendered documents

Every command reads and extends the same case, so work is resumable and auditable. A command writes
through kvir.case.writer: one writer at a time, the new state built beside the case and swapped in by
`commit()` only when complete (a killed or failed run leaves the previous case whole). DuckDB spills
larger-than-RAM work into the staging folder's tmp/, which never becomes part of the case.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal

import duckdb

from kvir import __version__
from kvir.core.errors import KvirError
from kvir.core.sql import QueryLog, run
from kvir.case.damage import MANIFEST, damaged, is_damage, read_manifest
from kvir.case.writer import Writer, not_a_case

CASE_DB = "case.duckdb"


# DuckDB's own default memory limit is 80 % of RAM: a big input would then grow the process towards it.
# kvir bounds it by design (spilling to the case's tmp/ instead), whatever the input's size; the limit
# is --memory-limit, else KVIR_MEMORY_LIMIT, else DEFAULT_MEMORY_LIMIT (at most 40 % of RAM). Every
# stage's connection goes through connect(), so every stage honours it. 384 MiB, not more: DuckDB's
# buffer pool keeps the case's freshly written blocks until it is full, so a bigger limit is filled by
# a big input whatever it needs, and the peak then grows with the input until the pool is full (the
# 10 M-line log's peak: 1.6-1.8 GB at 1 GiB, 1.1-1.2 GB at 512 MiB; its bare JSON-lines form 10 M vs 1 M
# lines, single runs: 1.42x at 512 MiB, 1.24x at 384 MiB, as fast (the prefixed form within ~5 %);
# benchmarks/README.md "Volume").
DEFAULT_MEMORY_LIMIT = 384 << 20


def memory_limit_setting(memory_limit: str | None = None) -> str:
    """The DuckDB memory_limit to use: the one given, else KVIR_MEMORY_LIMIT, else the default."""
    if memory_limit:
        return str(memory_limit)
    env = os.environ.get("KVIR_MEMORY_LIMIT")
    if env:
        return env
    limit = DEFAULT_MEMORY_LIMIT
    try:
        limit = min(limit, int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.4))
    except (ValueError, OSError, AttributeError):
        pass
    return f"{max(limit >> 20, 256)}MiB"


def memory_limit_bytes(con: duckdb.DuckDBPyConnection) -> int:
    """The connection's memory_limit in bytes (DuckDB reports it as e.g. '953.6 MiB')."""
    text = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    units = {"B": 1, "BYTES": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
             "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
    try:
        num, unit = str(text).strip().split()
        return int(float(num) * units[unit.upper()])
    except (ValueError, KeyError):
        return DEFAULT_MEMORY_LIMIT


def connect(db: str | Path, *, memory_limit: str | None = None, temp_dir: str | Path | None = None,
            threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh connection with kvir's settings: UTC session, bounded memory (memory_limit_setting), a spill
    directory (the staging folder's tmp/ for a case being written, else a private one under the system's
    temp folder: never DuckDB's default .tmp in the working directory), no DuckDB progress printing."""
    con = duckdb.connect(str(db))
    con.execute("SET TimeZone = 'UTC'")
    # query_progress() needs the progress bar on; inside a Jupyter kernel without ipywidgets DuckDB
    # refuses to turn it on, and kvir then simply draws no bar.
    for setting in ("SET enable_progress_bar_print = false", "SET progress_bar_time = 0",
                    "SET enable_progress_bar = true"):
        try:
            con.execute(setting)
        except duckdb.Error:
            pass
    con.execute("SET temp_directory = $d", {"d": str(temp_dir if temp_dir is not None else _spill_dir())})
    con.execute("SET memory_limit = $m", {"m": memory_limit_setting(memory_limit)})
    threads = threads or (int(os.environ["KVIR_THREADS"]) if os.environ.get("KVIR_THREADS", "").isdigit() else None)
    if threads:
        con.execute("SET threads = $t", {"t": int(threads)})
    _ensure_macros(con)
    return con


def _ensure_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create kvir's SQL macros unless this database already holds exactly these ones: reopening a case
    must not rewrite it (its file, and so its SHA-256, stays as it was)."""
    from kvir.core.sql import load

    sha = load("macros").sha256
    try:
        have = con.execute("SELECT value FROM kvir_meta WHERE key = 'macros_sha256'").fetchone()
    except duckdb.Error:
        have = None
    if have and have[0] == sha:
        return
    con.execute("BEGIN TRANSACTION")   # one commit, not one per macro: each costs a write-ahead-log flush
    try:
        run(con, "macros")
        con.execute("CREATE TABLE IF NOT EXISTS kvir_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.execute("INSERT OR REPLACE INTO kvir_meta VALUES ('macros_sha256', $v)", {"v": sha})
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


@dataclass
class Case:
    """An open case folder. `Case.create` starts a new investigation (staged: call `commit()` when done),
    `Case.open(path, staged=True)` extends one the same way, and `open_case` reopens one to read or query.

    `path` is the folder being written (the staging folder until commit) and `home` the case's own."""

    path: Path
    con: duckdb.DuckDBPyConnection
    manifest: dict[str, Any] = field(default_factory=dict)
    log: QueryLog = field(default_factory=QueryLog)
    home: Path | None = None
    writer: Writer | None = None
    memory_limit: str | None = None     # as given (connect() resolves the default); kept for reconnecting
    threads: int | None = None
    read_only: bool = False
    _depth: int = 0                     # open transaction() blocks

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, path: str | Path, *, overwrite: bool = True, memory_limit: str | None = None,
               threads: int | None = None) -> "Case":
        """A new, empty case that replaces whatever `path` holds when committed (`overwrite` is kept for
        callers of the earlier API: a case is always built fresh)."""
        home = Path(path)
        # DuckDB shares one database instance per file within a process: a case still open here (an
        # earlier result in a notebook) would keep the old tables alive. Close it first.
        _close_open_cases(home)
        writer = Writer.begin(home, fresh=True)
        try:
            con = connect(writer.staging / CASE_DB, memory_limit=memory_limit, temp_dir=writer.staging / "tmp",
                          threads=threads)
        except BaseException:
            writer.abort()
            raise
        case = cls(writer.staging, con, _new_manifest(), home=home, writer=writer, memory_limit=memory_limit,
                   threads=threads)
        _OPEN.add(case)
        return case

    def commit(self) -> None:
        """Make the staged work the case (one atomic swap); the object stays open on the committed case."""
        if self.writer is None:
            return
        self.con.execute("CHECKPOINT")
        self.con.close()
        self.writer.commit()
        self.writer, self.path = None, self.home
        self.con = connect(self.path / CASE_DB, temp_dir=_spill_dir(), memory_limit=self.memory_limit,
                           threads=self.threads)

    def __hash__(self) -> int:   # identity: cases live in a WeakSet
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    @classmethod
    def open(cls, path: str | Path, *, read_only: bool = False, staged: bool = False) -> "Case":
        """An existing case. `staged`: work on a copy that `commit()` swaps in (how kvir's own stages extend
        a case); `read_only`: query only (works on a read-only folder). A folder kvir did not make, or a
        case whose database or manifest is damaged, is an error naming the folder or the file."""
        home = Path(path)
        db = home / CASE_DB
        why = not_a_case(home)
        if why is not None and " is damaged: " in why:      # a case from before markers, with a damaged file
            raise KvirError(why, hint="restore the case from a copy, or triage again into a new folder")
        if why is not None or not db.exists():
            raise KvirError(f"not a kvir case ({why or 'no case.duckdb'})", path=str(home),
                            hint="create one with `kvir triage --out DIR`")
        manifest = read_manifest(home)            # before any copy: a damaged case is named, not staged
        writer = Writer.begin(home, fresh=False) if staged and not read_only else None
        work = writer.staging if writer else home
        try:
            if read_only:
                try:
                    con = duckdb.connect(str(db), read_only=True)
                except duckdb.ConnectionException:
                    raise KvirError("the case is open for writing in this process; close it (case.close()) or "
                                    "open it without read_only", path=str(home)) from None
                except duckdb.Error as e:
                    raise damaged(db, e) if is_damage(e) else e from None
                con.execute("SET TimeZone = 'UTC'")
                con.execute("SET memory_limit = $m", {"m": memory_limit_setting()})
                con.execute("SET temp_directory = $d", {"d": str(_spill_dir())})
            else:   # spill space: the staging folder's (dropped at commit), or the system's for a direct open
                try:
                    con = connect(work / CASE_DB, temp_dir=work / "tmp" if writer else _spill_dir())
                except duckdb.Error as e:
                    raise damaged(db, e) if is_damage(e) else e from None
            try:
                con.execute("SELECT count(*) FROM duckdb_tables()").fetchall()   # the catalog reads whole
            except duckdb.Error as e:
                con.close()
                raise damaged(db, e) if is_damage(e) else e from None
        except BaseException:
            if writer:
                writer.abort()
            raise
        case = cls(work, con, manifest if manifest is not None else _new_manifest(), home=home, writer=writer,
                   read_only=read_only)
        _OPEN.add(case)
        return case

    def close(self) -> None:
        """Close the connection; uncommitted staged work is dropped (the case stays as it was)."""
        try:
            self.con.close()
        finally:
            if self.writer is not None:
                self.writer.abort()
                self.writer = None
                self.path = self.home

    def __enter__(self) -> "Case":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ queries
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block's statements as one transaction (nested blocks join the outer one). For the many
        small statements of a stage: each commit of its own flushes DuckDB's write-ahead log to disk (~2 ms
        here), and a case is made whole by the writer's swap anyway, not by each statement's commit."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            try:
                self.con.execute("ROLLBACK")
            except duckdb.Error:
                pass          # the error that brought us here is the one to report
            raise
        self._depth = 0
        self.con.execute("COMMIT")

    def run(self, name: str, params: dict[str, Any] | None = None, *, inputs: dict[str, str] | None = None,
            fetch: bool | Literal["df"] = False, mechanism: str | None = None):
        """Run queries/<name>.sql on this case (a mechanism's folder first: kvir.core.sql.load); the compiled
        SQL and parameters go into the manifest. fetch=True returns the rows, fetch="df" a DataFrame."""
        try:
            return run(self.con, name, params, inputs=inputs, log=self.log, fetch=fetch, mechanism=mechanism)
        except KvirError as e:
            if is_damage(e.__cause__ or e) and self.writer is not None:   # the copy of a damaged case
                raise damaged((self.home or self.path) / CASE_DB, e.__cause__ or e) from e
            raise

    def compile(self, name: str, inputs: dict[str, str]) -> str:
        """queries/<name>.sql with its inputs named, logged as run (for SQL embedded in a view or CTAS)."""
        from kvir.core.sql import load

        q = load(name)
        sql = q.compile(inputs)
        self.log.record(q, sql, {}, None, 0.0, inputs)
        return sql

    def df(self, sql_or_table: str, params: dict[str, Any] | None = None):
        """A table (by name) or a query as a pandas DataFrame. Values go in `params`, never in the SQL."""
        sql = f'SELECT * FROM "{sql_or_table}"' if _is_table_name(sql_or_table) else sql_or_table
        return self.con.execute(sql, params or {}).df() if params else self.con.execute(sql).df()

    def arrow(self, sql_or_table: str, params: dict[str, Any] | None = None):
        sql = f'SELECT * FROM "{sql_or_table}"' if _is_table_name(sql_or_table) else sql_or_table
        cur = self.con.execute(sql, params or {}) if params else self.con.execute(sql)
        return cur.to_arrow_table()

    def tables(self) -> list[str]:
        rows = self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_catalog = current_database() ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    def has(self, table: str) -> bool:
        return table in self.tables()

    def columns(self, table: str) -> list[str]:
        """The columns of one of the case's tables (empty when it has none of that name)."""
        return [r[0] for r in self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = $t "
            "ORDER BY ordinal_position", {"t": table}).fetchall()]

    # ------------------------------------------------------------------ manifest
    def save_manifest(self) -> Path:
        """Write manifest.json and compiled/*.sql (the exact SQL that ran, with its parameters)."""
        m = self.manifest
        m["updated_at"] = _now()
        m.setdefault("queries", [])
        start = len(m["queries"])
        m["queries"].extend(self.log.entries)
        compiled = self.path / "compiled"
        compiled.mkdir(exist_ok=True)
        for i, e in enumerate(self.log.entries, start):
            name = e["query"].removeprefix("queries/").removesuffix(".sql").replace("/", "__")
            params = json.dumps(e["params"], indent=2, default=str)
            (compiled / f"{i:03d}_{name}.sql").write_text(
                f"-- {e['query']} (sha256 {e['sha256'][:16]}), run {i}\n"
                + (f"-- engine: {e['engine']} (SQL from {e.get('spark_sql_from', e['query'])})\n" if e.get("engine") else "")
                + "-- bound parameters:\n" + "".join(f"--   {line}\n" for line in params.splitlines())
                + e["compiled_sql"].rstrip() + "\n")
        self.log.entries = []
        path = self.path / MANIFEST
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(m, indent=2, default=str) + "\n")
        os.replace(tmp, path)
        return path


_OPEN: "weakref.WeakSet[Case]" = weakref.WeakSet()


def _close_open_cases(path: Path) -> None:
    target = path.resolve()
    for case in list(_OPEN):
        if (case.home or case.path).resolve() == target:
            try:
                case.close()
            except Exception:
                pass
            _OPEN.discard(case)


def _spill_dir() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / f"kvir-spill-{os.getpid()}"


def _is_table_name(s: str) -> bool:
    return s.replace("_", "").isalnum()


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _new_manifest() -> dict[str, Any]:
    return {
        "kvir_version": __version__,
        "duckdb_version": duckdb.__version__,
        "python": platform.python_version(),
        "created_at": _now(),
        "inputs": [],
        "queries": [],
        "counts": {},
        "timings": {},
    }


def open_case(path: str | Path, read_only: bool = False) -> Case:
    """Reopen an investigation folder (for notebooks: `case.df("affected")`)."""
    return Case.open(path, read_only=read_only)
