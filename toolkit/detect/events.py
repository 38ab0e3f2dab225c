"""Engine logs as events for detection rules (queries/detect/events.sql): one row per line with its message, UTC
time, node and request id, the way a log shipper or Timesketch holds them. The lines are read once by kvir's line
reader and parsed in DuckDB (Python touches files, never rows).

    con = events(["logs/prefill-0.log"], source_tz="America/Chicago")     # table `logs`
    con.execute(sql_of_a_sigma_rule).fetchall()                            # kvir.detect.hunt runs every rule
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from kvir.core.errors import InputError
from kvir.core.files import node_from_path
from kvir.core.sql import QueryLog, load
from kvir.core.timezones import parse_source_tz

_SCHEMA = pa.schema([("file_id", pa.int32()), ("line_no", pa.int64()), ("line", pa.string())])


def _batches(files: list[Path]):
    from kvir.ingest.lines import iter_line_batches

    for i, f in enumerate(files, 1):
        for b in iter_line_batches(f, text=True):
            yield pa.RecordBatch.from_arrays([pa.array(np.full(b.num_rows, i, np.int32)), b.column("line_no"),
                                              b.column("line").cast(pa.string())], schema=_SCHEMA)


def events(paths: list[str | Path], *, source_tz: str | None = None, year: int | None = None, con=None):
    """A DuckDB connection holding the table `logs` (file, line_no, node, message, timestamp, rid)."""
    from kvir.case.store import connect
    from kvir.ingest.inputs import collect_inputs

    tz = None
    if source_tz:
        try:
            tz = parse_source_tz(source_tz)
        except ValueError as e:
            raise InputError(str(e), key="--source-tz") from None
    inputs = collect_inputs(list(paths), None)
    files = sorted(f for f, _ in inputs.files)
    con = con or connect(":memory:")
    meta = pa.table({"file_id": pa.array(range(1, len(files) + 1), pa.int32()),
                     "path": [str(f) for f in files], "node": [node_from_path(f)[0] for f in files],
                     "tz_iana": pa.array([tz.iana if tz else None] * len(files), pa.string()),
                     "tz_offset_min": pa.array([tz.offset_minutes if tz else None] * len(files), pa.int32()),
                     "year": pa.array([year] * len(files), pa.int32())})
    con.register("detect_files", meta)
    con.register("detect_lines", pa.RecordBatchReader.from_batches(_SCHEMA, _batches(files)))
    try:
        sql = load("detect/events").compile({"input": "detect_lines", "files": "detect_files"})
        con.execute("CREATE OR REPLACE TABLE logs AS " + sql)
        QueryLog().record(load("detect/events"), sql, {}, None, 0.0, {"input": "detect_lines", "files": "detect_files"})
    finally:
        con.unregister("detect_lines")
        con.unregister("detect_files")
    return con
