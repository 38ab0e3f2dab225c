"""The case: one folder per investigation, like a forensic case file.

    CASE_DIR/case.duckdb     every normalised input and every derived table
    CASE_DIR/manifest.json   versions, inputs (size, SHA-256), queries that ran (SHA-256, params, SQL), counts
    CASE_DIR/compiled/       the exact SQL of every query that ran, one file each (dbt-style)
    CASE_DIR/*.parquet/csv   exported results
    CASE_DIR/reports/        rendered documents
    CASE_DIR/tmp/            DuckDB spill space (larger-than-RAM inputs)

Every command reads and extends the same case, so work is resumable and auditable.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from kvir import __version__
from kvir.core.errors import KvirError
from kvir.core.sql import QueryLog, run

CASE_DB = "case.duckdb"
MANIFEST = "manifest.json"


def connect(db: str | Path, *, memory_limit: str | None = None, temp_dir: str | Path | None = None,
            threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh connection with kvir's settings: UTC session, spill directory, no DuckDB progress printing."""
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
    if temp_dir is not None:
        con.execute("SET temp_directory = $d", {"d": str(temp_dir)})
    if memory_limit:
        con.execute("SET memory_limit = $m", {"m": memory_limit})
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
    run(con, "macros")
    con.execute("CREATE TABLE IF NOT EXISTS kvir_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT OR REPLACE INTO kvir_meta VALUES ('macros_sha256', $v)", {"v": sha})


@dataclass
class Case:
    """An open case folder. Use `Case.create` for a new investigation and `open_case` to resume one."""

    path: Path
    con: duckdb.DuckDBPyConnection
    manifest: dict[str, Any] = field(default_factory=dict)
    log: QueryLog = field(default_factory=QueryLog)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, path: str | Path, *, overwrite: bool = True, memory_limit: str | None = None,
               threads: int | None = None) -> "Case":
        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        # DuckDB shares one database instance per file within a process: a case still open here (an
        # earlier result in a notebook) would keep the old tables alive. Close it first.
        _close_open_cases(p)
        db = p / CASE_DB
        if db.exists() and overwrite:
            db.unlink()
            wal = p / (CASE_DB + ".wal")
            if wal.exists():
                wal.unlink()
        (p / "tmp").mkdir(exist_ok=True)
        con = connect(db, memory_limit=memory_limit, temp_dir=p / "tmp", threads=threads)
        case = cls(p, con, _new_manifest())
        _OPEN.add(case)
        return case

    def __hash__(self) -> int:   # identity: cases live in a WeakSet
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    @classmethod
    def open(cls, path: str | Path, *, read_only: bool = False) -> "Case":
        p = Path(path)
        db = p / CASE_DB
        if not db.exists():
            raise KvirError("not a kvir case (no case.duckdb)", path=str(p), hint="create one with `kvir triage --out DIR`")
        if read_only:
            try:
                con = duckdb.connect(str(db), read_only=True)
            except duckdb.ConnectionException:
                raise KvirError("the case is open for writing in this process; close it (case.close()) or "
                                "open it without read_only", path=str(p)) from None
            con.execute("SET TimeZone = 'UTC'")
        else:
            con = connect(db, temp_dir=p / "tmp")
        manifest = json.loads((p / MANIFEST).read_text()) if (p / MANIFEST).exists() else _new_manifest()
        case = cls(p, con, manifest)
        _OPEN.add(case)
        return case

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Case":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ queries
    def run(self, name: str, params: dict[str, Any] | None = None, *, inputs: dict[str, str] | None = None,
            fetch: bool = False):
        """Run queries/<name>.sql on this case; the compiled SQL and parameters go into the manifest."""
        return run(self.con, name, params, inputs=inputs, log=self.log, fetch=fetch)

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
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    def has(self, table: str) -> bool:
        return table in self.tables()

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
                f"-- bound parameters:\n" + "".join(f"--   {line}\n" for line in params.splitlines())
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
        if case.path.resolve() == target:
            try:
                case.close()
            except Exception:
                pass
            _OPEN.discard(case)


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
