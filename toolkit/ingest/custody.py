"""Chain of custody of the inputs: the size and SHA-256 a case records for an input are those of the bytes it
parsed, and every line it read is counted.

kvir's line reader reads no byte past the size a file had when it was listed, and hashes the bytes it parses
(kvir.ingest.opener): a log that grows while triage runs is read as it was then, and its notes say so. Inputs
that DuckDB reads itself (CSV and JSON documents, Parquet) are fingerprinted by a read of their own, so a
change while the run reads them would pair one file's fingerprint with another's records: it is refused.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa

from kvir.ingest.opener import FileChanged, changed_since
from kvir.ingest.sources import Source


def size_of(src: Source, i: int = 0) -> int:
    """The size of the source's i-th file when it was listed (what is read of it)."""
    stamp = src.stamp(i)
    return stamp.size if stamp is not None else src.paths[i].stat().st_size


def input_sizes(sources: list[Source]) -> dict[int, int]:
    return {s.source_id: sum(size_of(s, i) for i in range(len(s.paths))) for s in sources}


def read_as_listed(src: Source) -> bool:
    """Is the source read by kvir's line reader, which stops at the listed size and hashes what it parses?"""
    return src.format.reader == "lines" and len(src.paths) == 1


def check_unchanged(sources: list[Source], digests: dict[int, str]) -> None:
    """After the sources are read: a source read as listed that has grown since gets a note; any other that
    changed while the run read it is refused, all such files in one error."""
    refused = []
    for src in sources:
        for i, path in enumerate(src.paths):
            why = changed_since(path, src.stamp(i))
            if why is None:
                continue
            if read_as_listed(src):
                src.notes.append(f"changed while the run read it ({why}): read as it was when the run began, "
                                 f"{size_of(src, i):,} bytes" + (", the size and SHA-256 recorded"
                                                                 if src.source_id in digests else ""))
            else:
                refused.append(f"{path} ({why})")
    if refused:
        raise FileChanged("changed while they were read, so their fingerprint would not describe what was parsed: "
                          + "; ".join(refused), hint="copy the files, or wait until they are stable, and rerun")


def file_blank_lines(case, group: list[Source], blank: dict[int, int]) -> None:
    """Count the empty lines the line reader dropped (kind skip, reason 'blank line'): read = parsed +
    quarantined still holds, and a file of blank lines costs no rows."""
    rows = [(s.source_id, blank[s.source_id]) for s in group if blank.get(s.source_id)]
    if not rows:
        return
    t = pa.table({"source_id": pa.array([r[0] for r in rows], pa.int32()), "n": pa.array([r[1] for r in rows], pa.int64())})
    name = f"blank{group[0].source_id}_counts"
    con: duckdb.DuckDBPyConnection = case.con
    con.register(name, t)
    try:
        # one row per (source, kind, reason): lines holding only spaces were filed as 'blank line' rows already
        con.execute(f"UPDATE source_counts AS c SET n = c.n + b.n FROM {name} AS b WHERE c.source_id = b.source_id "
                    "AND c.kind = 'skip' AND c.reason = 'blank line'")
        con.execute(f"INSERT INTO source_counts SELECT b.source_id, 'skip', 'blank line', b.n FROM {name} AS b "
                    "WHERE NOT EXISTS (SELECT 1 FROM source_counts AS c WHERE c.source_id = b.source_id "
                    "AND c.kind = 'skip' AND c.reason = 'blank line')")
    finally:
        con.unregister(name)
