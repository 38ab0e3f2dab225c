"""Text sources: the prompts and responses that logs, exports and saved bodies hold, read once, batch by batch.

A text format is one query, queries/confirm/text/<name>.sql, over the records kvir's readers give every
format (kvir.ingest.readers: `source_id, line_no, line, line_bytes, repaired, problem`). It emits one row per
record: `status` (NULL: read; 'skip: why': counted, holds no text; 'bad: why': quarantined), the request id
as the case knows it, and the record's `pieces` (part prompt | response, choice, text, done). The pieces of
one text spread over several records (a stream's chunks) are joined in line order; a text whose last piece
has not come yet waits for the next batch (only those), and every text is complete at the end of its file.

Every record is counted: read = with text + without text + skipped + quarantined, per file. The text lives
in memory only, on a connection of its own (kvir.confirm.run), never in the case.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from kvir.core.errors import InputError
from kvir.core.sql import load
from kvir.ingest.lines import DEFAULT_MAX_LINE_BYTES, iter_line_batches
from kvir.ingest.readers import shape_of, tagged

PIECES = ("source_id", "line_no", "request_id", "part", "choice", "text", "done")


@dataclass(frozen=True)
class TextFormat:
    name: str                  # the format's name in kvir's registry (kvir formats)
    query: str                 # queries/confirm/text/<...>.sql
    reader: str                # records (NDJSON, JSON documents, CSV) | lines (log lines)
    holds: str                 # what it holds, for --help and errors
    mapped: bool = False       # its paths come from --map


TEXT_FORMATS = {f.name: f for f in (
    TextFormat("openai-response", "confirm/text/openai_response", "records",
               "responses: choices[].text, .message.content, stream chunks' .delta.content"),
    TextFormat("vllm", "confirm/text/vllm", "lines",
               "prompts (DEBUG `Request <id> details: prompt: ...`; up to 0.11.0 `Received request <id>: prompt:`) "
               "and chat responses (`Generated response <id>: output: ...`, --enable-log-outputs)"),
    TextFormat("litellm", "confirm/text/litellm", "records",
               "SpendLogs `messages` and `response` (kept when the proxy stores prompts in spend logs)"),
    TextFormat("langfuse", "confirm/text/langfuse", "records", "observations' `input` and `output`"),
    TextFormat("generic-jsonl", "confirm/text/generic", "records",
               "what --map names: request_id, prompt, response (dotted paths; * for every element)", mapped=True),
)}


@dataclass
class TextSource:
    source_id: int
    path: Path
    format: TextFormat
    chosen_by: str
    paths: dict[str, list[str]] = field(default_factory=dict)   # --map: field -> its paths (generic formats)
    sha256: str = ""
    size_bytes: int = 0
    counts: dict[str, int] = field(default_factory=dict)    # read, with_text, without_text, skipped, quarantined


def choose_format(path: Path, given: str | None, mapped: bool = False) -> tuple[TextFormat, str]:
    """The text format of `path`: the one given, else kvir's sniffing (kvir.ingest.sources.sniff); with a
    --map, a file sniffed as generic JSON Lines or as nothing known is read with the map."""
    from kvir.ingest.sources import sniff

    if given and given != "auto":
        if given not in TEXT_FORMATS:
            raise InputError(f"--format {given!r} holds no text kvir confirm reads (it reads: "
                             f"{', '.join(TEXT_FORMATS)})", path=str(path))
        return TEXT_FORMATS[given], f"given: --format {given}"
    try:
        fmt, why = sniff(path)
    except InputError:
        if not mapped:
            raise
        return TEXT_FORMATS["generic-jsonl"], "no known format sniffed: read with --map"
    if mapped and fmt.name == "generic-jsonl":
        return TEXT_FORMATS["generic-jsonl"], f"{why}: read with --map"
    if fmt.name not in TEXT_FORMATS or TEXT_FORMATS[fmt.name].mapped:
        raise InputError(f"sniffed as {fmt.name}, which holds no prompt or response text kvir confirm reads "
                         f"(it reads: {', '.join(TEXT_FORMATS)})", path=str(path),
                         hint="give --format, or --map for JSON Lines")
    return TEXT_FORMATS[fmt.name], why


def json_path(key: str) -> str:
    """A dotted --map path as a JSON path: a number indexes an array (-1: the last), * takes every element."""
    if key.startswith("$"):
        return key
    out = "$"
    for p in key.split("."):
        if p == "*":
            out += "[*]"
        elif p.isdigit():
            out += f"[{p}]"
        elif p.startswith("-") and p[1:].isdigit():
            out += f"[#{p}]"
        else:
            out += '."' + p.replace('"', '\\"') + '"'
    return out


MAP_FIELDS = ("request_id", "prompt", "response")


MAX_PATHS = 4             # alternatives per --map field (queries/confirm/text/generic.sql binds each apart)


def map_params(src: TextSource) -> dict[str, str]:
    """The bound JSON paths of a mapped source, each field's alternatives in the order given (the first that
    holds a value wins: a body's path, then a stream's); request_id and prompt and/or response required."""
    unknown = set(src.paths) - set(MAP_FIELDS)
    if unknown:
        raise InputError(f"--map knows {', '.join(MAP_FIELDS)}, not {', '.join(sorted(unknown))}", path=str(src.path))
    if "request_id" not in src.paths or not ({"prompt", "response"} & src.paths.keys()):
        raise InputError("a generic source needs --map request_id=PATH and prompt=PATH and/or response=PATH",
                         path=str(src.path))
    out = {}
    for f in MAP_FIELDS:
        paths = src.paths.get(f, [])
        if len(paths) > MAX_PATHS:
            raise InputError(f"--map {f} takes at most {MAX_PATHS} paths, not {len(paths)}", path=str(src.path))
        for i in range(MAX_PATHS):
            out[f"p_{f}_{i + 1}"] = json_path(paths[i]) if i < len(paths) else "$.__kvir_not_mapped__"
    return out


class Extractor:
    """Runs one source's text query over its record batches on the text connection; yields whole texts."""

    def __init__(self, con: duckdb.DuckDBPyConnection, src: TextSource):
        self.con, self.src = con, src
        self.sql = load(src.format.query).compile({"input": "confirm_batch"})
        self.params = map_params(src) if src.format.mapped else {}
        self.open = _PIECE_SCHEMA.empty_table()
        for k in ("read", "with_text", "without_text", "skipped", "quarantined"):
            src.counts.setdefault(k, 0)
        self.quarantine: list[pa.Table] = []

    def texts(self, batch: pa.RecordBatch | pa.Table) -> pa.Table:
        """The texts this batch completes (source_id, line_no, request_id, part, choice, text)."""
        self.con.register("confirm_batch", batch)
        try:
            rows = self.con.sql(self.sql, params=self.params or None).to_arrow_table()
        except duckdb.Error as e:
            lines = pc.min_max(batch.column("line_no")).as_py()
            raise InputError(f"its text could not be read in lines {lines['min']}-{lines['max']} ({type(e).__name__}; "
                             "DuckDB's message is withheld: it may quote the text)", path=str(self.src.path)) from None
        finally:
            self.con.unregister("confirm_batch")
        self._count(rows)
        pieces = _pieces(rows)
        return self._assemble(pieces, final=False)

    def flush(self) -> pa.Table:
        return self._assemble(None, final=True)

    def _count(self, rows: pa.Table) -> None:
        status = rows.column("status")
        c = self.src.counts
        n = rows.num_rows
        bad = pc.fill_null(pc.starts_with(status, "bad: "), False)
        skip = pc.fill_null(pc.starts_with(status, "skip: "), False)
        has = pc.greater(pc.fill_null(pc.list_value_length(rows.column("pieces")), 0), 0)
        c["read"] += n
        c["quarantined"] += pc.sum(bad).as_py() or 0
        c["skipped"] += pc.sum(skip).as_py() or 0
        ok = pc.and_(pc.invert(bad), pc.invert(skip))
        c["with_text"] += pc.sum(pc.and_(ok, has)).as_py() or 0
        c["without_text"] += pc.sum(pc.and_(ok, pc.invert(has))).as_py() or 0
        q = rows.filter(bad).select(["source_id", "line_no", "status"])
        if q.num_rows:
            self.quarantine.append(q)

    def _assemble(self, pieces: pa.Table | None, final: bool) -> pa.Table:
        """Join each text's pieces in line order; keep the unfinished ones (unless final) for later."""
        both = self.open if pieces is None else pa.concat_tables([self.open, pieces])
        self.con.register("confirm_pieces", both)
        try:
            grouped = self.con.sql(_ASSEMBLE).to_arrow_table()
        finally:
            self.con.unregister("confirm_pieces")
        done = grouped.column("done")
        if final:
            done = pa.array([True] * grouped.num_rows, pa.bool_())
        self.open = grouped.filter(pc.invert(done)).select(list(PIECES)).cast(_PIECE_SCHEMA)
        return grouped.filter(done).select(list(PIECES[:-1]))


_PIECE_TYPES = (("source_id", pa.int32()), ("line_no", pa.int64()), ("request_id", pa.string()),
                ("part", pa.string()), ("choice", pa.int32()), ("text", pa.large_string()), ("done", pa.bool_()))
_PIECE_SCHEMA = pa.schema(_PIECE_TYPES)

# A text with no choice index (vLLM logs one line per choice under one id) is its own line's.
_ASSEMBLE = """
    SELECT source_id, min(line_no) AS line_no, request_id, part, any_value(choice) AS choice,
           string_agg(text, '' ORDER BY line_no) AS text, bool_or(done) AS done
    FROM confirm_pieces
    GROUP BY source_id, request_id, part, coalesce(choice, -line_no)
    ORDER BY line_no"""


def _pieces(rows: pa.Table) -> pa.Table:
    """The records' pieces as rows (a list per record, flattened without a loop)."""
    ok = pc.is_null(rows.column("status"))
    rows = rows.filter(ok)
    lists = rows.column("pieces").combine_chunks() if rows.num_rows else pa.array([], rows.schema.field("pieces").type)
    parent = pc.list_parent_indices(lists)
    flat = pc.list_flatten(lists)
    out = {"source_id": pc.take(rows.column("source_id"), parent).cast(pa.int32()),
           "line_no": pc.take(rows.column("line_no"), parent).cast(pa.int64()),
           "request_id": pc.take(rows.column("request_id"), parent).cast(pa.string())}
    for name, typ in _PIECE_TYPES[3:]:
        out[name] = pc.struct_field(flat, name).cast(typ)
    t = pa.table(out)
    return t.filter(pc.invert(pc.is_null(t.column("request_id"))))


def record_batches(con: duckdb.DuckDBPyConnection, src: TextSource, spill: Path,
                   max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[pa.RecordBatch | pa.Table]:
    """The source's records in batches, as every kvir reader numbers them; the file's SHA-256 and size are
    taken from the bytes read (NDJSON and log lines, streamed) or from one hashing read (documents, CSV)."""
    path = src.path
    shape = "lines" if src.format.reader == "lines" else shape_of(path)
    if shape in ("lines", "ndjson"):
        digest = hashlib.sha256()
        for b in iter_line_batches(path, max_line_bytes, text=True, digest=digest):
            yield tagged(b, src.source_id, max_line_bytes)
        src.sha256 = digest.hexdigest()
    else:
        from kvir.core.files import sha256_file
        from kvir.ingest.readers import read_records
        from kvir.ingest.sources import IngestOptions, Source

        shim = _ReaderShim(con, spill)
        fake = Source(src.source_id, [path], str(path), _format_of(src), "confirm")
        table = read_records(shim, fake, IngestOptions(max_line_bytes=max_line_bytes), shape)  # type: ignore[arg-type]
        src.sha256 = sha256_file(path)
        yield from table.to_batches(max_chunksize=4096)
    src.size_bytes = path.stat().st_size


@dataclass
class _ReaderShim:
    """What kvir.ingest.readers needs of a case: a connection (here the text one) and a spill folder."""

    con: duckdb.DuckDBPyConnection
    path: Path


def _format_of(src: TextSource):
    from kvir.ingest.formats import FORMATS

    return FORMATS[src.format.name]
