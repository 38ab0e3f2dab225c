"""MLflow's traces (issue 36 item 9): the OpenAI autolog of mlflow-skinny 3.18 around the openai client calling a
real vLLM-CPU server (tests/fixtures/generate/gateways/otel_instrumentations.py, producer mlflow), exported as
mlflow.search_traces(return_type="list") gives them (one Trace.to_json() per line). The caller and session are
in each trace's metadata (mlflow.trace.user), set by the application's handler span. The same six calls as the
OTel instrumentations: chat cust_a (20 prompt tokens), two chats with one long prefix (cust_b, cust_c: 942; vLLM's
prefix cache served 896 of the second), a completion cust_a (MLflow records no usage for the legacy completions
API: an LLM span without tokenUsage), a stream cust_b (21), a prompt over the context cust_c (HTTP 400: the span's
status ERROR and its exception event). Values read from the file by eye."""
from __future__ import annotations

import kvir

from .fixture_index import GENERATED
from .test_otel_instrumentations import SPEC

TRACES = GENERATED / "mlflow-traces" / "autolog" / "traces.jsonl"


def test_mlflow_traces_are_read_as_the_autolog_writes_them(tmp_path):
    spec = tmp_path / "incident.toml"
    spec.write_text(SPEC)
    r = kvir.triage(spec, [TRACES], out=tmp_path / "case", hash="none")
    s = r.sources[0]
    assert s["format"] == "mlflow-traces"                                  # sniffed
    # 6 traces, 12 spans: each trace's handler span (type UNKNOWN) counted, its model call a request
    assert (s["read"], s["requests"], s["skipped"], s["quarantined"]) == (12, 6, 6, 0)
    got = r.case.con.execute("SELECT account_id, prompt_tokens, cached_tokens, outcome FROM requests ORDER BY ts").fetchall()
    assert got == [("cust_a", 20, 0, "served"), ("cust_b", 942, 0, "served"), ("cust_c", 942, 896, "served"),
                   ("cust_a", None, None, "served"), ("cust_b", 21, 0, "served"), ("cust_c", None, None, "rejected")]
    ids = [x[0] for x in r.case.con.execute("SELECT request_id FROM requests WHERE outcome = 'served' ORDER BY ts").fetchall()]
    assert all(i.startswith(("chatcmpl-", "cmpl-")) for i in ids)        # vLLM's own ids, from the span's outputs
    assert r.summary["affected"] == 2 and r.summary["rejected"] == 1      # pool 900 < 942
