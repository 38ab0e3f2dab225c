"""Errors a responder can act on: each names the file, line or key it is about."""
from __future__ import annotations


class KvirError(Exception):
    """A user-facing error. The CLI prints it without a traceback and exits with status 2."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 key: str | None = None, hint: str | None = None):
        self.message, self.path, self.line, self.key, self.hint = message, path, line, key, hint
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        key = f"[{self.key}] " if self.key else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}{key}{self.message}{hint}"


class SpecError(KvirError):
    """incident.toml is missing a key or holds a value of the wrong kind."""


class InputError(KvirError):
    """An input path, format or option cannot be used."""


class TooManyBadLines(KvirError):
    """More quarantined records than --max-bad-lines allows."""


def disk_problem(message: str) -> str | None:
    """What is wrong with the disk, when an error's message (DuckDB's own IOException, TransactionException,
    ... carry no errno) says a write failed for want of space, a writable file system or permission."""
    for needle, what in (("No space left", "no space left on the device"), ("Read-only file system", "read-only file system"),
                         ("Permission denied", "permission denied"), ("Disk quota", "disk quota exceeded")):
        if needle in message:
            return what
    return None
