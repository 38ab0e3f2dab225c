"""Running an adapter over a stream of numbered lines, in chunks DuckDB can parse in parallel.

DuckDB scans a Python RecordBatchReader on one thread and pays a per-batch toll to call back into Python;
an in-memory Arrow table it scans on every thread. So a stream is cut into tables of about CHUNK_BYTES
(a background thread prepares the next one while DuckDB parses the current one) and the adapter runs
once per chunk into the stage: the first chunk creates it, the others append. Memory stays bounded by
two chunks; every row keeps its own source and line number, so chunk boundaries change nothing.
"""
from __future__ import annotations

import queue
import threading
from typing import Iterator

import duckdb
import pyarrow as pa

CHUNK_BYTES = 256 << 20


def fill_stage(con: duckdb.DuckDBPyConnection, name: str, inp: object, sql: str, stage: str,
               chunk_bytes: int = CHUNK_BYTES) -> None:
    """Create temp table `stage` from the adapter `sql`, whose input relation is `name`.
    `inp` is what to register as `name`: a RecordBatchReader (run in chunks), a table, or None when
    `name` already exists in the database."""
    create = f"CREATE OR REPLACE TEMP TABLE {stage} AS {sql}"   # names: kvir-generated identifiers
    append = f"INSERT INTO {stage} {sql}"
    if inp is None:
        con.execute(create)
        return
    if not isinstance(inp, pa.RecordBatchReader):
        _run(con, name, inp, create)
        return
    first = True
    for table in chunk_tables(inp, chunk_bytes):
        _run(con, name, table, create if first else append)
        first = False
    if first:   # no lines at all: the stage still gets its columns
        _run(con, name, inp.schema.empty_table(), create)


def _run(con: duckdb.DuckDBPyConnection, name: str, obj: object, sql: str) -> None:
    con.register(name, obj)
    try:
        con.execute(sql)
    finally:
        con.unregister(name)


def chunk_tables(reader: pa.RecordBatchReader, chunk_bytes: int = CHUNK_BYTES) -> Iterator[pa.Table]:
    """The reader's batches grouped into tables of about chunk_bytes, the next one read ahead in a thread.
    An exception while reading is raised here."""
    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    end = object()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            batches: list[pa.RecordBatch] = []
            size = 0
            for b in reader:
                batches.append(b)
                size += b.nbytes
                if size >= chunk_bytes:
                    if not put(pa.Table.from_batches(batches, schema=reader.schema)):
                        return
                    batches, size = [], 0
            if batches and not put(pa.Table.from_batches(batches, schema=reader.schema)):
                return
            put(end)
        except BaseException as e:  # handed to the consumer
            put(e)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        t.join(timeout=5)
