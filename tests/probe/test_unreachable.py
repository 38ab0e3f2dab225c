"""`kvir probe` against an endpoint that does not answer (issue 24): it says what failed first (connection
refused, DNS, TLS, a timeout, an HTTP status on every request), then the verdict, inconclusive; where not
even a connection was made, the other discovery routes and the checks are not tried."""
from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading

import pytest
from typer.testing import CliRunner

from kvir.cli.app import app
from kvir.core.progress import stderr
from kvir.probe.run import probe

from .conftest import AppThread
from .fakes import fake_app

runner = CliRunner()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Silent:
    """A TCP server on loopback that accepts connections and never answers (a hung upstream); with a
    certificate, one that completes TLS handshakes with it."""

    def __init__(self, context: ssl.SSLContext | None = None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.context, self.conns, self.stop = context, [], False
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def _accept(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                if self.context is not None:
                    conn = self.context.wrap_socket(conn, server_side=True)
            except OSError:
                continue
            self.conns.append(conn)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        for c in self.conns:
            c.close()
        self.sock.close()


def run(endpoint: str, **kw):
    return probe(endpoint, "m", timeout_s=kw.pop("timeout_s", 2.0), retries=kw.pop("retries", 0), **kw)


def test_connection_refused_is_said_first_and_nothing_else_is_sent():
    r = run(f"http://127.0.0.1:{free_port()}")
    assert r.verdict == "inconclusive" and r.exit_code == 3
    assert r.failed_first == "no HTTP answer: connection refused, on GET /get_server_info"
    assert r.reason.startswith(r.failed_first) and r.reason.endswith("nothing was checked")
    assert r.sent == 1                                         # the first GET, then nothing: all would fail alike
    assert [c.reason for c in r.checks] == ["not run: the endpoint gave no HTTP answer"] * 2
    assert r.as_json()["failed_first"] == r.failed_first


def test_a_name_that_does_not_resolve_is_a_dns_failure():
    r = run("http://kvir-probe-test.invalid")                 # RFC 6761: .invalid never resolves
    assert r.failed_first.startswith("no HTTP answer: DNS: the host name does not resolve"), r.failed_first
    assert r.sent == 1


def test_plain_http_on_an_https_url_is_a_tls_failure():
    with AppThread(fake_app("ok")) as srv:
        r = run(srv.url.replace("http://", "https://"))
    assert r.failed_first.startswith("no HTTP answer: TLS: the handshake failed"), r.failed_first
    assert "plain HTTP on an https:// URL?" in r.failed_first


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl (the CLI) makes the self-signed certificate")
def test_an_untrusted_certificate_is_a_tls_failure(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with Silent(ctx) as srv:
        r = run(f"https://127.0.0.1:{srv.port}")
    assert r.failed_first.startswith("no HTTP answer: TLS: the server's certificate is not trusted"), r.failed_first


def test_a_server_that_never_answers_is_a_timeout():
    with Silent() as srv:
        r = run(f"http://127.0.0.1:{srv.port}", timeout_s=0.3)
    assert r.failed_first == "no HTTP answer: timeout: connected, but no answer within 0.3 s, on GET /get_server_info"
    assert r.sent == 4                       # connected: each discovery route is tried (a gateway may drop only some)


def test_an_http_status_on_every_request_is_said_first():
    with AppThread(fake_app("ok", require=("authorization", "Bearer right"))) as srv:
        r = run(srv.url, context=8192, pool=4096, engine="sglang", checks=("length",))
    assert r.failed_first.startswith(f"no request was served: HTTP 401 on {r.sent} of {r.sent} requests"), r.failed_first
    assert r.failed_first.endswith("the API key was refused: check --api-key-env, --tenant-b-key-env, --header-env")
    assert r.verdict == "inconclusive" and r.reason.startswith(r.failed_first)


def test_the_terminal_says_what_failed_before_the_verdict(monkeypatch):
    monkeypatch.setattr(stderr, "_width", 80)
    res = runner.invoke(app, ["probe", "-e", f"http://127.0.0.1:{free_port()}", "--retries", "0"])
    assert res.exit_code == 3, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    first = next(i for i, line in enumerate(lines) if "connection refused" in line)
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict: inconclusive"))
    assert first < verdict and lines[first].startswith("endpoint http://127.0.0.1:")
    assert "None" not in res.stderr and "engine unknown ," not in res.stderr      # issue 24's line
    assert all(len(line) <= 80 for line in lines)
