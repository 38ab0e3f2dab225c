"""kvir probe's verdicts as Prometheus metrics in the text exposition format, for node_exporter's textfile
collector (`kvir probe --metrics /var/lib/node_exporter/textfile_collector/kvir_probe.prom` from a scheduled job):
the alert rules kvir detect writes (KvirProbeExposed, KvirProbeInconclusive, KvirProbeStale) read them.

    kvir_probe_verdict{endpoint, verdict}                 1 for the run's overall verdict, 0 for the others
    kvir_probe_check_verdict{endpoint, check, verdict}     the same per check that ran
    kvir_probe_findings{endpoint, severity}                findings of the run per severity
    kvir_probe_requests_sent{endpoint}                     HTTP attempts of the run
    kvir_probe_last_run_timestamp_seconds{endpoint}        when the run ended (Unix time)
    kvir_probe_last_run_duration_seconds{endpoint}

The file is written atomically (a temporary file in the same folder, flushed, renamed over the old one), as the
textfile collector requires: it never reads a half-written file. The endpoint label is the base URL without
credentials, query or fragment; no key, prompt or response is ever in it.
"""
from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from kvir.probe.rules import EXPOSED, INCONCLUSIVE, NOT_EXPOSED

VERDICTS = (EXPOSED, NOT_EXPOSED, INCONCLUSIVE)
SEVERITIES = ("critical", "high", "medium", "low")


def endpoint_label(url: str) -> str:
    p = urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return urlunsplit((p.scheme, host, p.path.rstrip("/"), "", ""))


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kv: str) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kv.items()) + "}"


def _when(iso: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def to_text(result) -> str:
    """The run's metrics in the text exposition format (HELP and TYPE before each family)."""
    ep = endpoint_label(str(result.options.get("endpoint", "")))
    out: list[str] = []

    def family(name: str, kind: str, help_: str, samples: list[tuple[str, float]]) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(f"{name}{labels} {value:g}" for labels, value in samples)

    family("kvir_probe_verdict", "gauge", "kvir probe's overall verdict of its last run (1: this verdict).",
           [(_labels(endpoint=ep, verdict=v), float(result.verdict == v)) for v in VERDICTS])
    family("kvir_probe_check_verdict", "gauge", "Each check's verdict in kvir probe's last run (1: this verdict).",
           [(_labels(endpoint=ep, check=c.name, verdict=v), float(c.verdict == v))
            for c in result.checks for v in VERDICTS])
    family("kvir_probe_findings", "gauge", "Findings of kvir probe's last run, per severity.",
           [(_labels(endpoint=ep, severity=s), float(sum(f.severity == s for f in result.findings)))
            for s in SEVERITIES])
    family("kvir_probe_requests_sent", "gauge", "HTTP attempts of kvir probe's last run.",
           [(_labels(endpoint=ep), float(result.sent))])
    ended = _when(result.ended_at)
    if ended is not None:
        family("kvir_probe_last_run_timestamp_seconds", "gauge", "When kvir probe's last run ended (Unix time).",
               [(_labels(endpoint=ep), ended)])
    family("kvir_probe_last_run_duration_seconds", "gauge", "How long kvir probe's last run took.",
           [(_labels(endpoint=ep), float(round(result.wall_s, 3)))])
    return "\n".join(out) + "\n"


def write_metrics(result, path: str | Path) -> Path:
    """Write to_text(result) to `path` atomically (same folder, fsync, rename)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(to_text(result))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
