"""SGLang's GET /server_info (or the deprecated /get_server_info) JSON, given to `kvir audit` as a file: the
running server's version and settings.

SGLang never prints its version at start-up; /server_info is where it says it ("version": __version__).
Its body is the settings (≤0.5.18 dataclasses.asdict(server_args), 0.5.19-0.5.21 resolved_dict(),
0.5.22+ build_server_info(...), redacted) merged with the scheduler's info (max_total_num_tokens,
max_req_input_len) and `internal_states` (one dict per DP rank). The probe saves it; operators curl it.
One file is one JSON object (a file of several objects is not one of these).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_BYTES = 8 << 20
COLUMNS = ["file_id", "version", "pool_tokens", "context_len", "page_size", "disaggregation_mode", "served_model",
           "kv_checksum", "kv_canary", "has_kv_canary", "has_kv_checksum", "tp_size", "dp_size", "transfer_backend",
           "allow_auto_truncate", "max_total_tokens", "max_req_input_len"]
_SIGNS = ("disaggregation_mode", "context_length", "model_path", "max_total_num_tokens", "served_model_name")


def read_server_info(path: Path) -> dict[str, Any] | None:
    """The object of a /server_info JSON file, or None when the file is not one (too big, not JSON, not an
    object with a version and settings)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("server_info"), dict):   # a probe's saved discovery
        doc = doc["server_info"]
    if not isinstance(doc, dict) or not isinstance(doc.get("version"), str):
        return None
    return doc if any(k in doc for k in _SIGNS) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _first(doc: dict[str, Any], key: str) -> Any:
    """doc[key], else the smallest value of the DP ranks' internal_states (the binding pool)."""
    if key in doc:
        return doc[key]
    states = [s.get(key) for s in doc.get("internal_states") or [] if isinstance(s, dict)]
    ints = [v for v in states if _int(v) is not None]
    return min(ints) if ints else None


def server_info_row(file_id: int, doc: dict[str, Any]) -> tuple:
    """One audit_server_info row (COLUMNS)."""
    mode = doc.get("disaggregation_mode")
    canary = doc.get("kv_canary")
    checksum = doc.get("disaggregation_enable_kv_checksum")
    return (file_id, doc["version"], _int(_first(doc, "max_total_num_tokens")), _int(doc.get("context_length")),
            _int(doc.get("page_size")), mode if isinstance(mode, str) else None,
            doc.get("served_model_name") if isinstance(doc.get("served_model_name"), str) else None,
            checksum if isinstance(checksum, bool) else None, canary.lower() if isinstance(canary, str) else None,
            "kv_canary" in doc, "disaggregation_enable_kv_checksum" in doc, _int(doc.get("tp_size")),
            _int(doc.get("dp_size")),
            doc.get("disaggregation_transfer_backend") if isinstance(doc.get("disaggregation_transfer_backend"), str) else None,
            doc.get("allow_auto_truncate") if isinstance(doc.get("allow_auto_truncate"), bool) else None,
            _int(doc.get("max_total_tokens")), _int(_first(doc, "max_req_input_len")))
