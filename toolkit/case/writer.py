"""One writer per case, and a case that is never half-written.

A writer takes an exclusive lock next to the case folder (`.<name>.kvir-lock`, flock: released by the
kernel when the process dies, even by SIGKILL), builds the new state in a staging folder beside it
(`.<name>.kvir-new-<pid>`: a fresh one for triage, a copy of the case for the stages that extend it) and
swaps it in only when the work is complete, with one atomic rename (renameat2 RENAME_EXCHANGE where the
file system has it). A run killed at any point leaves the previous case whole; a second writer is refused
at once, naming the holder's pid and start time. Readers need no lock: they see the old case or the new.

A case is a folder kvir made, proven by its own marker (`kvir-case.json`, naming the case format), never by
a common file name: a folder that holds a `manifest.json` of a web app is not a case, and is not replaced.
Cases made before the marker existed are recognised by what only kvir writes together, a DuckDB database
`case.duckdb` (its file magic) beside a `manifest.json` recording kvir's and DuckDB's versions; the next
write adds the marker. A path that is a symbolic link is resolved first: the lock, the staging folder
and the swap are the real folder's (the link keeps pointing at it).
"""
from __future__ import annotations

import ctypes
import datetime as dt
import errno
import fcntl
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kvir.core.errors import KvirError

MARKER = "kvir-case.json"
CASE_FORMAT = 1
_DUCKDB_MAGIC = (8, b"DUCK")      # offset and bytes of DuckDB's file magic


def lock_path(case: Path) -> Path:
    return case.parent / f".{case.name}.kvir-lock"


def is_case(path: str | Path) -> bool:
    """Did kvir make this folder (its marker, or a case from before markers)?"""
    return not_a_case(Path(path)) is None


def not_a_case(path: Path) -> str | None:
    """Why `path` is not a kvir case (None: it is one)."""
    path = Path(path)
    marker = path / MARKER
    if marker.is_file():
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            info = None
        if isinstance(info, dict) and info.get("kvir_case") == CASE_FORMAT:
            return None
        return f"{MARKER} is not kvir's case marker"
    if not path.is_dir():
        return "no such folder" if not path.exists() else "not a folder"
    return _legacy_problem(path)


def _legacy_problem(path: Path) -> str | None:
    """Why `path` is not a case written before markers (case.duckdb with DuckDB's magic beside a
    manifest.json kvir wrote); None when it is one. A damaged file of such a case is named."""
    db, manifest = path / "case.duckdb", path / "manifest.json"
    if not (db.is_file() and manifest.is_file()):
        return f"no {MARKER} marker: not a folder kvir made"
    at, magic = _DUCKDB_MAGIC
    try:
        with open(db, "rb") as f:
            head = f.read(16)
        info = json.loads(manifest.read_text(encoding="utf-8"))
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    except (ValueError, UnicodeDecodeError) as e:
        return f"{manifest} is damaged: not valid JSON ({e})"
    if not (isinstance(info, dict) and {"kvir_version", "duckdb_version"} <= info.keys()):
        return f"no {MARKER} marker, and its manifest.json is not one kvir wrote"
    if head[at:at + len(magic)] != magic:
        return f"{db} is damaged: not a DuckDB database file"
    return None


def write_marker(folder: Path) -> None:
    from kvir import __version__

    (folder / MARKER).write_text(json.dumps({"kvir_case": CASE_FORMAT, "written_by": f"kvir {__version__}"}) + "\n")


# Every writer alive in this process, so that Ctrl-C can drop their staging folders (abandon_all), and every
# staging folder this process made, so that a message about one names its case instead (public_path).
_ACTIVE: set["Writer"] = set()
_STAGED: dict[str, str] = {}


def public_path(text: str) -> str:
    """`text` with each staging folder's path replaced by its case's."""
    for staged, case in _STAGED.items():
        text = text.replace(staged, case)
    return text


def abandon_all() -> list[str]:
    """Drop the staged work of every writer of this process (on Ctrl-C, just before exiting): each case stays as
    it was, and is said so (or that it was not written). A swap cut between its two renames is undone."""
    cases = []
    for w in list(_ACTIVE):
        shutil.rmtree(w.staging, ignore_errors=True)
        olds = sorted(w.case.parent.glob(f".{w.case.name}.kvir-old-*"))
        if olds and not w.case.exists():
            os.rename(olds[0], w.case)
        cases.append(f"{w.case} left as it was" if w.case.exists() else f"{w.case} not written")
        _ACTIVE.discard(w)
    return cases


@dataclass
class Writer:
    """A held lock and the staging folder the new state of `case` is built in."""

    case: Path
    staging: Path
    _fd: int

    def __hash__(self) -> int:
        return id(self)

    @classmethod
    def begin(cls, case: Path, *, fresh: bool) -> "Writer":
        """Lock `case` and prepare its staging folder: empty when `fresh`, else a copy of the case."""
        given = Path(case)
        case = Path(os.path.realpath(given))      # a link to a case: the real folder is locked and swapped
        if case.exists() and not case.is_dir():
            raise KvirError("exists and is not a folder", path=str(given))
        if case.is_dir() and any(case.iterdir()) and (why := not_a_case(case)):
            raise KvirError(f"is a folder that is not a kvir case and not empty ({why}): refusing to write into it",
                            path=str(given), hint="give a new or empty folder, or an existing case")
        case.parent.mkdir(parents=True, exist_ok=True)
        fd = _lock(case)
        w = cls(case, case.parent / f".{case.name}.kvir-new-{os.getpid()}", fd)
        _ACTIVE.add(w)              # before the staging folder exists: Ctrl-C while it is copied drops it too
        _STAGED[str(w.staging)] = str(given)
        try:
            _recover(case)
            if fresh or not case.exists():
                w.staging.mkdir()
            else:
                shutil.copytree(case, w.staging, symlinks=True)
            write_marker(w.staging)
            return w
        except BaseException:
            w.release()
            raise

    def commit(self) -> None:
        """Swap the staging folder in as the case; the old state is removed afterwards."""
        spill = self.staging / "tmp"
        if spill.is_dir():
            shutil.rmtree(spill, ignore_errors=True)      # DuckDB's spill files: never part of a case
        if self.case.exists():
            old = self.case.parent / f".{self.case.name}.kvir-old-{os.getpid()}"
            if _exchange(self.staging, self.case):
                shutil.rmtree(self.staging, ignore_errors=True)   # holds the old state now
            else:                                          # no RENAME_EXCHANGE here: two renames, recoverable
                os.rename(self.case, old)
                os.rename(self.staging, self.case)
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(self.staging, self.case)
        self.release()

    def abort(self) -> None:
        """Drop the staging folder: the case stays as it was."""
        shutil.rmtree(self.staging, ignore_errors=True)
        self.release()

    def release(self) -> None:
        _ACTIVE.discard(self)
        if self._fd >= 0:
            _unlock(self._fd)
            self._fd = -1


def _lock(case: Path) -> int:
    path = lock_path(case)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise KvirError(f"is being written by another kvir ({holder}); wait for it to finish", path=str(case)) from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"pid": os.getpid(), "started": dt.datetime.now(dt.timezone.utc)
                             .isoformat(timespec="seconds")}).encode())
    return fd


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info.get('pid', '?')}, started {info.get('started', '?')}"
    except (OSError, ValueError):
        return "holder unknown"


def _unlock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _recover(case: Path) -> None:
    """With the lock held no other writer is alive: finish or undo what a killed one left behind."""
    olds = sorted(case.parent.glob(f".{case.name}.kvir-old-*"))
    if olds and not case.exists():            # killed between the two renames of a fallback swap
        os.rename(olds[0], case)
    for left in [*case.parent.glob(f".{case.name}.kvir-new-*"), *case.parent.glob(f".{case.name}.kvir-old-*")]:
        shutil.rmtree(left, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))
