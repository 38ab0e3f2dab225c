"""Files: their fingerprints and the node a log file belongs to. One copy of each, used by ingest and audit."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

_BLOCK = 1 << 22


def sha256_file(path: str | Path) -> str:
    """SHA-256 of every byte of a file, read in blocks (a log can be larger than memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_of_digests(digests: list[str]) -> str:
    """One fingerprint for several files: the digest itself for one, else SHA-256 of the sorted list."""
    digests = sorted(digests)
    return digests[0] if len(digests) == 1 else sha256_text("\n".join(digests))


# Log file names that say nothing about the node: the folder names it (engine/decode-0/server.log).
GENERIC_STEMS = frozenset({"server", "requests", "request", "stdout", "stderr", "output", "log", "logs", "app",
                           "engine", "access", "current", "latest", "api_server", "vllm", "sglang", "console",
                           "startup", "start-up", "boot", "container", "server_info", "get_server_info"})
_SUFFIX = re.compile(r"\.(?:gz|zst|zstd|log|txt|out|err|jsonl|ndjson|json|csv|parquet|\d+)$", re.IGNORECASE)


def node_from_path(path: str | Path) -> tuple[str, str]:
    """(node, how) for a log file: its name without extensions and rotation numbers (prefill-3.log.1.gz ->
    prefill-3), or its folder's name when the file name is generic (engine/decode-0/server.log -> decode-0)
    or an hourly export (sglang-request-metrics-YYYYMMDD_HH.log). `how` says which ("file name" / "folder name")."""
    p = Path(path)
    stem = p.name
    while (shorter := _SUFFIX.sub("", stem)) != stem and shorter:
        stem = shorter
    generic = stem.lower() in GENERIC_STEMS or stem.startswith("sglang-request-metrics-")
    if generic and p.parent.name:
        return p.parent.name, "folder name"
    return stem, "file name"


def role_from_name(name: str) -> str | None:
    """prefill / decode when a node's name says so, else None."""
    n = name.lower()
    return "prefill" if "prefill" in n else "decode" if "decode" in n else None
