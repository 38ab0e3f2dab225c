"""Shared helpers for the foundation tests: write a minimal incident spec and hand-made logs, run triage."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvir.sim import spec as reference

MINIMAL_SPEC = reference.HEADER          # the reference incident's minimal spec, written once (kvir.sim.spec)


def spec_text(rule: str = "public", extra: str = "", engine: str | None = None) -> str:
    """The minimal reference spec; `engine` declares [trigger] engine (a gateway log names none)."""
    text = MINIMAL_SPEC.replace("{rule}", rule)
    if engine:
        text = text.replace(f'rule = "{rule}"', f'rule = "{rule}"\nengine = "{engine}"', 1)
    return text + extra


@pytest.fixture
def spec(tmp_path: Path):
    """spec(rule="public", extra="", engine=None) -> path of an incident.toml in tmp_path."""
    def make(rule: str = "public", extra: str = "", engine: str | None = None) -> Path:
        p = tmp_path / "incident.toml"
        p.write_text(spec_text(rule, extra, engine))
        return p
    return make


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def sglang_finished(ts_local: str, rid: str, prompt, *, latency: float = 1.0, ftype: str | None = "length",
                    status: int | None = None, room: int | None = None, completion: int = 10) -> str:
    """One `request.finished` line in SGLang's JSON request-log shape (json.dumps spacing)."""
    fr = None if ftype is None else {"type": ftype}
    if fr is not None and ftype == "abort":
        fr.update({"message": "x", "status_code": status, "err_type": None})
    elif fr is not None:
        fr["length"] = completion
    obj = {"rid": rid, "stream": True}
    if room is not None:
        obj.update({"bootstrap_host": "10.0.0.1", "bootstrap_port": 8998, "bootstrap_room": room})
    meta = {"id": rid, "finish_reason": fr, "prompt_tokens": prompt, "completion_tokens": completion,
            "cached_tokens": 0, "e2e_latency": latency}
    return json.dumps({"timestamp": ts_local, "event": "request.finished", "rid": rid, "obj": obj,
                       "out": {"meta_info": meta}})


def sglang_received(ts_local: str, rid: str) -> str:
    return json.dumps({"timestamp": ts_local, "event": "request.received", "rid": rid, "obj": {"rid": rid}})


def ids(df, column: str = "request_id") -> set[str]:
    return set(df[column].tolist())
