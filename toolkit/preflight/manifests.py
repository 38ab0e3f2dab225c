"""Launches in YAML (Kubernetes manifests, Helm values, docker compose files) and in vLLM's saved /v1/models and
/version answers (kvir.preflight.sources.Launch, each part with its file and line).

YAML is read with ruamel.yaml's round-trip loader, which keeps every node's line. A launch is any mapping that
holds a container's command line (`command` / `args` / `extraArgs`: a list or a string), the way Kubernetes
containers (Deployments, StatefulSets, Pods, Jobs, LeaderWorkerSets: wherever `containers:` sits), Helm values
that embed them, and compose services all write it; its environment is `env` (a list of name/value, or a
mapping), `environment` (compose: a list of K=V or a mapping) or `extraEnv`; its image (`image`: a string or
repository/tag) names the engine and its release when the command does not.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Iterator

from kvir.core.errors import InputError
from kvir.preflight.sources import _TAG, ENGINE_FLAGS, ENGINE_MARKERS, Launch, Origin, _text

COMMAND_KEYS = ("command", "entrypoint", "args", "extraArgs")
ENV_KEYS = ("env", "environment", "extraEnv")
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _line(node: Any, key: Any = None) -> int:
    """1-based line of a ruamel node (or of one key's value in a mapping)."""
    lc = getattr(node, "lc", None)
    if lc is None:
        return 0
    try:
        if key is None:
            return lc.line + 1
        return (lc.value(key)[0] if isinstance(key, str) else lc.item(key)[0]) + 1
    except (KeyError, IndexError, TypeError, AttributeError):
        return lc.line + 1


def _words(value: Any) -> list[str] | None:
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError:
            return value.split()
    if isinstance(value, list) and all(isinstance(x, (str, int, float, bool)) for x in value):
        return [str(x) for x in value]
    return None


def _looks_like_launch(words: list[str]) -> bool:
    text = " ".join(words)
    return any(rx.search(text) for rx in ENGINE_MARKERS.values()) or any(
        w.split("=")[0] in flags for w in words for flags in ENGINE_FLAGS.values())


def _env(m: dict, path: str) -> list[tuple[str, str, Origin]]:
    out = []
    for key in ENV_KEYS:
        v = m.get(key)
        if isinstance(v, list):
            for i, item in enumerate(v):
                if isinstance(item, dict) and "name" in item:          # Kubernetes: {name, value}
                    val = item.get("value")
                    if val is not None:                                  # valueFrom: not a value CI can read
                        out.append((str(item["name"]), str(val), Origin(path, _line(v, i))))
                elif isinstance(item, str) and "=" in item:               # compose: K=V
                    k, _, val = item.partition("=")
                    out.append((k.strip(), val.strip(), Origin(path, _line(v, i))))
        elif isinstance(v, dict):
            out += [(str(k), "" if val is None else str(val), Origin(path, _line(v, k))) for k, val in v.items()]
    return out


def _image(m: dict) -> str | None:
    img = m.get("image")
    if isinstance(img, str):
        return img
    if isinstance(img, dict) and isinstance(img.get("repository"), str):
        return f"{img['repository']}:{img.get('tag', '')}"
    return None


def _launch(m: dict, name: str, path: str, inherited: tuple[str, int] | None = None) -> Launch | None:
    argv: list[str] = []
    first = 0
    for key in COMMAND_KEYS:
        words = _words(m.get(key))
        if words:
            argv += words
            first = first or _line(m, key)
    if not argv or not _looks_like_launch(argv):
        return None
    launch = Launch(name, Origin(path, first), argv, _env(m, path))
    img, img_line = (_image(m), _line(m, "image")) if _image(m) else (inherited or (None, 0))
    launch.infer_engine(img)
    if img and launch.engine and (t := _TAG.search(img.rsplit("/", 1)[-1])):
        launch.versions.append((launch.engine, t.group(1), Origin(path, img_line)))
    if launch.engine and not ENGINE_MARKERS[launch.engine].search(" ".join(argv)):
        from kvir.preflight.sources import LAUNCHERS

        launch.argv = LAUNCHERS[launch.engine].split() + argv      # the image's entrypoint, args given
    return launch


def _walk(node: Any, owner: str, path: str, image: tuple[str, int] | None = None) -> Iterator[Launch]:
    """Every launch under `node`; `image`: the nearest enclosing mapping's image (Helm values keep the image
    beside, not inside, the server's arguments)."""
    if isinstance(node, dict):
        if _image(node):
            image = (_image(node), _line(node, "image"))
        meta = node.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            owner = meta["name"]
        if isinstance(node.get("services"), dict):                     # docker compose
            for svc, body in node["services"].items():
                if isinstance(body, dict):
                    yield from _walk(body, str(svc), path, image)
            return
        own = node.get("name") if isinstance(node.get("name"), str) else None
        launch = _launch(node, _SAFE.sub("-", own if own and own != owner and owner else (owner or own or "node")), path,
                         image)
        if launch is not None:
            if own and owner and own != owner:
                launch.name = _SAFE.sub("-", f"{owner}-{own}")
            yield launch
            return
        for k, v in node.items():
            yield from _walk(v, owner, path, image)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, owner, path, image)


def from_yaml(path: Path) -> list[Launch]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    text = _text(path)
    try:
        docs = list(YAML(typ="rt").load_all(text))
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(f"not valid YAML: {getattr(e, 'problem', None) or e}", path=str(path),
                         line=mark.line + 1 if mark is not None else None) from None
    launches = [x for d in docs if d is not None for x in _walk(d, "", str(path))]
    if not launches:
        raise InputError("no SGLang or vLLM launch in it (no container command/args, compose service command "
                         "or Helm args that start an engine)", path=str(path))
    return launches


def read_vllm_json(path: Path) -> dict[str, Any] | None:
    """vLLM's /version ({"version": ...}) or /v1/models ({"object": "list", "data": [...]}) answer, else None."""
    try:
        doc = json.loads(_text(path))
    except ValueError:
        return None
    if isinstance(doc, dict) and set(doc) == {"version"} and isinstance(doc["version"], str):
        return {"version": doc["version"]}
    if isinstance(doc, dict) and doc.get("object") == "list" and isinstance(doc.get("data"), list):
        models = [m for m in doc["data"] if isinstance(m, dict) and m.get("object") == "model"]
        if models and all(m.get("owned_by") == "vllm" for m in models):
            return {"models": models}
    return None


def from_vllm_json(docs: list[tuple[Path, dict[str, Any]]], name: str) -> Launch:
    """One vLLM server from its /v1/models and /version answers (files of one folder)."""
    version = next(((p, d["version"]) for p, d in docs if "version" in d), None)
    models = next(((p, d["models"]) for p, d in docs if "models" in d), None)
    if models is None:
        raise InputError("a vLLM /version answer without the server's /v1/models beside it", path=str(version[0]))
    path, ms = models
    m = ms[0]
    argv = ["vllm", "serve", str(m.get("root") or m["id"]), "--served-model-name", str(m["id"])]
    if isinstance(m.get("max_model_len"), int):
        argv += ["--max-model-len", str(m["max_model_len"])]
    launch = Launch(name, Origin(str(path), 1), argv, engine="vllm")
    if version is not None:
        launch.versions.append(("vllm", version[1], Origin(str(version[0]), 1)))
    return launch
