"""The files behind the paths a user gives: folders walked, globs expanded, and every file that cannot be an
input (empty, not a regular file, unreadable, a compressed file that does not decompress) set aside as
*skipped* with its reason, so it is counted and listed instead of taking the whole triage down or
vanishing. A path that matches nothing, or inputs of which none can be read, are errors naming the path.

A path that exists is that file or folder, even when its name holds glob characters (`a[1].jsonl`): only a
path that does not exist is expanded as a glob. Each usable file is stamped (size, modification time,
inode) when it is listed: readers read no byte past that size (kvir.ingest.opener).
"""
from __future__ import annotations

import glob
import gzip
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from kvir.core.errors import InputError
from kvir.ingest.lines import open_maybe_compressed
from kvir.ingest.opener import Stamp
from kvir.spec.model import IncidentSpec

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str
    size_bytes: int | None = None


@dataclass
class Inputs:
    files: list[tuple[Path, Path]]          # (file, the argument it came from)
    skipped: list[Skipped]
    stamps: dict[Path, Stamp] = field(default_factory=dict)   # each usable file as it was when listed


def is_glob(text: str, path: Path) -> bool:
    """Is `text` (naming `path`) a pattern to expand? Not when the path exists as written."""
    return bool(_GLOB_CHARS.search(text)) and not (path.exists() or path.is_symlink())


def glob_under(base: Path, pattern: str) -> list[str]:
    """glob.glob of `pattern` relative to `base` (an absolute pattern as it is). The folders it starts with that
    exist as written are literal (the base always is): in `logs[2026]/a*.jsonl` only `a*.jsonl` is a pattern.
    The base is taken whole, never as its parts joined to the pattern's: `Path('.') / '*.csv'` is `*.csv`,
    whose first part is the pattern itself (a spec named `incident.toml` from its own folder has the base `.`)."""
    pat = Path(pattern)
    root, parts = (Path(pat.anchor), pat.parts[1:]) if pat.is_absolute() else (base, pat.parts)
    n = 0
    while n < len(parts) and root.joinpath(*parts[:n + 1]).is_dir():
        n += 1
    literal = glob.escape(str(root.joinpath(*parts[:n])))
    return glob.glob(os.path.join(literal, *parts[n:]) if n < len(parts) else literal, recursive=True)


def collect_inputs(paths: list[str | Path], spec: IncidentSpec | None) -> Inputs:
    """Every file the paths name (with no paths: the spec's [[sources]]), each either usable or skipped."""
    args: list[tuple[str, Path]] = []
    if paths:
        args = [(str(p), Path.cwd()) for p in paths]
    elif spec is not None and spec.sources:
        args = [(s.path, spec.base_dir) for s in spec.sources]
    if not args:
        raise InputError("no input paths given (pass files, folders or globs, or list [[sources]] in incident.toml)")
    found: list[tuple[Path, Path]] = []
    for text, base in args:
        p = Path(text) if Path(text).is_absolute() else base / text
        if is_glob(text, p):
            hits = sorted(Path(h) for h in glob_under(base, text) if not Path(h).is_dir())
            if not hits:
                raise InputError("glob matches no files", path=text)
            found += [(h, p) for h in hits]
        elif p.is_dir():
            hits = sorted(f for f in p.rglob("*") if not f.is_dir()
                          and not any(part.startswith(".") for part in f.relative_to(p).parts))
            if not hits:
                raise InputError("folder holds no files", path=text)
            found += [(h, p) for h in hits]
        elif p.exists() or p.is_symlink():
            found.append((p, p))
        else:
            raise InputError("no such file or folder", path=text)
    files, skipped, seen, stamps = [], [], set(), {}
    for f, arg in found:
        key = f.resolve() if f.exists() else f.absolute()
        if key in seen:
            continue
        seen.add(key)
        reason, size, stamp = _judge(f)
        if reason:
            skipped.append(Skipped(f, reason, size))
        else:
            files.append((f, arg))
            stamps[f] = stamp
    if not files:
        what = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:3]) + (" ..." if len(skipped) > 3 else "")
        raise InputError(f"no readable input ({len(skipped)} skipped: {what})")
    return Inputs(files, skipped, stamps)


def why_skipped(path: Path) -> tuple[str | None, int | None]:
    """(reason, size) when `path` cannot be an input, else (None, size). Reads at most a few KiB."""
    reason, size, _ = _judge(path)
    return reason, size


def _judge(path: Path) -> tuple[str | None, int | None, Stamp | None]:
    """(reason, size, stamp): why_skipped, with the usable file's stamp."""
    try:
        st = os.stat(path)            # follows symlinks: a link to a device is judged as the device
    except FileNotFoundError:
        return ("broken symbolic link" if path.is_symlink() else "vanished before it was read"), None, None
    except OSError as e:
        return f"cannot stat: {e.strerror or e}", None, None
    reason, size = _why_not(path, st)
    return reason, size, None if reason else Stamp.of(st)


def _why_not(path: Path, st: os.stat_result) -> tuple[str | None, int | None]:
    if not stat.S_ISREG(st.st_mode):
        kind = ("named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode)
                else "character device" if stat.S_ISCHR(st.st_mode) else "block device" if stat.S_ISBLK(st.st_mode)
                else "not a regular file")
        return f"{kind}: not read", None
    if st.st_size == 0:
        return "empty file (0 bytes)", 0
    try:
        with open_maybe_compressed(path) as f:
            f.read(1 << 12)
    except PermissionError as e:
        return f"unreadable: {e.strerror or 'permission denied'}", st.st_size
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        return f"cannot decompress (gzip): {e}", st.st_size
    except OSError as e:
        return f"unreadable: {e.strerror or e}", st.st_size
    except Exception as e:   # zstandard.ZstdError: a zstd magic number over bytes that are not a zstd frame
        if type(e).__module__.startswith("zstandard"):
            return f"cannot decompress (zstd): {e}", st.st_size
        raise
    return None, st.st_size


def resolve_paths(paths: list[str | Path], spec: IncidentSpec | None) -> list[tuple[Path, Path]]:
    """The usable files only (for callers that keep no record of skipped ones)."""
    return collect_inputs(paths, spec).files
