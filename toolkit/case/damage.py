"""A damaged case: what DuckDB says of a database file it cannot read, and a manifest that is not JSON.
Each is one line naming the file (kvir.cli.present.guarded prints it), never a traceback."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvir.case.writer import public_path
from kvir.core.errors import KvirError

MANIFEST = "manifest.json"


def read_manifest(home: Path) -> dict[str, Any] | None:
    """The case's manifest.json (None when it has none); a damaged one is an error naming it."""
    path = home / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise KvirError(f"is damaged: not valid JSON ({e})", path=str(path),
                        hint="restore it from a copy, or triage again into a new folder") from None
    if not isinstance(manifest, dict):
        raise KvirError("is damaged: not a JSON object", path=str(path),
                        hint="restore it from a copy, or triage again into a new folder")
    return manifest


# What DuckDB says of a database file it cannot read (a lock held by another process is not damage)
_DAMAGE = ("not a valid DuckDB database", "Corrupt database", "checksum", "Could not read enough bytes",
           "attempted to read", "Serialization Error", "INTERNAL Error")


def is_damage(e: BaseException) -> bool:
    return any(k in str(e) for k in _DAMAGE)


def damaged(db: Path, e: BaseException) -> KvirError:
    """The error for a case database DuckDB cannot read: one line naming the file."""
    first = public_path(" ".join(str(e).split()))[:240]
    return KvirError(f"is damaged: DuckDB cannot read it ({first})", path=str(db),
                     hint="restore the case from a copy, or triage again into a new folder")
