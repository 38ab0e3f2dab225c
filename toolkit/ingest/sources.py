"""Where kvir's inputs come from: paths resolved, each input's format chosen and its settings settled.

A source is one file, or one Parquet dataset (the files under one argument or one [[sources]] entry).
Its settings are what the file cannot say itself: the time zone of naive timestamps, the served model of
an engine log, the node and role, the year of year-less stamps, a column mapping. Anything that cannot be
read correctly is refused here, naming the file, before a line is parsed.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.ingest import formats as fmts
from kvir.core.errors import InputError
from kvir.ingest.formats import FORMATS, Format
from kvir.ingest.inputs import Skipped, collect_inputs, glob_under, is_glob, resolve_paths  # noqa: F401 (resolve_paths re-exported)
from kvir.ingest.lines import DEFAULT_MAX_LINE_BYTES, compression_of, head_lines
from kvir.ingest.opener import Stamp
from kvir.spec.model import IncidentSpec, SourceSpec
from kvir.core.timezones import SourceTz, parse_source_tz
from kvir.core.files import node_from_path, role_from_name, sha256_file, sha256_of_digests

@dataclass
class Source:
    source_id: int
    paths: list[Path]
    label: str
    format: Format
    chosen_by: str
    tz: SourceTz | None = None
    served_model: str | None = None
    served_model_source: str = ""
    node: str | None = None
    role: str | None = None
    year: int | None = None
    columns: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    window: tuple[Any, Any] | None = None   # the incident window (UTC), for formats that need it
    max_log_len: int | None = None          # vLLM's --max-log-len, when its start-up arguments show one
    stamps: list[Stamp | None] = field(default_factory=list)   # each of `paths` as listed (kvir.ingest.opener)
    join: tuple[str, ...] = ()              # a declared gateway's join keys ([[sources]] join; empty: id and time)

    def stamp(self, i: int = 0) -> Stamp | None:
        return self.stamps[i] if i < len(self.stamps) else None

    @property
    def is_view(self) -> bool:
        return self.format.reader == "parquet-mapped"


# A file at least this big, in a format that allows it, is read by DuckDB's own readers
# (kvir.ingest.native); smaller files gain nothing from it.
NATIVE_MIN_BYTES = 64 << 20


def native_min_bytes() -> int:
    """KVIR_NATIVE_MIN_BYTES (a size in bytes, or `off`: every file through kvir's line reader), else
    NATIVE_MIN_BYTES."""
    value = os.environ.get("KVIR_NATIVE_MIN_BYTES", "").strip().lower()
    if not value:
        return NATIVE_MIN_BYTES
    if value == "off":
        return 1 << 62
    if value.isdigit():
        return int(value)
    raise InputError(f"KVIR_NATIVE_MIN_BYTES must be a size in bytes or 'off', not {value[:40]!r}")


@dataclass
class IngestOptions:
    format: str = "auto"
    source_tz: str | None = None
    served_model: str | None = None
    year: int | None = None
    keep_raw: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    hash: str = "auto"          # full | footer | auto | none (see input_digest)
    join_tolerance_s: float = 2.0   # seconds: candidates / identities joined by time (ingest/joins.py)
    native_min_bytes: int = field(default_factory=native_min_bytes)   # see NATIVE_MIN_BYTES


def hashed_while_read(src: Source, opts: IngestOptions) -> bool:
    """Is the source's SHA-256 taken as its bytes are read for parsing (a text file read line by line, by
    kvir's line reader, compressed or not, or by kvir.ingest.native's check), rather than by a read of its
    own? Then the recorded digest and size are those of exactly the bytes parsed."""
    return opts.hash != "none" and src.format.reader == "lines" and len(src.paths) == 1


def _spec_source_for(path: Path, spec: IncidentSpec | None) -> SourceSpec | None:
    if spec is None:
        return None
    r = path.resolve()
    for s in spec.sources:
        where = Path(s.path) if Path(s.path).is_absolute() else spec.base_dir / s.path
        if where.is_dir():
            if r.is_relative_to(where.resolve()):
                return s
        elif not is_glob(s.path, where):       # an existing path is itself, glob characters or not
            if where.exists() and where.resolve() == r:
                return s
        elif r in {Path(h).resolve() for h in glob_under(spec.base_dir, s.path)}:
            return s
    return None


def is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def sniff(path: Path) -> tuple[Format, str]:
    """Choose a format from content (and the file name where that is the convention)."""
    if is_parquet(path):
        return FORMATS["generic-parquet"], "sniffed: Parquet magic bytes"
    try:
        head = head_lines(path)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    except EOFError:
        raise InputError("truncated compressed file", path=str(path)) from None
    scores = []
    for f in FORMATS.values():
        if f.sniff is None:
            continue
        try:
            s = f.sniff(path, head)
        except Exception:  # a sniffer must never take triage down; it just does not match
            s = 0
        if s > 0:
            scores.append((s, f.name))
    tried = ", ".join(sorted(n for n, f in FORMATS.items() if f.sniff))
    if not scores:
        raise InputError(f"matches no known format (tried: {tried})", path=str(path),
                         hint="give --format NAME, or a [[sources]] entry with format and columns")
    scores.sort(reverse=True)
    best_score, best = scores[0]
    if best_score < 50 and FORMATS[best].needs == ("columns",):
        return FORMATS[best], f"sniffed by file name ({best}); needs a column mapping"
    return FORMATS[best], f"sniffed: {best} (score {best_score}; tried: {tried})"


# SGLang's start-up settings dump: `server_args=ServerArgs(k=v, ...)` (the dataclass repr, <= 0.5.18) or
# `server_args={'k': v, ...}` (ServerArgs.resolved_dict(), 0.5.19+; watermark secrets redacted from 0.5.22)
_SERVER_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)(.*)")
# vLLM's: `non-default args: {'model': '...', 'served_model_name': ['...'], ...}` (api_utils.py, 0.32)
_VLLM_ARGS = re.compile(r"\bnon-default args: \{(.*)")
# vLLM's --max-log-len in its start-up arguments (`non-default args: {... 'max_log_len': N`, older releases
# `args: Namespace(... max_log_len=N`): logged token-id lists are cut to N ids
_VLLM_MAX_LOG_LEN = re.compile(r"(?:'max_log_len': |\bmax_log_len=)(\d+)")


def _vllm_max_log_len(path: Path) -> tuple[int | None, int | None]:
    """(--max-log-len, line) from a vLLM log's start-up arguments within its first MiB, if set."""
    for i, line in enumerate(head_lines(path, max_lines=5000, max_bytes=1 << 20), 1):
        if "args" in line:
            m = _VLLM_MAX_LOG_LEN.search(line)
            if m:
                return int(m.group(1)), i
    return None, None


def _setting(args: str, key: str, values: str = r"[^']*") -> str | None:
    """A string setting from either dump shape: `key='v'` (repr) or `'key': 'v'` (dict)."""
    m = re.search(r"(?<![\w'])'?" + key + r"'?(?:=|: )'(" + values + r")'", args)
    return m.group(1) if m else None


def _server_args(path: Path) -> tuple[str | None, str | None, int | None]:
    """(served model, disaggregation role, line) from an SGLang `server_args=` line or vLLM's `non-default
    args:` line, if any within the first MiB (the engine prints it once at start-up)."""
    for i, line in enumerate(head_lines(path, max_lines=5000, max_bytes=1 << 20), 1):
        m = _SERVER_ARGS.search(line)
        v = None if m else _VLLM_ARGS.search(line)
        if v:
            names = re.search(r"'served_model_name': \['([^']*)'", v.group(1))
            return names.group(1) if names else _setting(v.group(1), "model"), None, i
        if not m:
            continue
        args = m.group(1)
        mode = _setting(args, "disaggregation_mode", "prefill|decode|null")
        role = {"prefill": "prefill", "decode": "decode", "null": "mixed"}.get(mode) if mode else None
        return _setting(args, "served_model_name") or _setting(args, "model_path"), role, i
    return None, None, None


@dataclass
class Plan:
    sources: list[Source]
    skipped: list[Skipped]


def plan_sources(paths: list[str | Path], spec: IncidentSpec | None, opts: IngestOptions) -> list[Source]:
    """The sources only (see plan_inputs)."""
    return plan_inputs(paths, spec, opts).sources


def plan_inputs(paths: list[str | Path], spec: IncidentSpec | None, opts: IngestOptions) -> Plan:
    """Decide, per input, its format and settings; refuse what cannot be read correctly; set aside (and
    keep a record of) files that cannot be inputs at all. Every input that cannot be read correctly is
    refused in one error that lists them all (a folder of seven such files takes one run to fix, not seven)."""
    inputs = collect_inputs(paths, spec)
    files = inputs.files
    groups: dict[tuple, list[Path]] = {}
    planned: dict[tuple, tuple[Format, str, SourceSpec | None]] = {}
    problems: list[InputError] = []
    for f, arg in files:
        ss = _spec_source_for(f, spec)
        try:
            if opts.format and opts.format != "auto":
                fmt, how = fmts.get(opts.format), "given: --format"
            elif ss is not None and ss.format:
                fmt, how = fmts.get(ss.format), "given: [[sources]] format"
            else:
                fmt, how = sniff(f)
        except InputError as e:
            if e.path is None:           # not about this file (an unknown --format): the one error there is
                raise
            problems.append(e)
            continue
        # the files of one Parquet dataset (one argument or one [[sources]] entry) are one source
        key = ("parquet", str(arg), id(ss)) if fmt.reader == "parquet-mapped" else ("file", str(f))
        groups.setdefault(key, []).append(f)
        planned[key] = (fmt, how, ss)
    sources = []
    for i, (key, group) in enumerate(groups.items(), 1):
        fmt, how, ss = planned[key]
        try:
            src = _settle(i, group, key, fmt, how, ss, spec, opts)
        except InputError as e:
            problems.append(e)
            continue
        src.stamps = [inputs.stamps.get(p) for p in group]
        sources.append(src)
    if problems:
        raise refusal(problems)
    return Plan(sources, inputs.skipped)


def refusal(problems: list[InputError]) -> InputError:
    """One error for every input refused: the single one as it is, several listed (each names its file)."""
    if len(problems) == 1:
        return problems[0]
    shown = "; ".join(str(p) for p in problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
    return InputError(f"{len(problems)} inputs cannot be read as they are: {shown}")


def _settle(i: int, files: list[Path], key: tuple, fmt: Format, how: str, ss: SourceSpec | None,
            spec: IncidentSpec | None, opts: IngestOptions) -> Source:
    first = files[0]
    label = str(first) if key[0] == "file" else f"{key[1]} ({len(files)} Parquet file{'s' * (len(files) != 1)})"
    src = Source(i, files, label, fmt, how)
    tz_text = opts.source_tz or (ss.source_tz if ss else None)
    if fmt.times_utc and not (ss and ss.source_tz) and tz_text:
        src.notes.append(f"{fmt.name} times are UTC by definition; --source-tz {tz_text} not applied")
        tz_text = None
    src.window = (spec.window_start, spec.window_end) if spec is not None else None
    if tz_text:
        try:
            src.tz = parse_source_tz(tz_text)
        except ValueError as e:
            raise InputError(str(e), path=label, key="--source-tz") from None
    if "source_tz" in fmt.needs and src.tz is None:
        raise InputError(f"{fmt.name} writes naive host-local timestamps ({fmt.times}); kvir will not guess the zone",
                         path=label, hint="pass --source-tz (an IANA name such as America/Chicago, or +02:00), "
                                          "or set source_tz in a [[sources]] entry")
    src.year = opts.year or (ss.year if ss else None)
    src.node = (ss.node if ss and ss.node else None) or node_from_path(first)[0]
    src.role = (ss.role if ss and ss.role else None)
    src.columns = dict(ss.columns) if ss else {}
    src.join = ss.join if ss else ()

    if not fmt.names_model:
        model, role, line = _server_args(first)
        if model:
            what = "non-default args:" if fmt.name == "vllm" else "server_args="
            src.served_model, src.served_model_source = model, f"{what} line {line}"
        elif opts.served_model or (ss and ss.served_model):
            src.served_model = opts.served_model or ss.served_model  # type: ignore[union-attr]
            src.served_model_source = "--served-model" if opts.served_model else "[[sources]] served_model"
        elif spec is not None:
            src.served_model = spec.model
            src.served_model_source = "assumed: no server_args= line and no --served-model, so taken to serve the incident's model"
            src.notes.append(f"served model assumed to be {spec.model} (no server_args= line, no --served-model)")
        src.role = src.role or role or role_from_name(src.node or first.name)
        if fmt.name == "vllm":
            cut, line = _vllm_max_log_len(first)
            if cut is not None:
                src.max_log_len = cut
                src.notes.append(f"vLLM ran with --max-log-len {cut} (line {line}): a logged token-id list of {cut} "
                                 f"ids may be cut, so such a prompt's length is unknown")
    elif opts.served_model or (ss and ss.served_model):
        src.served_model = opts.served_model or ss.served_model  # type: ignore[union-attr]
        src.served_model_source = "--served-model (used where a record names no model)"
    return src


# ----------------------------------------------------------------------------------------- ingesting

def input_digest(src: Source, mode: str) -> str | None:
    """The manifest's fingerprint of an input.

    full    SHA-256 of every byte (one file), or of the sorted per-file digests (a dataset);
    footer  Parquet only: SHA-256 over each file's size and footer (the metadata: schema, row-group
            offsets, sizes and statistics), written `sha256-footer:...`; it reads kilobytes where a full
            hash of 10^8 rows reads gigabytes, and changes whenever a row group is rewritten, but it is
            not a byte-for-byte seal: use --hash full for chain of custody;
    auto    full for text inputs (they are read whole anyway), footer for Parquet (read in place: a full
            hash would read every byte the query skips);
    none    no fingerprint (recorded as null)."""
    if mode == "none":
        return None
    if mode == "footer" or (mode == "auto" and src.is_view):
        if not src.is_view:
            return _sha256(src.paths)
        return "sha256-footer:" + sha256_of_digests([_footer_sha256(p) for p in src.paths])
    return _sha256(src.paths)


def _footer_sha256(p: Path) -> str:
    import struct

    with open(p, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(size - 8)
        n = struct.unpack("<I", f.read(4))[0]
        f.seek(max(0, size - 8 - n))
        footer = f.read(n + 8)
    return hashlib.sha256(str(size).encode() + b"\0" + footer).hexdigest()


def _sha256(paths: list[Path]) -> str:
    """SHA-256 of one file, or of the sorted per-file digests of a dataset."""
    digests = [sha256_file(p) for p in paths]
    return digests[0] if len(digests) == 1 else "sha256-of-files:" + sha256_of_digests(digests)


