"""A canonical dataset ("lake"): kvir's `requests` normalised where the logs lie, one shard per machine,
with the record of how every input was read, so that all of them can be triaged centrally.

    LAKE/requests/shard=S/dt=YYYY-MM-DD/part-N.parquet  canonical requests (columns of case/requests_*.sql),
                                                        partitioned by the UTC day of ts
    LAKE/<side>/shard=S/part-0.parquet                  per shard, for each side table below
    LAKE/shards/shard=S/part-0.parquet                  one row per shard, written last: the shard is complete
    LAKE/manifests/S.json                               the shard's manifest (inputs, SHA-256, queries, counts)

Side tables: sources (one row per input), source_counts (read = parsed + quarantined, by kind and
reason), quarantine (file, line, reason), evidence_joins, metric_samples, skipped_inputs. Each machine
writes only below shard=<its name> (kvir.ingest.export), so many machines can write into one lake.
`source_id` is local to its shard: a case built from lakes numbers the sources afresh and keeps the
mapping in `lake_sources` (lake, shard, shard_source_id -> source_id).

Readers: DuckDB (`read_local`) for local folders, Spark for any URI (kvir.triage.spark); both hand the
side tables to `attach_lake`, which fills the case's source tables.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from kvir.case.store import Case
from kvir.core.errors import InputError

# conflicts: the shard's requests whose records disagree (merging happens within a shard)
SIDE_TABLES = ("sources", "source_counts", "quarantine", "evidence_joins", "metric_samples", "skipped_inputs",
               "conflicts")
# side-table columns newer kvir versions write: read as NULL from a lake written before
_LATER_COLUMNS = {"conflicts": {"account_candidates": pa.list_(pa.string()), "prefill_nodes_seen": pa.list_(pa.string()),
                                "decode_nodes_seen": pa.list_(pa.string())}}
SHARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LAKE_FORMAT = "kvir-canonical-requests/1"

Reader = Callable[[str, str], pa.Table]     # (lake root, table) -> the table of every shard, with `shard`


@dataclass
class LakeInfo:
    """What a case holds of the lakes it was built from."""

    roots: list[str]
    shards: list[dict[str, Any]] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return int(sum(s["requests"] for s in self.shards))


def is_lake(path: str | Path) -> bool:
    """A local folder kvir ingest wrote (shards/ and requests/ in it)."""
    p = Path(path)
    return (p / "shards").is_dir() and (p / "requests").is_dir()


def check_shard_name(name: str) -> str:
    if not SHARD_NAME.fullmatch(name):
        raise InputError(f"shard name {name!r}: use letters, digits, '.', '_' and '-' (it names folders)",
                         key="--shard")
    return name


def shard_of_path(path: str) -> str | None:
    m = re.search(r"/shard=([^/]+)/", path)
    return m.group(1) if m else None


# the shard comes from the path (not DuckDB's hive partitioning, which would read shard=01 as the number 1)
_SHARD_SQL = r"regexp_extract(filename, '/shard=([^/]+)/', 1) AS shard"


def read_local(con) -> Reader:
    """A reader of local lakes through DuckDB (`con`: any connection)."""
    def read(root: str, table: str) -> pa.Table:
        files = sorted(str(p) for p in (Path(root) / table).glob("shard=*/*.parquet"))
        if not files:
            raise InputError(f"not a complete kvir canonical dataset: no {table}/shard=*/ files", path=root,
                             hint="write one with `kvir ingest -o LAKE PATHS`")
        return con.sql(f"SELECT * EXCLUDE (filename), {_SHARD_SQL} FROM read_parquet($f, filename = true, "
                       "hive_partitioning = false, union_by_name = true)", params={"f": files}).to_arrow_table()
    return read


def request_files(root: str | Path) -> list[str]:
    """The requests files of a local lake (DuckDB reads them as one view)."""
    files = sorted(str(p) for p in (Path(root) / "requests").glob("shard=*/dt=*/*.parquet"))
    if not files:
        raise InputError("the canonical dataset holds no requests files", path=str(root))
    return files


def _with_lake(t: pa.Table, lake: int) -> pa.Table:
    return t.append_column("lake", pa.array([lake] * t.num_rows, pa.int32()))


def attach_lake(case: Case, roots: list[str], read: Reader, request_shards: list[set[str]]) -> LakeInfo:
    """The side tables of every lake into the case (sources, source_counts, quarantine, evidence_joins,
    metric_samples, skipped_inputs, conflicts, lake_sources, lake_shards), every source numbered afresh.
    `request_shards[i]`: the shards lake i's requests files belong to; each must be complete (a row in
    shards/) and no shard may appear in two lakes."""
    info = LakeInfo(list(roots))
    parts: dict[str, list[pa.Table]] = {t: [] for t in SIDE_TABLES + ("shards",)}
    seen: dict[str, str] = {}
    for i, root in enumerate(roots):
        shards = read(root, "shards")
        names = set(shards.column("shard").to_pylist())
        if incomplete := sorted(request_shards[i] - names):
            raise InputError(f"shard(s) {', '.join(incomplete)} have requests but no shards/ row: still being "
                             "written, or an ingest was killed (run it again)", path=root)
        for n in names:
            if n in seen:
                raise InputError(f"shard {n} appears in two canonical datasets ({seen[n]} and {root})", path=root)
            seen[n] = root
        fmt = set(shards.column("format").to_pylist())
        if fmt != {LAKE_FORMAT}:
            raise InputError(f"canonical dataset format {sorted(fmt)}, this kvir reads {LAKE_FORMAT}", path=root)
        parts["shards"].append(_with_lake(shards, i))
        for t in SIDE_TABLES:
            parts[t].append(_with_lake(read(root, t), i))
    con = case.con
    case.run("case/create_tables")
    case.run("case/evidence_tables")
    names = {}
    for t, tables in parts.items():
        names[t] = f"lake_in_{t}"
        table = pa.concat_tables(tables, promote_options="permissive")
        for col, typ in _LATER_COLUMNS.get(t, {}).items():    # a shard written before kvir had them
            if col not in table.column_names:
                table = table.append_column(col, pa.nulls(table.num_rows, typ))
        con.register(names[t], table)
    try:
        case.run("case/lake_attach", inputs=names)
    finally:
        for n in names.values():
            con.unregister(n)
    cols = [d[0] for d in con.execute("SELECT * FROM lake_shards ORDER BY lake, shard").description]
    info.shards = [dict(zip(cols, r)) for r in con.execute("SELECT * FROM lake_shards ORDER BY lake, shard").fetchall()]
    case.manifest["lakes"] = [{"root": r, "shards": [s["shard"] for s in info.shards if s["lake"] == i]}
                              for i, r in enumerate(roots)]
    case.manifest["inputs"].extend(_inputs(case))
    return info


def _inputs(case: Case) -> list[dict[str, Any]]:
    rows = case.con.execute("""SELECT m.shard, m.shard_source_id, s.source_id, s.label, s.format, s.files, s.sha256
                               FROM sources AS s JOIN lake_sources AS m USING (source_id) ORDER BY s.source_id""").fetchall()
    return [{"shard": r[0], "shard_source_id": r[1], "source_id": r[2], "label": r[3], "format": r[4],
             "files": [{"path": f} for f in (r[5] or [])], "sha256": r[6]} for r in rows]


def requests_view(case: Case, roots: list[str]) -> None:
    """`requests` in the case: a DuckDB view over the lakes' requests files, read in place (canonical
    columns and `shard`; the day partition dt is dropped: it is the UTC day of ts)."""
    files = [f for r in roots for f in request_files(r)]
    rel = case.con.read_parquet(files, filename=True, union_by_name=True)   # DuckDB quotes the paths itself
    cols = ", ".join(c for c in rel.columns if c != "filename")              # canonical column names
    if "ts_extra_ns" not in rel.columns:      # a lake written before kvir kept times below the microsecond
        cols += ", NULL::SMALLINT AS ts_extra_ns"
    rel.project(f"{cols}, {_SHARD_SQL}").create_view("requests", replace=True)

def lake_paths(paths: list[str | Path], *, spark: bool) -> list[str] | None:
    """The paths as canonical datasets, or None when they are logs to normalise. Spark reads only
    canonical datasets (local folders or URIs); DuckDB reads local ones, when every path is one."""
    if spark:
        if not paths:
            raise InputError("the Spark engine reads canonical datasets: name them (written by `kvir ingest`)")
        for p in paths:
            if "://" not in str(p) and not is_lake(p):
                raise InputError("is not a kvir canonical dataset (no shards/ and requests/ in it)", path=str(p),
                                 hint="normalise logs with `kvir ingest -o LAKE PATHS`, then triage LAKE")
        return [str(p) for p in paths]
    found = [is_lake(p) for p in paths]
    if any(found) and not all(found):
        raise InputError("give either canonical datasets (kvir ingest) or logs, not both")
    return [str(p) for p in paths] if paths and all(found) else None


def attach_local(case: Case, roots: list[str]) -> LakeInfo:
    """Local canonical datasets into the case: their source records, and `requests` as a view over them."""
    shards = [{shard_of_path(f) for f in request_files(r)} for r in roots]
    info = attach_lake(case, roots, read_local(case.con), shards)
    requests_view(case, roots)
    return info
