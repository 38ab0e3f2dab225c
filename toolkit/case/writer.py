"""One writer per case, and a case that is never half-written.

A writer takes an exclusive lock next to the case folder (`.<name>.kvir-lock`, flock: released by the
kernel when the process dies, even by SIGKILL), builds the new state in a staging folder beside it
(`.<name>.kvir-new-<pid>`: a fresh one for triage, a copy of the case for the stages that extend it) and
swaps it in only when the work is complete, with one atomic rename (renameat2 RENAME_EXCHANGE where the
file system has it). A run killed at any point leaves the previous case whole; a second writer is refused
at once, naming the holder's pid and start time. Readers need no lock: they see the old case or the new.
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

CASE_MARKERS = ("case.duckdb", "manifest.json")


def lock_path(case: Path) -> Path:
    return case.parent / f".{case.name}.kvir-lock"


def is_case(path: Path) -> bool:
    return any((path / m).exists() for m in CASE_MARKERS)


@dataclass
class Writer:
    """A held lock and the staging folder the new state of `case` is built in."""

    case: Path
    staging: Path
    _fd: int

    @classmethod
    def begin(cls, case: Path, *, fresh: bool) -> "Writer":
        """Lock `case` and prepare its staging folder: empty when `fresh`, else a copy of the case."""
        case = Path(case).absolute()
        if case.exists() and not case.is_dir():
            raise KvirError("exists and is not a folder", path=str(case))
        if fresh and case.is_dir() and any(case.iterdir()) and not is_case(case):
            raise KvirError("is a folder that is not a kvir case and not empty: refusing to write into it",
                            path=str(case), hint="give a new or empty folder, or an existing case")
        case.parent.mkdir(parents=True, exist_ok=True)
        fd = _lock(case)
        try:
            _recover(case)
            staging = case.parent / f".{case.name}.kvir-new-{os.getpid()}"
            if fresh or not case.exists():
                staging.mkdir()
            else:
                shutil.copytree(case, staging, symlinks=True)
            return cls(case, staging, fd)
        except BaseException:
            _unlock(fd)
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
