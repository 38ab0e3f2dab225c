"""kvir preflight's run: the deployment's launches (kvir.preflight.sources, .manifests) written as the configuration
excerpts the audit already reads (a version line per release, one line per environment variable, the launch
command on one line), start-up logs and /get_server_info snapshots as they are; then the audit's own parsing
and EVERY registered mechanism's rules (kvir.audit.core.run_audit(every_mechanism=True)), the shared preflight
rule table (kvir.preflight.transfer_rules), and each finding's evidence mapped back to the line of the file
that set it.
"""
from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from kvir.core.errors import InputError
from kvir.core.files import sha256_file
from kvir.preflight.manifests import from_vllm_json, from_yaml, read_vllm_json
from kvir.preflight.result import PreflightResult
from kvir.preflight.sources import (Launch, Origin, Requirements, _text, from_argv, from_command_file, is_command_file,
                                    read_requirements)

_PIN_LINE = re.compile(r"^\s*[A-Za-z0-9_.\[\]-]+\s*(==|>=|<=|~=|!=)")
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _is_requirements(path: Path, text: str) -> bool:
    lines = [x for x in text.splitlines() if x.strip() and not x.lstrip().startswith(("#", "-"))]
    return bool(lines) and all(_PIN_LINE.match(x) for x in lines)


def classify(paths: list[str | Path]) -> tuple[list[Launch], list[Path], list[Requirements], list[Path]]:
    """(launches, files the audit reads as they are, requirements files, every input file)."""
    from kvir.audit.server_info import read_server_info
    from kvir.ingest.inputs import collect_inputs

    inputs = collect_inputs(list(paths), None)
    if inputs.skipped:
        s = inputs.skipped[0]
        raise InputError(f"cannot be read: {s.reason}", path=str(s.path))
    launches: list[Launch] = []
    logs: list[Path] = []
    reqs: list[Requirements] = []
    vllm_json: dict[Path, list[tuple[Path, dict[str, Any]]]] = defaultdict(list)
    files = sorted(f for f, _ in inputs.files)
    for f in files:
        if f.suffix.lower() in (".yaml", ".yml"):
            launches += from_yaml(f)
            continue
        text = _text(f)
        if f.suffix.lower() == ".json" or text.lstrip().startswith("{"):
            doc = read_vllm_json(f)
            if doc is not None:
                vllm_json[f.parent].append((f, doc))
            elif read_server_info(f) is not None:
                logs.append(f)
            else:
                raise InputError("JSON that is neither SGLang's /get_server_info nor vLLM's /v1/models or /version",
                                 path=str(f))
        elif _is_requirements(f, text):
            reqs.append(read_requirements(f))
        elif is_command_file(text):
            launches.append(from_command_file(f, _SAFE.sub("-", f.name.split(".")[0])))
        else:
            logs.append(f)
    for folder, docs in sorted(vllm_json.items()):
        launches.append(from_vllm_json(sorted(docs), _SAFE.sub("-", folder.name) or "vllm-server"))
    return launches, logs, reqs, files


def _unique(launches: list[Launch], taken: set[str]) -> None:
    for launch in launches:
        base, n = launch.name or "node", 1
        while launch.name in taken or not launch.name:
            n += 1
            launch.name = f"{base}-{n}"
        taken.add(launch.name)


def write_excerpt(launch: Launch, reqs: list[Requirements], folder: Path) -> tuple[Path, list[Origin]]:
    """The launch as a configuration excerpt the audit reads; line i of it came from origins[i - 1]."""
    lines: list[tuple[str, Origin]] = []
    have = {p.lower().removesuffix("-cpu") for p, _, _ in launch.versions}
    for pkg, ver, origin in launch.versions:
        lines.append((f"{pkg}=={ver}", origin))
    for r in reqs:                      # what the image installs, where the launch itself names no release
        for pkg, (ver, origin) in r.pins.items():
            name = pkg.removesuffix("-cpu")
            if name not in have and (name == launch.engine or name == "lmcache"):
                lines.append((f"{pkg}=={ver}", origin))
                have.add(name)
    for k, v, origin in launch.env:
        if re.fullmatch(r"[A-Z_][A-Z0-9_]*", k):
            lines.append((f"{k}={v}", origin))
    argv = launch.argv + _defaults(launch)
    lines.append((" ".join(_quote(t) for t in argv), launch.origin))
    path = folder / f"{launch.name}.log"
    path.write_text("\n".join(t.replace("\n", " ") for t, _ in lines) + "\n", encoding="utf-8")
    return path, [o for _, o in lines]


def _defaults(launch: Launch) -> list[str]:
    """A launch command is the engine's whole configuration: the SGLang settings the audit reads that it leaves
    out are its build's defaults (kvir.rules.builds, read from the wheels), added only where the build is known
    and has the field."""
    from kvir.rules.builds import TABLE, version_key

    version = next((v for p, v, _ in launch.versions if p.removesuffix("-cpu") == launch.engine), None)
    if launch.engine != "sglang" or version is None or version_key(version) is None:
        return []
    given = {t.split("=")[0].lstrip("-").replace("-", "_") for t in launch.argv if t.startswith("--")}
    out: list[str] = []
    for name in ("kv_canary", "disaggregation_enable_kv_checksum", "disaggregation_mode"):
        f = TABLE.fields[name]
        if name in given or version_key(version) < version_key(f.first):
            continue
        out += [f"--{name.replace('_', '-')}", str(f.values["default"]).lower()]
    return out


def _quote(token: str) -> str:
    return token if re.fullmatch(r"[\w@%+=:,./-]+", token) else "'" + token.replace("'", "'\"'\"'") + "'"


def preflight(paths: list[str | Path], argv: list[str] | None = None, *, incident=None) -> PreflightResult:
    """Check a deployment before it serves (see kvir.preflight). `argv`: a launch command given as arguments;
    `incident`: a spec (or its path) whose mechanism's section the rules are judged with (e.g. its isolation:
    what the gateway does with cache_salt)."""
    launches, logs, reqs, files = classify(paths) if paths else ([], [], [], [])
    if argv:
        launches.append(from_argv(argv))
    if not launches and not logs:
        raise InputError("nothing to check: give deployment files (command line, Kubernetes/Helm/compose YAML, "
                         "start-up logs, /get_server_info or /v1/models JSON) or a launch command after --")
    _unique(launches, set())
    with tempfile.TemporaryDirectory(prefix="kvir-preflight-") as tmp:
        excerpts = {}
        for launch in launches:
            path, origins = write_excerpt(launch, reqs, Path(tmp))
            excerpts[str(path)] = origins
        return _run([*excerpts, *map(str, logs)], excerpts, launches, files, incident)


def _run(paths: list[str], excerpts: dict[str, list[Origin]], launches: list[Launch], files: list[Path],
         incident) -> PreflightResult:
    from kvir.audit import _mechanism
    from kvir.audit.core import run_audit
    from kvir.case.store import connect
    from kvir.core.sql import QueryLog
    from kvir.preflight.transfer_rules import RULES as TRANSFER_RULES, annotate, findings

    con = connect(":memory:")
    log = QueryLog()
    try:
        run_audit(con, paths, inventory=None, source_tz=None, year=None, log=log, every_mechanism=True,
                  **_mechanism(None, incident))
        con.executemany("INSERT INTO audit_rules VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(r.rule_id, r.name, r.title, r.severity, r.fix, r.help, r.mechanism)
                         for r in TRANSFER_RULES])
        annotate(con, log)
        findings(con, log)
        nc = con.execute("SELECT * FROM node_configs ORDER BY node, config_id").df()
        f = con.execute("SELECT * FROM findings ORDER BY severity_rank DESC, status, rule_id, node").df()
    finally:
        con.close()
    for frame in (nc, f):
        _remap_text(frame, excerpts)
        _remap(frame, excerpts)
    inputs = [{"path": str(p), "size_bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in files]
    return PreflightResult(nc, f, inputs, [x.name for x in launches])


_LINE = re.compile(r"\bline (\d+)\b(?: of [\w.-]+\.log\b)?")


def _remap_text(frame, excerpts: dict[str, list[Origin]]) -> None:
    """`line N` in the text columns of rows about an excerpt -> the line (and file) of the deployment that set it.
    One row per node start or finding: a handful, never per log line."""
    if not len(frame):
        return
    cols = [c for c in frame.columns if c not in ("evidence_file", "node")
            and any(isinstance(v, str) and "line " in v for v in frame[c])]
    rows = frame["evidence_file"].map(lambda f: excerpts.get(str(f)))
    for c in cols:
        frame[c] = [_sub(v, origins) if origins and isinstance(v, str) else v for v, origins in zip(frame[c], rows)]


def _sub(text: str, origins: list[Origin]) -> str:
    home = origins[-1].file

    def one(m: re.Match) -> str:
        n = int(m.group(1))
        if not 1 <= n <= len(origins):
            return m.group(0)
        o = origins[n - 1]
        return f"line {o.line}" if o.file == home else f"line {o.line} of {Path(o.file).name}"
    return _LINE.sub(one, text)


def _remap(frame, excerpts: dict[str, list[Origin]]) -> None:
    """evidence_file / evidence_line of rows about an excerpt -> the deployment file and line that set it."""
    if not len(frame):
        return
    files, lines = [], []
    for file, line in zip(frame["evidence_file"], frame["evidence_line"]):
        origins = excerpts.get(str(file))
        if origins is None or line is None or line != line:
            files.append(file if origins is None else (origins[-1].file if origins else file))
            lines.append(line if origins is None else (origins[-1].line if origins else line))
            continue
        o = origins[min(max(int(line), 1), len(origins)) - 1]
        files.append(o.file)
        lines.append(o.line)
    frame["evidence_file"] = files
    frame["evidence_line"] = lines
