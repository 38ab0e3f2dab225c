"""Values as JSON can hold them: the one conversion for manifests, compiled SQL records and case tables."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def jsonable(v: Any) -> Any:
    """Times as ISO-8601, paths as strings, tuples and sets as lists, mappings recursively; the rest as is."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [jsonable(x) for x in v]
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, Path):
        return str(v)
    return v


def dumps(v: Any, **kw: Any) -> str:
    """json.dumps of jsonable(v); anything still unknown is written with str()."""
    return json.dumps(jsonable(v), default=str, **kw)
