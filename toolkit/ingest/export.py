"""`kvir ingest`: normalise a machine's logs where they lie into one shard of a canonical dataset.

    kvir.ingest_shard(["logs/"], "lake/", shard="host-a", incident="incident.toml")

Every input kvir reads goes through the same adapters and merge as `kvir triage` (kvir.ingest.run), into
a scratch case; its canonical `requests` (one row per request as served, with source file and line) are
then written as Parquet partitioned by UTC day, with the record of how each input was read (read =
parsed + quarantined) beside them (layout: kvir.ingest.lake). A lake of such shards is triaged
centrally: `kvir triage --engine spark LAKE` (or the default DuckDB engine on a local lake).

One writer per shard (the scratch case's lock); the shard's folders are built in LAKE/_staging/ and
moved into place when complete, its shards/ row last, so a reader never takes a half-written shard.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from kvir import __version__
from kvir.case.store import Case
from kvir.core.errors import InputError
from kvir.core.files import sha256_file
from kvir.core.progress import Reporter
from kvir.ingest.lake import LAKE_FORMAT, SIDE_TABLES, check_shard_name, is_lake
from kvir.ingest.run import IngestOptions, ingest, plan_inputs, refuse_naive_without_zone
from kvir.spec.model import IncidentSpec, load_spec

_SIDE_SQL = {
    "sources": "SELECT * FROM sources",
    "source_counts": "SELECT * FROM source_counts",
    "quarantine": "SELECT source_id, source_line, reason, raw, source_file, format FROM quarantine",
    "evidence_joins": "SELECT * FROM evidence_joins",
    "metric_samples": "SELECT * FROM metric_samples",
    "skipped_inputs": "SELECT * FROM skipped_inputs",
    "conflicts": "SELECT * FROM conflicts",
}


@dataclass
class ShardResult:
    lake: Path
    shard: str
    requests: int
    sources: list[dict[str, Any]]
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"lake": str(self.lake), "shard": self.shard, "requests": self.requests, "sources": self.sources,
                "files": [str(f) for f in self.files], "seconds": self.seconds}


def default_shard() -> str:
    """This machine's name, as a shard name."""
    name = "".join(c if c.isalnum() or c in "._-" else "-" for c in socket.gethostname()).strip("-.")
    return name or "shard"


def ingest_shard(paths: list[str | Path], out: str | Path, *, shard: str | None = None,
                 incident: str | Path | IncidentSpec | None = None, format: str = "auto",
                 source_tz: str | None = None, served_model: str | None = None, year: int | None = None,
                 keep_raw: bool = False, hash: str = "auto", overwrite: bool = False, progress: bool = False,
                 memory_limit: str | None = None, threads: int | None = None,
                 join_tolerance_s: float | None = None) -> ShardResult:
    """Normalise `paths` into shard `shard` (default: the host name) of the canonical dataset `out`.
    The incident spec is optional: it gives [[sources]] settings, the window that year-less and local
    times are placed by, and the model engine logs serve when they do not say."""
    t0 = time.perf_counter()
    shard = check_shard_name(shard or default_shard())
    lake = Path(out)
    if lake.exists() and any(lake.iterdir()) and not is_lake(lake):
        raise InputError("is a folder that is not a kvir canonical dataset and not empty: refusing to write into it",
                         path=str(lake))
    if (lake / "shards" / f"shard={shard}").exists() and not overwrite:
        raise InputError(f"shard {shard} already exists", path=str(lake), hint="pass --overwrite to replace it")
    spec = incident if isinstance(incident, IncidentSpec) or incident is None else load_spec(incident)
    opts = IngestOptions(format=format, source_tz=source_tz, served_model=served_model, year=year,
                         keep_raw=keep_raw, hash=hash)
    if join_tolerance_s is not None:
        opts.join_tolerance_s = float(join_tolerance_s)
    plan = plan_inputs(list(paths), spec, opts)
    if not plan.sources:
        raise InputError("no inputs to ingest", hint="name log files, folders or globs, or [[sources]] in the spec")
    work = lake / "_staging" / shard
    case = Case.create(work / "case", memory_limit=memory_limit, threads=threads)   # holds the shard's lock
    reporter = Reporter(enabled=progress)
    try:
        with reporter.session():
            ingest(case, plan.sources, opts, reporter, skipped=plan.skipped)
            refuse_naive_without_zone(case)
            staged = work / "out"
            shutil.rmtree(staged, ignore_errors=True)
            n = reporter.run("write canonical Parquet", lambda: _write(case, staged, shard), con=case.con)
        from kvir.ingest.run import source_counts

        counts = source_counts(case)["sources"]
        _shard_row(case, staged, shard, n, counts, spec, opts)
        case.save_manifest()
        manifest = json.loads((case.path / "manifest.json").read_text())
        files = _publish(lake, staged, shard, manifest, spec)
    finally:
        case.close()       # the scratch case is dropped; the lock is released
        shutil.rmtree(work, ignore_errors=True)
        try:
            (lake / "_staging").rmdir()
        except OSError:
            pass
    return ShardResult(lake, shard, n, counts, files, round(time.perf_counter() - t0, 3))


def _write(case: Case, staged: Path, shard: str) -> int:
    """Every table of the shard below staged/<table>/shard=<shard>/; returns the requests written.

    Requests go one UTC day per file, each day sorted by prompt length (unknown lengths last): every
    triage question is a prompt-length threshold, and in a day clustered so, the row groups' statistics
    let both engines skip all but the long-prompt tail (measured on a 3.7 M-row day of the reference
    fleet: Spark 3.0 s -> 0.8 s, DuckDB 1.0 s -> 0.05 s for triage/hits' scan; benchmarks/README.md).
    A day's rows still carry their source file and line, and a window's days are still read by their
    files' ts statistics."""
    con = case.con
    for t in ("requests",) + SIDE_TABLES:
        (staged / t).mkdir(parents=True, exist_ok=True)
    part = f"shard={shard}"
    n = 0
    days = con.execute("SELECT strftime(ts, '%Y-%m-%d') AS day FROM requests GROUP BY 1 ORDER BY 1").fetchall()
    for (day,) in days:
        folder = staged / "requests" / part / f"dt={day or '__HIVE_DEFAULT_PARTITION__'}"
        folder.mkdir(parents=True)
        if day is None:
            where, params = "ts IS NULL", {}
        else:
            lo = dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc)
            where, params = "ts >= $lo AND ts < $hi", {"lo": lo, "hi": lo + dt.timedelta(days=1)}
        n += con.execute(f"COPY (SELECT * FROM requests WHERE {where} ORDER BY prompt_tokens NULLS LAST, ts, request_id) "
                         "TO $p (FORMAT parquet, COMPRESSION zstd)",
                         {**params, "p": str(folder / "part-0.parquet")}).fetchone()[0]
    for t, sql in _SIDE_SQL.items():
        (staged / t / part).mkdir()
        con.execute(f"COPY ({sql}) TO $p (FORMAT parquet, COMPRESSION zstd)",
                    {"p": str(staged / t / part / "part-0.parquet")})
    return int(n)


def _shard_row(case: Case, staged: Path, shard: str, n: int, counts: list[dict[str, Any]],
               spec: IncidentSpec | None, opts: IngestOptions) -> None:
    row = {"format": LAKE_FORMAT, "shard": shard, "host": socket.gethostname(),
           "written_at": dt.datetime.now(dt.timezone.utc), "kvir_version": __version__,
           "duckdb_version": duckdb.__version__, "incident": spec.id if spec else None,
           "incident_sha256": sha256_file(spec.path) if spec and spec.path else None,
           "requests": n, "inputs": len(counts), "read": sum(c["read"] for c in counts),
           "parsed": sum(c["parsed"] for c in counts), "quarantined": sum(c["quarantined"] for c in counts),
           "skipped": sum(c["skipped"] for c in counts), "hash": opts.hash}
    (staged / "shards" / f"shard={shard}").mkdir(parents=True)
    case.con.execute(
        "COPY (SELECT $format AS format, $host AS host, $written_at::TIMESTAMPTZ AS written_at, "
        "$kvir_version AS kvir_version, $duckdb_version AS duckdb_version, $incident::VARCHAR AS incident, "
        "$incident_sha256::VARCHAR AS incident_sha256, $requests::BIGINT AS requests, $inputs::INTEGER AS inputs, "
        "$read::BIGINT AS read, $parsed::BIGINT AS parsed, $quarantined::BIGINT AS quarantined, "
        "$skipped::BIGINT AS skipped, $hash AS hash) TO $p (FORMAT parquet)",
        {**{k: v for k, v in row.items() if k != "shard"},
         "p": str(staged / "shards" / f"shard={shard}" / "part-0.parquet")})
    case.manifest["shard"] = {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in row.items()}


def _publish(lake: Path, staged: Path, shard: str, manifest: dict[str, Any], spec: IncidentSpec | None) -> list[Path]:
    """Move the staged shard into the lake: an old shard of the name is retired first (its shards/ row
    before anything else), the new one's shards/ row goes in last."""
    part = f"shard={shard}"
    order = ("shards", "requests") + SIDE_TABLES
    for t in order:
        old = lake / t / part
        if old.exists():
            trash = lake / "_staging" / shard / f"old-{t}"
            os.rename(old, trash)
    (lake / "manifests").mkdir(parents=True, exist_ok=True)
    mpath = lake / "manifests" / f"{shard}.json"
    tmp = mpath.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    os.replace(tmp, mpath)
    for t in order[1:] + order[:1]:
        (lake / t).mkdir(exist_ok=True)
        os.rename(staged / t / part, lake / t / part)
    return sorted(p for t in order for p in (lake / t / part).rglob("*.parquet")) + [mpath]
