"""Property test: mutated lines of every format never crash the ingest, and every file is fully accounted for.

Each example takes the fixture of every line-oriented format, mutates it (truncated lines, invalid UTF-8,
over-long lines, values of the wrong type, missing keys, shuffled order, blank lines, CRLF endings,
duplicates), sometimes compresses it (gzip or zstd), and ingests all of them into one case. For every
file: read = parsed + quarantined; for line-oriented files every line is one record (OTel lines may hold
several spans: at least one each).
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kvir.case.store import Case
from kvir.ingest.inputs import why_skipped
from kvir.ingest.readers import shape_of
from kvir.ingest.run import IngestOptions, ingest, plan_sources
from kvir.spec.model import parse_spec

from .expected import FIXTURES

MAX_LINE = 2048
# format -> a fixture whose lines are records (documents excluded: their records are not lines)
LINE_FIXTURES = {
    "sglang-json": "sglang_json/decode-0.jsonl",
    "sglang-text": "sglang_text/server.log",
    "sglang-metrics": "sglang_metrics/decode-1/sglang-request-metrics-20260826_19.log",
    "sglang-router": "sglang_router/router.log",
    "vllm": "vllm/api_server.log",
    "cloudflare-logpush": "cloudflare_logpush/ai_gateway_events.log",
    "openai-response": "openai_response/responses.jsonl",
    "langfuse": "langfuse/observations.jsonl",
    "helicone": "helicone/export.jsonl",
    "otel-genai": "otel/traces.jsonl",
    "envoy": "envoy/access.log",
    "nginx": "nginx/access.json",
    "prometheus": "prometheus/decode-0.prom",
    "litellm": "litellm/LiteLLM_SpendLogs.csv",
}
SPEC = parse_spec({"incident": {"id": "FUZZ", "title": "fuzz", "models": ["zai-org/GLM-5.3"],
                                "window_start": "2026-08-27T00:00:00Z", "window_end": "2026-09-09T19:40:00Z"},
                   "trigger": {"pool_tokens": 681280, "context_tokens": 1048576}})
WRONG = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.text(max_size=30), st.none(),
                  st.booleans(), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value=None, delete=False):
    for p in path[:-1]:
        obj = obj[p]
    if delete:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


@st.composite
def mutated(draw, lines: list[bytes]) -> list[bytes]:
    lines = list(lines)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["truncate", "bad_utf8", "huge", "wrong_type", "drop_key", "shuffle", "blank",
                                   "crlf", "duplicate", "garbage"]))
        if not lines:
            lines = [b""]
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        if op == "truncate":
            lines[i] = line[: draw(st.integers(0, max(len(line) - 1, 0)))]
        elif op == "bad_utf8":
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])) + line[at:]
        elif op == "huge":
            lines[i] = line + b"x" * (MAX_LINE + draw(st.integers(1, 3 * MAX_LINE)))
        elif op == "shuffle":
            random.Random(draw(st.integers(0, 2**32))).shuffle(lines)
        elif op == "blank":
            lines.insert(i, draw(st.sampled_from([b"", b"   ", b"\t"])))
        elif op == "crlf":
            lines[i] = line + b"\r"
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "garbage":
            lines[i] = draw(st.binary(max_size=80)).replace(b"\n", b" ")
        else:
            try:
                obj = json.loads(line)
            except ValueError:
                lines[i] = bytes(c if not 48 <= c <= 57 else 120 for c in line)   # digits -> letters
                continue
            paths = list(_paths(obj))
            if not paths:
                continue
            path = draw(st.sampled_from(paths))
            if op == "drop_key":
                _set(obj, path, delete=True)
            else:
                _set(obj, path, draw(WRONG))
            lines[i] = json.dumps(obj, allow_nan=True).encode()
    return lines


def _fixture_lines(rel: str) -> list[bytes]:
    return (FIXTURES / rel).read_bytes().split(b"\n")[:-1]


# no shrinking: one example ingests 14 files into a fresh case, and shrinking that takes minutes; a failure
# prints its draws (and Hypothesis replays it from its database on the next run)
@pytest.mark.slow   # ~55 s: its own step in .ci/run (pytest -m slow)
@settings(max_examples=12, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_inputs_of_every_format_are_fully_accounted_for(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("fuzz")
    files: dict[str, tuple[Path, int]] = {}
    for fmt, rel in LINE_FIXTURES.items():
        lines = data.draw(mutated(_fixture_lines(rel)), label=fmt)
        body = b"\n".join(lines) + (b"\n" if lines and data.draw(st.booleans(), label="newline") else b"")
        n_lines = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
        codec = data.draw(st.sampled_from(["", "gzip", "zstd"]), label="codec")
        name = Path(rel).name + {"": "", "gzip": ".gz", "zstd": ".zst"}[codec]
        p = root / fmt / name
        p.parent.mkdir(parents=True)
        p.write_bytes(gzip.compress(body) if codec == "gzip" else
                      zstandard.ZstdCompressor().compress(body) if codec == "zstd" else body)
        files[fmt] = (p, n_lines)
    sources = []
    for fmt, (p, _) in list(files.items()):
        reason, _ = why_skipped(p)
        if reason is not None:
            # set aside with its reason, never silently: only an empty file, or a plain file whose first
            # bytes happen to be a compression magic number (a "garbage" line can draw exactly that)
            raw = p.read_bytes()
            assert (reason.startswith("empty file") and raw == b"") or \
                (reason.startswith("cannot decompress") and raw[:2] in (b"\x1f\x8b", b"\x28\xb5")), (fmt, reason)
            del files[fmt]
            continue
        opts = IngestOptions(format=fmt, source_tz="UTC", hash="none", max_line_bytes=MAX_LINE)
        for s in plan_sources([p], SPEC, opts):
            s.source_id = len(sources) + 1
            sources.append(s)
    case = Case.create(root / "case")
    try:
        ingest(case, sources, IngestOptions(source_tz="UTC", hash="none", max_line_bytes=MAX_LINE))
        params = {**SPEC.query_params(), **SPEC.params.query_params()}
        case.run("triage/hits", params, mechanism=SPEC.mech.folder)            # downstream of the merge, too
        counts = {r[0]: r[1:] for r in case.con.execute(
            "SELECT s.format, coalesce(sum(c.n), 0), coalesce(sum(c.n) FILTER (WHERE c.kind <> 'bad'), 0), "
            "coalesce(sum(c.n) FILTER (WHERE c.kind = 'bad'), 0) FROM sources AS s "
            "LEFT JOIN source_counts AS c USING (source_id) GROUP BY s.format").fetchall()}
    finally:
        case.close()
    for fmt, (p, n_lines) in files.items():
        read, parsed, bad = counts[fmt]
        assert read == parsed + bad, fmt
        if fmt == "otel-genai":
            assert read >= n_lines, fmt
        elif fmt == "litellm" or shape_of(p) != "ndjson":
            assert read >= (1 if n_lines else 0), fmt      # a CSV header is no record; a document its records
        else:
            assert read == n_lines, (fmt, read, n_lines)
