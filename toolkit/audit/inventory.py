"""inventory.toml: which node wrote which log file, and what the logs cannot say about it.

    [defaults]                          # optional; every key below except name and logs
    source_tz = "America/Chicago"

    [[node]]                            # or [[nodes]], or [nodes.<name>] tables
    name = "glm53-prefill-0"
    role = "prefill"                    # prefill | decode | mixed
    deployment = "glm53-pd"             # PD deployment (prefill/decode pools are compared within one)
    engine = "sglang"                   # sglang | vllm
    version = "0.5.19"                  # used when the log prints no version
    source_tz = "America/Chicago"       # zone of the log's naive host-local times
    year = 2026                         # vLLM prints times without a year
    logs = ["engine/glm53-prefill-0/*.log"]   # globs relative to this file (alias: files)
    advertised_context = 1048576        # the context clients are told (default: the deployment's largest)
    block_size = 16                     # vLLM KV block size, when its log does not print it
    [node.env]                          # environment the log does not print
    SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE = "1"

A file belongs to the node whose `logs` globs match it; without a glob match, to the node named like the
file's folder or file stem. A file no node claims still takes [defaults] source_tz and year. Unknown keys are refused (with the key's name) so a typo cannot silently
drop a setting.
"""
from __future__ import annotations

import glob
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.core.errors import InputError
from kvir.core.timezones import parse_source_tz

ROLES = ("prefill", "decode", "mixed")
ENGINES = ("sglang", "vllm")
_NODE_KEYS = {"name", "role", "deployment", "engine", "version", "source_tz", "year", "logs", "files", "env",
              "advertised_context", "block_size", "notes"}
_DEFAULT_KEYS = _NODE_KEYS - {"name", "logs", "files"}
ENV_KEYS = ("SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE", "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES")


@dataclass(frozen=True)
class InventoryNode:
    name: str
    role: str | None = None
    deployment: str | None = None
    engine: str | None = None
    version: str | None = None
    source_tz: str | None = None
    year: int | None = None
    logs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    advertised_context: int | None = None
    block_size: int | None = None


@dataclass(frozen=True)
class Match:
    node: InventoryNode
    how: str                  # "logs glob" | "folder name" | "file name"


@dataclass(frozen=True)
class Inventory:
    path: Path
    nodes: tuple[InventoryNode, ...]
    defaults: InventoryNode = field(default_factory=lambda: InventoryNode(name="[defaults]"))

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def match(self, file: Path) -> Match | None:
        """The node a log file belongs to (see module docstring). Ambiguity is an error."""
        r = file.resolve()
        hits = [n for n in self.nodes if any(r in _glob(self.base_dir, g) for g in n.logs)]
        if len(hits) > 1:
            raise InputError(f"listed under several inventory nodes: {', '.join(n.name for n in hits)}",
                             path=str(file), hint=f"fix the logs globs in {self.path}")
        if hits:
            return Match(hits[0], "logs glob")
        stem = file.name.split(".")[0]
        for how, key in (("folder name", file.parent.name), ("file name", stem)):
            named = [n for n in self.nodes if n.name == key]
            if named:
                return Match(named[0], how)
        return None


def _glob(base: Path, pattern: str) -> set[Path]:
    p = pattern if Path(pattern).is_absolute() else str(base / pattern)
    hits = {Path(h).resolve() for h in glob.glob(p, recursive=True)}
    if Path(p).is_dir():
        hits |= {f.resolve() for f in Path(p).rglob("*") if f.is_file()}
    return hits


def load_inventory(path: str | Path) -> Inventory:
    p = Path(path)
    if not p.is_file():
        raise InputError("inventory file not found" if not p.exists() else "inventory is not a file", path=str(p))
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not valid TOML: {e}", path=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=str(p)) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=str(p)) from None
    return parse_inventory(data, p)


def parse_inventory(data: dict[str, Any], path: Path) -> Inventory:
    where = str(path)

    def err(key: str, msg: str) -> InputError:
        return InputError(msg, path=where, key=key)

    for k in data:
        if k not in ("defaults", "node", "nodes"):
            raise err(k, "unknown key; expected [defaults], [[node]] / [[nodes]] or [nodes.<name>]")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise err("defaults", "expected a table")
    for k in defaults:
        if k not in _DEFAULT_KEYS:
            raise err(f"defaults.{k}", f"unknown key; expected one of {', '.join(sorted(_DEFAULT_KEYS))}")
    entries: list[tuple[str, dict[str, Any]]] = []
    for key in ("node", "nodes"):
        v = data.get(key)
        if v is None:
            continue
        if isinstance(v, list):
            entries += [(f"{key}[{i}]", e) for i, e in enumerate(v)]
        elif isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()):
            entries += [(f"{key}.{name}", {"name": name, **e}) for name, e in v.items()]
        else:
            raise err(key, "expected [[node]] entries or [nodes.<name>] tables")
    if not entries:
        raise err("node", "no nodes listed (expected [[node]] entries)")
    nodes = []
    seen: set[str] = set()
    for label, e in entries:
        if not isinstance(e, dict):
            raise err(label, "expected a table")
        merged = {**{k: v for k, v in defaults.items() if k != "env"}, **e}
        env = {**_env(defaults.get("env", {}), "defaults.env", err), **_env(e.get("env", {}), f"{label}.env", err)}
        n = _node(merged, env, label, err)
        if n.name in seen:
            raise err(label + ".name", f"node {n.name!r} is listed twice")
        seen.add(n.name)
        nodes.append(n)
    dflt = _node({"name": "[defaults]", **{k: v for k, v in defaults.items() if k != "env"}},
                 _env(defaults.get("env", {}), "defaults.env", err), "defaults", err)
    return Inventory(path, tuple(nodes), dflt)


def _env(v: Any, label: str, err) -> dict[str, str]:
    if not isinstance(v, dict):
        raise err(label, "expected a table of environment variables")
    out = {}
    for k, x in v.items():
        if isinstance(x, bool):
            x = "1" if x else "0"
        if not isinstance(x, (str, int)):
            raise err(f"{label}.{k}", "expected a string or an integer")
        out[str(k)] = str(x)
    return out


def _node(e: dict[str, Any], env: dict[str, str], label: str, err) -> InventoryNode:
    for k in e:
        if k not in _NODE_KEYS:
            raise err(f"{label}.{k}", f"unknown key; expected one of {', '.join(sorted(_NODE_KEYS))}")
    name = e.get("name")
    if not isinstance(name, str) or not name.strip():
        raise err(f"{label}.name", "expected a non-empty node name")

    def opt_str(k: str) -> str | None:
        v = e.get(k)
        if v is None:
            return None
        if not isinstance(v, str) or not v.strip():
            raise err(f"{label}.{k}", "expected a non-empty string")
        return v.strip()

    def opt_int(k: str, lo: int, hi: int) -> int | None:
        v = e.get(k)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise err(f"{label}.{k}", f"expected an integer between {lo} and {hi}")
        return v

    role = opt_str("role")
    if role is not None and role not in ROLES:
        raise err(f"{label}.role", f"expected one of {', '.join(ROLES)}")
    engine = opt_str("engine")
    if engine is not None and engine not in ENGINES:
        raise err(f"{label}.engine", f"expected one of {', '.join(ENGINES)}")
    tz = opt_str("source_tz")
    if tz is not None:
        try:
            parse_source_tz(tz)
        except ValueError as ex:
            raise err(f"{label}.source_tz", str(ex)) from None
    logs = e.get("logs", e.get("files", []))
    if "logs" in e and "files" in e:
        raise err(f"{label}.files", "give either logs or files, not both")
    if isinstance(logs, str):
        logs = [logs]
    if not isinstance(logs, list) or not all(isinstance(x, str) and x.strip() for x in logs):
        raise err(f"{label}.logs", "expected a list of paths or globs")
    version = e.get("version")
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        raise err(f"{label}.version", 'write the version as a string, e.g. "0.5.19"')
    return InventoryNode(
        name=name.strip(), role=role, deployment=opt_str("deployment"), engine=engine, version=opt_str("version"),
        source_tz=tz, year=opt_int("year", 1990, 2100), logs=tuple(logs), env=env,
        advertised_context=opt_int("advertised_context", 1, 1 << 40), block_size=opt_int("block_size", 1, 1 << 20))
