"""The two commands as a responder runs them, each its own process: `kvir serve` on loopback, then
`kvir probe` against it. Slow (two Python processes import torch / start uvicorn): .ci/run's second step."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .vllm_server import free_port

KVIR = str(Path(sys.executable).with_name("kvir"))


@pytest.mark.slow
@pytest.mark.parametrize("build, verdict, code", [("0.5.19", "exposed", 1), ("0.5.21", "not exposed", 0)])
def test_serve_then_probe_on_the_command_line(build, verdict, code, tmp_path):
    port = free_port()
    env = {**os.environ, "KEY_A": "cli-key-a", "KEY_B": "cli-key-b"}
    log = open(tmp_path / "serve.log", "wb")
    srv = subprocess.Popen([KVIR, "serve", "--build", build, "--pool", "4096", "--context", "8192", "--port", str(port),
                            "--tenant", "alice=KEY_A", "--tenant", "bob=KEY_B"], stdout=log, stderr=subprocess.STDOUT,
                           env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert srv.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "kvir serve did not come up"
            time.sleep(0.3)
        p = subprocess.run([KVIR, "probe", "--endpoint", f"http://127.0.0.1:{port}/v1", "--api-key-env", "KEY_A",
                            "--tenant-b-key-env", "KEY_B", "--json", "--sarif", str(tmp_path / "out.sarif")],
                           capture_output=True, text=True, env=env, timeout=300)
    finally:
        os.killpg(srv.pid, signal.SIGTERM)
        srv.wait(timeout=30)
        log.close()
    assert p.returncode == code, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    assert doc["verdict"] == verdict and doc["server"]["version"].startswith(build)
    assert "cli-key-a" not in p.stdout + p.stderr and "probe requests" in p.stderr      # the progress bar
    served = (tmp_path / "serve.log").read_text()
    if verdict == "exposed":
        assert "tenant=bob" in served and "read_from={'alice':" in served      # the server's ledger agrees
    else:
        assert "read_from={'alice':" not in served
