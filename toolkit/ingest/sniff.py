"""Sniffing rules: given a file's name and first lines, how sure are we that it is format X (0-100).

Each rule looks at content first; the file name counts only where naming is the format's own
convention (SGLang's metrics export). A rule never raises: ingest treats an exception as "no match".
Scores: 95+ unmistakable, 85-94 content with the format's key fields, 60-84 weaker evidence,
5 = generic formats chosen by extension only (they need a column mapping anyway).
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Callable

Sniffer = Callable[[Path, list[str]], int]

_COMPRESSED = (".gz", ".zst", ".zstd")


def base_name(path: Path) -> str:
    """The file name without a compression suffix, lower-cased."""
    name = path.name.lower()
    for s in _COMPRESSED:
        if name.endswith(s):
            return name[: -len(s)]
    return name


def first_json(lines: list[str]) -> dict[str, Any] | None:
    """The first non-blank line as a JSON object, or None (not JSON, or not an object)."""
    for line in lines:
        s = line.strip()
        if not s:
            continue
        try:
            v = json.loads(s)
        except ValueError:
            return None
        return v if isinstance(v, dict) else None
    return None


def first_record(lines: list[str]) -> dict[str, Any] | None:
    """The first record of NDJSON, of a JSON document (array or an object holding an array of records),
    or of a CSV with a header (as a dict of its header names), for key-based rules."""
    v = first_json(lines)
    if v is not None:
        for key in ("result", "data", "logs", "items", "rows", "records", "observations", "requests"):
            inner = v.get(key)
            if isinstance(inner, list) and inner and isinstance(inner[0], dict):
                return inner[0]
        return v
    text = "\n".join(lines[:400]).lstrip()
    if text.startswith("["):
        m = re.match(r"\[\s*(\{.*?\})\s*[,\]]", text, re.S)
        if m:
            try:
                r = json.loads(m.group(1))
                return r if isinstance(r, dict) else None
            except ValueError:
                pass
        return _first_object_of_pretty_array(text)
    if text.startswith("{"):
        return _record_of_pretty_document(text)
    return csv_header(lines)


def _record_of_pretty_document(text: str) -> dict[str, Any] | None:
    """A pretty-printed JSON object: the first record under a records key, or the object itself."""
    try:
        v = json.loads(text)
    except ValueError:
        v = None
    if isinstance(v, dict):
        return first_record([json.dumps(v)])
    m = re.search(r'"(?:result|data|logs|items|rows|records|observations|requests)"\s*:\s*\[\s*(?=\{)', text)
    if m:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[m.end():])
            return obj if isinstance(obj, dict) else None
        except ValueError:
            return None
    return None


def _first_object_of_pretty_array(text: str) -> dict[str, Any] | None:
    """A pretty-printed array: decode its first element with a raw decoder."""
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[text.index("{"):])
        return obj if isinstance(obj, dict) else None
    except ValueError:
        return None


def csv_header(lines: list[str]) -> dict[str, Any] | None:
    """{column: ''} for the first line of a comma-separated file with at least three columns."""
    first = next((x for x in lines if x.strip()), "")
    if first.count(",") < 2:
        return None
    try:
        cols = next(csv.reader(io.StringIO(first)))
    except (csv.Error, StopIteration):
        return None
    cols = [c.strip() for c in cols]
    if len(set(cols)) != len(cols) or not all(re.fullmatch(r"[A-Za-z_@][\w.@ -]*", c) for c in cols):
        return None
    return {c: "" for c in cols}


def has(rec: dict[str, Any] | None, *keys: str) -> bool:
    return rec is not None and all(k in rec for k in keys)


def has_any(rec: dict[str, Any] | None, *keys: str) -> bool:
    return rec is not None and any(k in rec for k in keys)


def count_matching(lines: list[str], pattern: re.Pattern[str]) -> int:
    return sum(1 for line in lines if pattern.search(line))


# ------------------------------------------------------------------------------------------------ SGLang

# SGLang's lines: the request log's handler writes `[YYYY-MM-DD HH:MM:SS] ` before each record from 0.5.12, the
# server `[YYYY-MM-DD HH:MM:SS[.mmm][ rank tags]] `; a container runtime may put its own stamp before that
_SGLANG_PREFIX = re.compile(r"^(?:\S+\s+(?:stdout|stderr)\s+[FP]\s+|\S+\s+)?\[\d{4}-\d{2}-\d{2}[ T][^\]]*\] ")
_SGLANG_TEXT_REQUEST = re.compile(r"(Finish|Receive): obj=")
_SGLANG_SERVER = re.compile(r"server_args=(ServerArgs\(|\{)|Input length \(\d+ tokens\) exceeds the maximum allowed length")


def _sglang_json_record(line: str) -> bool:
    s = line.strip()
    m = _SGLANG_PREFIX.match(s)
    if m and s[m.end():].startswith("{"):
        s = s[m.end():]
    if not s.startswith("{"):
        return False
    try:
        v = json.loads(s)
    except ValueError:
        return False
    return isinstance(v, dict) and str(v.get("event", "")).startswith("request.") and ("rid" in v or "obj" in v)


def _sglang_lines(path: Path, head: list[str]) -> list[str]:
    """The head, or, for a server's output whose first lines are start-up lines, its first MiB: the first
    request-log line of a server's stdout comes after hundreds of start-up lines."""
    if any(_sglang_json_record(x) or _SGLANG_TEXT_REQUEST.search(x) for x in head):
        return head
    if count_matching(head, _SGLANG_SERVER) or sum(bool(_SGLANG_PREFIX.match(x)) for x in head) * 2 > len(head):
        from kvir.ingest.lines import head_lines

        return head_lines(path, max_lines=20000, max_bytes=1 << 20)
    return head


def sglang_json(path: Path, head: list[str]) -> int:
    return 95 if any(_sglang_json_record(x) for x in _sglang_lines(path, head)) else 0


def sglang_text(path: Path, head: list[str]) -> int:
    lines = _sglang_lines(path, head)
    if count_matching(lines, _SGLANG_TEXT_REQUEST):
        return 90
    if any(_sglang_json_record(x) for x in lines):
        return 0
    return 60 if count_matching(lines, _SGLANG_SERVER) else 0


METRICS_NAME = re.compile(r"sglang-request-metrics-(\d{8})_(\d{2})\.log$")


def sglang_metrics(path: Path, head: list[str]) -> int:
    v = first_json(head)
    content = v is not None and "request_parameters" in v and ("prompt_tokens" in v or "id" in v)
    if METRICS_NAME.search(base_name(path)):
        return 98 if content or v is None and not any(x.strip() for x in head) else (60 if v is not None else 0)
    return 80 if content else 0


_ROUTER_TEXT = re.compile(r"\bhttp_request\{[^}]*\b(method|uri|request_id)=|\b(sglang_router_rs|smg)::\w+")


def sglang_router(path: Path, head: list[str]) -> int:
    v = first_json(head)
    if v is not None:
        target = str(v.get("target", ""))
        span = v.get("span") if isinstance(v.get("span"), dict) else {}
        if target.startswith(("sglang_router_rs", "smg")) or span.get("name") == "http_request":
            return 92
        return 0
    return 92 if count_matching(head, _ROUTER_TEXT) else 0


# --------------------------------------------------------------------------------------------------- vLLM

_VLLM_LINE = re.compile(r"^(?:\([\w-]+ pid=\d+\) )?(?:INFO|WARNING|DEBUG|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}[ .]")
_VLLM_REQ = re.compile(r"\b(Received request|Generated response|Aborted request) \S+")


def vllm(path: Path, head: list[str]) -> int:
    lines = count_matching(head, _VLLM_LINE)
    if not lines:
        return 0
    return 90 if count_matching(head, _VLLM_REQ) or lines >= 3 else 70


# ------------------------------------------------------------------------------------------ gateways etc.

def cloudflare_gateway(path: Path, head: list[str]) -> int:
    # a REST page: {"result": [...]}, compact or pretty-printed (`curl | jq .`: the SDK's field order puts
    # created_at after id and cached, past the first lines)
    text = "\n".join(head[:40]).lstrip()
    if text.startswith("{") and '"result"' in text[:4000] and '"tokens_in"' in text and '"created_at"' in text:
        return 90
    v = first_json(head)
    if v and "tokens_in" in v and "created_at" in v:
        return 85
    return 0


def cloudflare_logpush(path: Path, head: list[str]) -> int:
    v = first_json(head)
    if has(v, "Timestamp") and has_any(v, "Gateway", "StatusCode", "Provider", "Model", "RequestedModel", "Endpoint"):
        return 90
    return 0


def litellm(path: Path, head: list[str]) -> int:
    r = first_record(head)
    if has(r, "request_id", "startTime") and has_any(r, "spend", "model_group", "api_key", "end_user", "call_type"):
        return 90
    return 0


def openai_response(path: Path, head: list[str]) -> int:
    v = first_json(head)
    if v is None:
        return 0
    obj = str(v.get("object", ""))
    if obj in ("chat.completion", "text_completion", "chat.completion.chunk", "response") and "id" in v:
        return 88
    if "choices" in v and "usage" in v and "created" in v:
        return 80
    return 0


def langfuse(path: Path, head: list[str]) -> int:
    r = first_record(head)
    if has_any(r, "trace_id", "traceId") and has_any(r, "start_time", "startTime") and \
            has_any(r, "usage_details", "usageDetails", "provided_model_name", "providedModelName", "type", "usage"):
        return 88
    return 0


def helicone(path: Path, head: list[str]) -> int:
    r = first_record(head)
    if has(r, "request_id", "request_created_at") and has_any(r, "response_status", "prompt_tokens", "request_model"):
        return 90
    return 0


def otel(path: Path, head: list[str]) -> int:
    text = "\n".join(head[:200])
    if '"resourceSpans"' in text and ('"scopeSpans"' in text or '"instrumentationLibrarySpans"' in text):
        return 92
    return 0


def mlflow_traces(path: Path, head: list[str]) -> int:
    """MLflow's Trace.to_json(): {"info": {"trace_id": ...}, "data": {"spans": [...]}} (one per line, or an array)."""
    r = first_record(head)
    info, data = (r or {}).get("info"), (r or {}).get("data")
    if isinstance(info, dict) and isinstance(data, dict) and "spans" in data and \
            has_any(info, "trace_id", "request_id", "trace_metadata"):
        return 93
    return 0


def envoy(path: Path, head: list[str]) -> int:
    v = first_json(head)
    if v is None:
        return 0
    if has_any(v, "gen_ai.usage.input_tokens", "llm_input_token") and has_any(v, "start_time", "response_code"):
        return 90
    if has(v, "start_time") and has_any(v, "response_code", "response_flags", "upstream_host", "upstream_cluster"):
        return 85
    return 0


def nginx(path: Path, head: list[str]) -> int:
    v = first_json(head)
    if has_any(v, "time_iso8601", "msec", "time_local") and has_any(v, "status", "request_uri", "upstream_status",
                                                                    "request", "uri"):
        return 85
    return 0


_COMBINED = re.compile(r'^\S+ \S+ \S+ \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "[A-Z]+ \S+[^"]*" \d{3} ')


def nginx_combined(path: Path, head: list[str]) -> int:
    return 85 if count_matching(head, _COMBINED) else 0


def haproxy_json(path: Path, head: list[str]) -> int:
    """A JSON log-format with HAProxy's variable names (termination_state is HAProxy's own)."""
    v = first_json(head)
    if has(v, "termination_state") and has_any(v, "status_code", "Ta", "unique_id"):
        return 86
    return 0


# option httplog: "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B ...", after an optional syslog header
_HAPROXY_HTTP = re.compile(r"(?:^|\]: |\s)\S+:\d+ \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d+)?\] \S+ \S+/\S+ "
                           r"-?\d+/-?\d+/-?\d+/-?\d+/\+?-?\d+ -?\d+ ")


def haproxy_http(path: Path, head: list[str]) -> int:
    return 90 if count_matching(head, _HAPROXY_HTTP) else 0


def caddy(path: Path, head: list[str]) -> int:
    v = first_json(head)
    if v is not None and str(v.get("logger", "")).startswith("http.log.access") and isinstance(v.get("request"), dict):
        return 95
    if v is not None and "logger" in v and any('"logger":"http.log.access' in x for x in head):
        return 90            # Caddy's own lines first, then its access records
    return 0


_PROM_SAMPLE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})?\s+[-+0-9.eEInfa]+(\s+-?\d+)?\s*$")
_PROM_META = re.compile(r"^# (HELP|TYPE|EOF|UNIT)\b")


def prometheus(path: Path, head: list[str]) -> int:
    meta = count_matching(head, _PROM_META)
    samples = count_matching(head, _PROM_SAMPLE)
    if not samples:
        return 0
    if meta and any("_bucket{" in line for line in head):
        return 90
    return 75 if meta else 0


def by_suffix(suffixes: tuple[str, ...]) -> Sniffer:
    """Generic formats are chosen only when a column mapping is given; sniffing ranks them last."""
    def sniff(path: Path, head: list[str]) -> int:
        return 5 if base_name(path).endswith(suffixes) else 0
    return sniff
