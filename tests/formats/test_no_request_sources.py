"""A source that yields no request is named, never a silent 0 (issue 36 item 9): an export is an error naming the
file, a text log a note.

On main, OpenInference's spans were all counted as "span without gen_ai attributes" (in sources.csv only) and
triage exited 0 with 0 requests. Every input whose records are all counted as something else is now named in
one error (exit 2), with what its records were; a file with quarantined records is not (the quarantine names
each), nor a Prometheus scrape (an aggregate: never requests)."""
from __future__ import annotations

import json

import pytest

import kvir
from kvir.core.errors import InputError

from ..conftest import spec_text, write
from .fixture_index import GENERATED

OPENLIT = GENERATED / "otel-genai" / "instrumentations" / "openlit.otlp.jsonl"
STARTUP = GENERATED / "real" / "vllm-releases" / "0.32.0" / "startup.log"


def _http_spans_only(tmp_path):
    """OpenLIT's own export with only its httpx client spans kept (no GenAI attribute on any of them)."""
    out = []
    for line in OPENLIT.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss["spans"] = [sp for sp in ss["spans"]
                               if not any(a["key"].startswith("gen_ai.") for a in sp["attributes"])]
        if any(ss["spans"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]):
            out.append(json.dumps(doc))
    assert len(out) == 6
    return write(tmp_path / "http-spans.otlp.jsonl", "\n".join(out) + "\n")


def test_spans_none_of_which_is_a_model_call_are_refused_by_name(tmp_path):
    spans = _http_spans_only(tmp_path)
    spec = write(tmp_path / "incident.toml", spec_text())
    with pytest.raises(InputError) as e:
        kvir.triage(spec, [spans], out=tmp_path / "case", hash="none")
    msg = str(e.value)
    assert str(spans) in msg and "yields no request as otel-genai" in msg
    assert "6 span without gen_ai attributes" in msg and "all 6 records" in msg


def test_every_such_file_is_named_in_one_error(tmp_path):
    spans = _http_spans_only(tmp_path).read_text().splitlines()
    one, two = (write(tmp_path / f"{n}.otlp.jsonl", "\n".join(part) + "\n") for n, part in
                (("first", spans[:3]), ("second", spans[3:])))
    spec = write(tmp_path / "incident.toml", spec_text())
    with pytest.raises(InputError) as e:
        kvir.triage(spec, [one, two], out=tmp_path / "case", hash="none")
    msg = str(e.value)
    assert msg.startswith("2 inputs cannot be read as they are") and str(one) in msg and str(two) in msg


def test_a_server_log_without_request_lines_says_so(tmp_path):
    """A text log may rightly hold no request (request logging off, start-up lines only): a note on its source,
    with what its lines were, instead of an error; beside a source with requests the triage goes on."""
    # a real vLLM server's start-up lines, without its one (warm-up) request
    lines = [x for x in STARTUP.read_text().splitlines()
             if not any(k in x for k in ("Received request", "Generated response", "JSON body", " details: "))]
    startup = write(tmp_path / "vllm-startup.log", "\n".join(lines) + "\n")
    good = GENERATED / "otel-genai" / "instrumentations" / "traceloop.otlp.jsonl"
    spec = write(tmp_path / "incident.toml", spec_text())
    r = kvir.triage(spec, [startup, good], out=tmp_path / "case", hash="none", source_tz="UTC",
                    served_model="zai-org/GLM-5.3")
    by = {s["label"]: s for s in r.sources}
    assert by[str(startup)]["requests"] == 0
    notes = by[str(startup)]["notes"]
    assert any(n.startswith("holds no request as vllm: all ") and "other log line" in n for n in notes), notes


def test_a_file_with_requests_beside_it_is_not_enough_to_hide_it(tmp_path):
    """The refusal is per file: a folder's other file with requests does not make this one's 0 true."""
    spans = _http_spans_only(tmp_path)
    good = GENERATED / "otel-genai" / "instrumentations" / "traceloop.otlp.jsonl"
    spec = write(tmp_path / "incident.toml", spec_text())
    with pytest.raises(InputError, match="http-spans.otlp.jsonl: yields no request"):
        kvir.triage(spec, [spans, good], out=tmp_path / "case", hash="none")


def test_quarantined_records_are_reported_not_refused(tmp_path):
    bad = write(tmp_path / "broken.otlp.jsonl", '{"resourceSpans": [\n')
    good = GENERATED / "otel-genai" / "instrumentations" / "traceloop.otlp.jsonl"
    spec = write(tmp_path / "incident.toml", spec_text())
    r = kvir.triage(spec, [bad, good], out=tmp_path / "case", hash="none", format="otel-genai")
    by = {s["label"]: s for s in r.sources}
    assert (by[str(bad)]["requests"], by[str(bad)]["quarantined"]) == (0, 1)
