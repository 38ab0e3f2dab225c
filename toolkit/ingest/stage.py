"""Running an adapter over a stream of numbered lines, in chunks DuckDB can parse in parallel.

DuckDB scans a Python RecordBatchReader on one thread and pays a per-batch toll to call back into Python;
an in-memory Arrow table it scans on every thread. So a stream is cut into tables of about CHUNK_BYTES
(a background thread prepares the next one while DuckDB parses the current one) and the adapter runs
once per chunk, appending its rows straight to the case's records_text (no stage table: a copy of every
request record cost about a fifth of the ingest). Memory stays bounded by about three chunks whatever
the size of the input (DuckDB writes the records to the case file as row groups fill); every row keeps
its own source and line number, so chunk boundaries change nothing.
"""
from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator

import duckdb
import pyarrow as pa

CHUNK_BYTES = 128 << 20


def run_adapter(con: duckdb.DuckDBPyConnection, name: str, inp: object, sql: str, target: str = "records_text",
                chunk_bytes: int = CHUNK_BYTES) -> None:
    """Append the rows of the adapter `sql` (whose input relation is `name`) to `target`, by column name.
    `inp` is what to register as `name`: a RecordBatchReader (run in chunks), a table, or None when
    `name` already exists in the database."""
    insert = f"INSERT INTO {target} BY NAME {sql}"   # names: kvir-generated identifiers
    if inp is None:
        con.execute(insert)
    elif not isinstance(inp, pa.RecordBatchReader):
        _run(con, name, inp, insert)
    else:
        for table in chunk_tables(inp, chunk_bytes):
            _run(con, name, table, insert)
            del table


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


def interleave(producers: list[Callable[[], Iterator[pa.RecordBatch]]], workers: int | None = None,
               queue_size: int = 4) -> Iterator[pa.RecordBatch]:
    """Run several batch producers (one per file) in threads and yield their batches as they come.

    Each batch carries its own source and line numbers, so arrival order does not matter. NumPy and file
    reads release the GIL, so files are split in parallel while DuckDB parses what is ready; at most
    queue_size batches per worker wait in memory. An exception in a producer is raised here."""
    import os
    import queue
    import threading

    if not producers:
        return
    workers = max(1, min(len(producers), workers or os.cpu_count() or 1))
    if workers == 1:
        for make in producers:
            yield from make()
        return
    q: queue.Queue = queue.Queue(maxsize=queue_size * workers)
    todo = list(reversed(producers))
    lock = threading.Lock()
    stop = threading.Event()
    done = object()

    def work() -> None:
        try:
            while not stop.is_set():
                with lock:
                    if not todo:
                        break
                    make = todo.pop()
                for batch in make():
                    while not stop.is_set():
                        try:
                            q.put(batch, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
        except BaseException as e:  # handed to the consumer, which raises it
            q.put(e)
        finally:
            q.put(done)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    finished = 0
    try:
        while finished < workers:
            item = q.get()
            if item is done:
                finished += 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
